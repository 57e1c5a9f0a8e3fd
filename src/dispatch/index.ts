/**
 * The dispatcher's public surface (docs/architecture.md, "Floors"). Importers name the module
 * itself; this file is the list the layering rule reads.
 */
export { Dispatcher } from "./dispatcher.js";
export type { Takeover, TurnIntent } from "./dispatcher.js";
export { applyLink } from "./pr-linkage.js";
export { watchStartQueue } from "./dequeue.js";
export { announceControl } from "./announce-control.js";
export type { AnnounceDeps, ControlCommentResult } from "./announce-control.js";
export { watchBudgets } from "./budget-watch.js";
