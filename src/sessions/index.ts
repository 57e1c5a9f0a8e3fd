export { questionText } from "./announce.js";
export type { CloseOptions } from "./close.js";
export { Dispatcher } from "./dispatcher.js";
export { harnessPreparer } from "./harness-trust.js";
export { workItemEntityOfRef } from "./lifecycle.js";
export { applyLink } from "./linkage.js";
export { PullRequestLinks } from "./links.js";
export { loadPromptTemplates, unknownPlaceholders } from "./prompts.js";
export type { PromptTemplates } from "./prompts.js";
export { CLI_ENTRY, ensureSessionBin, envPatternMatches, passedEnvironment, sessionEnvironment } from "./session-env.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { CAPABILITY_HOOK_TIMEOUT_MS } from "./capability-points.js";
export { closeSession } from "./close.js";
export type { CapabilityRuntime, GraphSetup } from "./context.js";
export { watchForStalls } from "./graph-outcomes.js";
export type { ClaimAnswer } from "./graph-run.js";
export { QUESTION_MAX, postQuestion } from "./ask.js";
export type { AskAnswer } from "./ask.js";
export { SESSION_TOKEN_ENV, checkSessionCredential } from "./credential.js";
export type { CredentialedSession } from "./credential.js";
export { REASON_MAX, boundedName } from "./names.js";
