/**
 * Supervision's public surface (docs/architecture.md, "Floors"): a live session's harness looked
 * after — restarted with its conversation resumed, with backoff, or failed to start once its
 * restarts are spent (docs/fleet.md#supervision). The dispatcher runs each look in its item's queue.
 */
export { FAILED_TO_START, SUPERVISE_CHECK_MS, superviseSession, watchSessions } from "./supervise.js";
export type { SuperviseContext, SupervisionOutcome } from "./supervise.js";
export { lookEvery } from "./looks.js";
