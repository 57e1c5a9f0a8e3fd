/**
 * The process graph's public surface: what other folders may import (docs/architecture.md,
 * "Floors"). A module not named here is the graph's own. Importers name the module itself, so a
 * command loads only what it runs; this file is the list the layering rule reads.
 */
export { graphMermaid } from "./mermaid.js";
export { pointsAt } from "./points.js";
export type { PointMoment } from "./points.js";
export { loadGraphs } from "./registry.js";
export type { LoadedGraphs } from "./registry.js";
export { isFinalGraphStatus, LOOP_POINTS } from "./types.js";
export type { CheckResult, Graph, GraphActor, GraphCheck, GraphNode, LoopPoint } from "./types.js";
export type { FinalGraphStatus, GraphEdge, GraphOutcome, RunEndStatus } from "./types.js";
export { GRAPH_ACTOR_KINDS, GRAPH_OUTCOMES, GRAPH_STATUSES } from "./types.js";
export { FINAL_GRAPH_STATUSES } from "./types.js";
