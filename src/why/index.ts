/**
 * `why`'s words, as pure functions over an item's records and events (docs/architecture.md,
 * "Floors"): the CLI's `the-loop why`, the MCP server's `why` tool and the dashboard's timeline
 * read the same verdict and the same sentence per event. Importers name the module itself.
 */
export { armingHow, authorizedList, describeEvent, isArmingLabel } from "./events.js";
export type { WhySettings } from "./events.js";
export { armedFromEvents, closedFromEvents, explainWhy } from "./explain.js";
export type { ControlView, DamagedRecord, GraphView, HeldAnswerView, SessionView, UsageView, WhySituation, WhyState, WhyVerdict } from "./explain.js";
