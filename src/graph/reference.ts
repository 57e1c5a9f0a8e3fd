import { BUILTIN_GRAPH_NAMES } from "../config/graph-schema.js";
import { graphMermaid } from "./mermaid.js";
import type { Graph } from "./types.js";

/**
 * The pictures of the shipped graphs in docs/graph.md, drawn from the files the package ships
 * so the documentation never shows a graph the loader would not run (a test compares the two).
 */

/** The name of the generated section in docs/graph.md (see src/docs/sections.ts). */
export const SHIPPED_GRAPHS_SECTION = "shipped graphs";

export function renderShippedGraphs(graphs: ReadonlyMap<string, Graph>): string {
  return BUILTIN_GRAPH_NAMES.map((name) => {
    const graph = graphs.get(name);
    if (!graph) throw new Error(`the built-in graph "${name}" did not load`);
    return [`### ${name}`, "", "```mermaid", graphMermaid(graph), "```"].join("\n");
  }).join("\n\n");
}
