/**
 * A graph run's public surface: its state and store, and the pure moves over it (advance, gate,
 * outcomes), as other folders may import them (docs/architecture.md, "Floors").
 * Importers name the module itself; this file is the list the layering rule reads.
 */
export { applyClaimResult, applyGateAnswer, blockRun, decideClaim, forceTo, recordRefusal, startRun } from "./advance.js";
export type { GateDecision, GraphEffect, GraphEventEffect } from "./advance.js";
export { assignmentText, graphContext } from "./assignment.js";
export { checklistItems, firstArtifact, readChecklist, rootOf, runChecks } from "./checks.js";
export type { Root } from "./checks.js";
export { forceText, operatorAnswerText, phaseText, reviewRequestText } from "./comments.js";
export type { GateKeywords, OperatorVia } from "./comments.js";
export type { Refusal, Transition } from "./effects.js";
export { compileGateVocabulary, decideGateInput, gateAnswerOfReview, mergeGateAnswers, parseGateAnswer } from "./gate.js";
export type { GateVocabulary, ParsedGate } from "./gate.js";
export { HELD_ANSWERS_MAX, heldGateAnswersKind, openHeldGateAnswers } from "./held.js";
export type { HeldGateAnswer, HeldGateAnswerStore } from "./held.js";
export { DEFAULT_HOLD_MS, decideSelfCheck } from "./self-check.js";
export type { SelfCheck, SelfCheckInput } from "./self-check.js";
export { END_REASON_CODES, endRun, stallReason } from "./outcomes.js";
export type { EndInput } from "./outcomes.js";
export type { GraphState } from "./state.js";
export { graphStateKind, openGraphStates } from "./store.js";
export type { GraphStateStore } from "./store.js";
export type { HeldRetrySchedule } from "./held-retry.js";
export { DEFAULT_HELD_RETRY, HeldAnswerRetry } from "./held-retry.js";
export type { GraphEventName } from "./effects.js";
export { RUN_ENDING_BLOCKS, gateRefusal, runHasEnded } from "./advance.js";
export { graphStateSchema } from "./state.js";
export { blockedText, closeAfterField, closeAfterText, runEndedAt, runEndedText, sessionCloseDue } from "./session-notices.js";
export type { BlockWhat, CloseDueInput } from "./session-notices.js";
export { failRun, releaseHeld, renewRun } from "./advance.js";
export { UNLIMITED, hasNodeCaps, heldAhead, heldRuns, heldText, nodeKeys, occupancy, releaseOrder, roomFor, runsAt, unmatchedNodeCaps } from "./node-caps.js";
export type { FullNode, HeldRun, NodeCaps, NodeRoom, RunAt } from "./node-caps.js";
