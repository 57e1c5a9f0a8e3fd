/**
 * The graph driver's public surface (docs/architecture.md, "Floors"): what carries a run's moves
 * out against sessions, trackers and hooks. Importers name the module itself.
 */
export { CAPABILITY_HOOK_TIMEOUT_MS } from "./capability-points.js";
export { watchForStalls } from "./run-ends.js";
export type { ClaimAnswer } from "./start-claim-force.js";
export type { ClaimRequest, ForceRequest } from "./start-claim-force.js";
export { cancelRunOfClosedItem, cancelRunOfStoppedItem, endStalledRun, stalledRuns } from "./run-ends.js";
export { deliverPendingAssignment, journalledMoves, resumeJournalledEffects } from "./carry-out.js";
export { drainLoopEvents } from "./loop-events.js";
export { graphAtStart, graphClaim, graphForce } from "./start-claim-force.js";
export { graphGate, releaseHeldAnswers } from "./gate-answers.js";
export { graphOperatorAnswer } from "./operator-answer.js";
export type { OperatorAnswerRequest } from "./operator-answer.js";
export { RUN_ENDED_CLOSE, closeEndedRunSession, endedRunSessions, tellBlocked, tellRunEnded } from "./run-end-session.js";
export { releaseHeldRun, releaseHeldRuns, roomPort, runsHeldAtEdges } from "./node-room.js";
