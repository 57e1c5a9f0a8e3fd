export { COMMENT_KINDS, EXCERPT_FIELD_MAX, EXCERPT_TOTAL_MAX, INBOUND_KINDS, boundExcerpt, deliveryKeys } from "./inbound.js";
export type { EventHandler, HandleResult, InboundEvent, InboundKind, InboundSource, ReviewState } from "./inbound.js";
export { failClosedWarning, isAuthorized } from "./authz.js";
export { DeliveryLru } from "./dedupe.js";
export { allowedHarnesses, chooseHarness } from "./harness-choice.js";
export type { HarnessChoice, HarnessRouting } from "./harness-choice.js";
export { armsSpawn, isArmed, policyOf, registryViewOf, route, standingState } from "./router.js";
export { DEFAULT_FEEDBACK, ciFailureKey, feedbackFor, isFailingConclusion, isFailingStatus } from "./feedback.js";
export type { RepositoryFeedback } from "./feedback.js";
export type { ControlView, Decision, DecisionAction, DeliveryMemory, DropReason, RegistryView, RoutingPolicy, SessionView } from "./router.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export type { InboundCheck, InboundPullRequest, LinkSource } from "./inbound.js";
export { admit, capText, capUsage, hasLimits, placeInQueue, repositoryKey, startable } from "./limits.js";
export type { Admission, CapUsage, FullCap, Limits, LiveSlot, QueuedStart } from "./limits.js";
export { BACKOFF_MAX_MS, STABLE_RUN_MS, backoffMs, exitText, failureText, planSupervision } from "./supervision.js";
export type { HarnessExit, SupervisionDecision, SupervisionFacts, SupervisionSettings } from "./supervision.js";
