export * from "./record.js";
export * from "./record-schema.js";
export * from "./registry.js";
export * from "./listing.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { listSessionRecords, listSessionSummaries } from "./listing.js";
export { workItemSchema } from "./record-schema.js";
export { ADOPTED_REASON, carriedFrom, isLive, RECENT_DELIVERIES_MAX, RegistryRecordError, sessionRecordKind, stateRootTag, tmuxTargetFor } from "./record.js";
export type { SessionClaimer, SessionRecord, SessionStatus, SessionWorkspace } from "./record.js";
export { SessionRegistry } from "./registry.js";
export type { ClaimResult } from "./registry.js";
export { PullRequestLinks } from "./pr-links.js";
export { workItemActedOn } from "./acted-on.js";
export type { LinkSource, PullRequestLink } from "./pr-links.js";
export { StartQueue, StartQueueError, startQueueFile } from "./start-queue.js";
export type { QueueEntry } from "./start-queue.js";
