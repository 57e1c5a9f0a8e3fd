export { CI_DELIVERED_MAX, CiAttemptStore, ciStep } from "./attempts.js";
export type { CiRecord, CiStep } from "./attempts.js";
export { ciDeliveryPort, ciLogPlan, ciVerdict, prepareCiFailure, pullRequestOf } from "./delivery.js";
export type { CiDelivery, CiDeliveryPort, CiDropReason, CiFailureInput, CiLogPlan, CiTurnEvents } from "./delivery.js";
export { jobLogTail, logPermission, resolveGitHubCheck } from "./github.js";
export type { CheckResolution } from "./github.js";
export { ciFailureMessage, ciGaveUpComment, cleanLogTail } from "./message.js";
export type { CiLog, CiMessageInput } from "./message.js";
