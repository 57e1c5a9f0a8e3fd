export { compileVocabulary, parseControl } from "./keywords.js";
export type { ControlVocabulary } from "./keywords.js";
export { controlStateOf, planControl, sessionStateOf, spawnHold } from "./plan.js";
export type { ControlAction, ControlSituation, SessionState, SpawnHold } from "./plan.js";
export { CONTROL_RECENT_DELIVERIES_MAX, ControlStore } from "./store.js";
export type { ControlListingProblem, ControlTransaction } from "./store.js";
export type { CommandEffect, ControlCommand, ControlOutcome, ControlRecord, ControlRequest, ControlSource, ControlState, PlanRejection } from "./types.js";
