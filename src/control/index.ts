export { compileVocabulary, parseControl } from "./keywords.js";
export type { ControlVocabulary } from "./keywords.js";
export { controlStateOf, planControl, sessionStateOf, spawnHold } from "./plan.js";
export type { ControlAction, ControlSituation, SessionState, SpawnHold } from "./plan.js";
export { CONTROL_RECENT_DELIVERIES_MAX, ControlStore } from "./store.js";
export type { ControlListingProblem, ControlTransaction } from "./store.js";
export type { CommandEffect, ControlCommand, ControlOutcome, ControlRecord, ControlRequest, ControlSource, ControlState, PlanRejection } from "./types.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { controlCommentText } from "./comment.js";
export { compileKeywordVocabulary, parseKeywords } from "./keywords.js";
export type { KeywordVocabulary } from "./keywords.js";
export { controlRecordKind } from "./store.js";
