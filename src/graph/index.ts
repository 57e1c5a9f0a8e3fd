/**
 * The process graph's public surface: what other folders may import (docs/architecture.md,
 * "Floors"). A module not named here is the graph's own. Importers name the module itself, so a
 * command loads only what it runs; this file is the list the layering rule reads.
 */
export { applyClaimResult, applyGateAnswer, blockRun, decideClaim, forceTo, recordRefusal, startRun } from "./advance.js";
export type { GateDecision, GraphEffect, GraphEventEffect } from "./advance.js";
export { assignmentText, graphContext } from "./assignment.js";
export { checklistItems, firstArtifact, readChecklist, rootOf, runChecks } from "./checks.js";
export type { Root } from "./checks.js";
export { forceText, phaseText, reviewRequestText } from "./comments.js";
export type { GateKeywords } from "./comments.js";
export type { Refusal, Transition } from "./effects.js";
export { compileGateVocabulary, decideGateInput, gateAnswerOfReview, mergeGateAnswers, parseGateAnswer } from "./gate.js";
export type { GateVocabulary, ParsedGate } from "./gate.js";
export { HELD_ANSWERS_MAX, heldGateAnswersKind, openHeldGateAnswers } from "./held.js";
export type { HeldGateAnswer, HeldGateAnswerStore } from "./held.js";
export { DEFAULT_HOLD_MS, decideSelfCheck } from "./self-check.js";
export type { SelfCheck, SelfCheckInput } from "./self-check.js";
export { loopPayload, nextLoopTimestamp } from "./loop-payload.js";
export type { LoopSession } from "./loop-payload.js";
export { deniedMove, HOOK_DENIED, planLoopMove, withPendingEffects } from "./loop-plan.js";
export type { LoopAsk, LoopDenialOf, LoopMoveInput, LoopMovePlan, LoopObservedName, RunEffect } from "./loop-plan.js";
export { graphMermaid } from "./mermaid.js";
export { END_REASON_CODES, endRun, stallReason } from "./outcomes.js";
export type { EndInput } from "./outcomes.js";
export { pointsAt } from "./points.js";
export type { PointMoment } from "./points.js";
export { loadGraphs } from "./registry.js";
export type { LoadedGraphs } from "./registry.js";
export type { GraphState } from "./state.js";
export { graphStateKind, openGraphStates } from "./store.js";
export type { GraphStateStore } from "./store.js";
export { isFinalGraphStatus, LOOP_POINTS } from "./types.js";
export type { CheckResult, Graph, GraphActor, GraphCheck, GraphNode, LoopPoint } from "./types.js";
