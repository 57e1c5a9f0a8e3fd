import type { Graph, GraphNode, GraphOutcome } from "./types.js";

/**
 * A graph as a Mermaid flowchart, for a person to read: pasted into a GitHub comment inside a
 * ```mermaid block, or shown in the docs. Agent nodes are boxes, human gates hexagons, terminal
 * nodes rounded; the way back (changes requested, a failed claim) is dotted.
 */

/** A Mermaid node id for a graph node: prefixed, so no id is a Mermaid keyword (`end`), and `-` free. */
export function mermaidId(id: string): string {
  return `n_${id.replace(/[^A-Za-z0-9]/g, "_")}`;
}

/** Text inside a quoted Mermaid label: no quote, angle bracket or line break can end it early. */
export function mermaidText(text: string): string {
  return text
    .replace(/[\r\n]+/g, " ")
    .replace(/&/g, "#amp;")
    .replace(/"/g, "#quot;")
    .replace(/</g, "#lt;")
    .replace(/>/g, "#gt;");
}

function label(node: GraphNode): string {
  const phase = node.phase === undefined ? "" : `<br/>loop:${mermaidText(node.phase)}`;
  return `"${mermaidText(node.id)}${phase}"`;
}

function shape(node: GraphNode): string {
  if (node.terminal) return `([${label(node)}])`;
  if (node.actor === "human") return `{{${label(node)}}}`;
  return `[${label(node)}]`;
}

const BACKWARD: readonly GraphOutcome[] = ["changes-requested", "fail"];

export function graphMermaid(graph: Graph): string {
  const lines = ["flowchart TD", `  graph_start(("start")) --> ${mermaidId(graph.start)}`];
  for (const node of graph.nodes.values()) lines.push(`  ${mermaidId(node.id)}${shape(node)}`);
  for (const edge of graph.edges) {
    const arrow = BACKWARD.includes(edge.on) ? "-.->" : "-->";
    lines.push(`  ${mermaidId(edge.from)} ${arrow}|${edge.on}| ${mermaidId(edge.to)}`);
  }
  return lines.join("\n");
}
