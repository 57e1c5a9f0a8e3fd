import { markSelfAuthored } from "../workitem/index.js";
import type { GraphActor, Graph, GraphNode } from "../graph/types.js";

/**
 * What the-loop posts on a work item about its graph run. Every text is marked, so no ingress
 * reads it back as input, and none quotes ticket text: only the graph's own words (which the
 * operator wrote), node ids and the keywords.
 */

export interface GateKeywords {
  readonly approve: string;
  readonly requestChanges: string;
}

/** The marked comment announcing that the item entered a phase. */
export function phaseText(ref: string, graph: Graph, node: GraphNode, terminal: boolean): string {
  const where = node.phase !== undefined ? `phase \`${node.phase}\` (node \`${node.id}\`)` : `node \`${node.id}\``;
  const head = terminal
    ? `🏁 **the-loop**: \`${ref}\` reached ${where} of the \`${graph.name}\` graph: its run is done.`
    : `🔄 **the-loop**: \`${ref}\` entered ${where} of the \`${graph.name}\` graph.`;
  const description = node.description.trim();
  return markSelfAuthored(description === "" || terminal ? head : `${head}\n\n${description}`);
}

/** The one marked comment a human gate posts: what is to be reviewed, and how to answer. */
export function reviewRequestText(ref: string, graph: Graph, node: GraphNode, keywords: GateKeywords, generation: number, fromCapabilities = ""): string {
  const produced = previousArtifacts(graph, node);
  const lines = [
    `🙋 **the-loop**: \`${ref}\` waits for a review at \`${node.id}\` (${graph.name} graph${generation > 1 ? `, generation ${generation}` : ""}).`,
  ];
  const description = node.description.trim();
  if (description !== "") lines.push("", description);
  if (produced.length > 0) lines.push("", "To review:", ...produced.map((artifact) => `- \`${artifact}\``));
  // The operator's consented capabilities: the node's loop points gave the reviewer this.
  if (fromCapabilities !== "") lines.push("", fromCapabilities);
  lines.push(
    "",
    "Answer as an authorized user, with one of these on a line of its own (not quoted, not in code):",
    "",
    `- \`${keywords.approve}\` to approve and move on`,
    `- \`${keywords.requestChanges}\` to send the work back for changes`,
    "",
    'A pull request review that approves or requests changes answers too. Nothing else moves the gate: "LGTM" and other prose do not.',
  );
  return markSelfAuthored(lines.join("\n"));
}

/** The marked audit comment of `the-loop graph force`. */
export function forceText(ref: string, graph: Graph, from: string | null, to: string, reason: string, actor: GraphActor): string {
  const moved = from === null ? `put on node \`${to}\`` : `moved from \`${from}\` to \`${to}\``;
  return markSelfAuthored(
    `⚠️ **the-loop**: \`${ref}\` was ${moved} of the \`${graph.name}\` graph by ${actor.id} with \`the-loop graph force\`.\n\nReason given: ${oneLine(reason)}`,
  );
}

/** Where an operator's gate answer came from: `the-loop graph approve | request-changes`, or the dashboard. */
export type OperatorVia = "cli" | "dashboard";

/** The marked audit comment of an operator's gate answer (`the-loop graph approve | request-changes`, or the dashboard). */
export function operatorAnswerText(
  ref: string,
  graph: Graph,
  node: string,
  decision: "approved" | "changes-requested",
  reason: string | null,
  actor: GraphActor,
  via: OperatorVia,
): string {
  const command = decision === "approved" ? "approve" : "request-changes";
  const how = via === "dashboard" ? "from the-loop's dashboard" : `with \`the-loop graph ${command}\``;
  const gate = `the gate \`${node}\` of \`${ref}\` (${graph.name} graph)`;
  const head =
    decision === "approved"
      ? `✅ **the-loop**: ${gate} was approved by ${actor.id} ${how}.`
      : `↩️ **the-loop**: ${actor.id} requested changes at ${gate} ${how}.`;
  return markSelfAuthored(reason !== null && reason.trim() !== "" ? `${head}\n\nReason given: ${oneLine(reason)}` : head);
}

/** The artifacts of the agent nodes with an edge into `node`: what a gate reviews. */
function previousArtifacts(graph: Graph, node: GraphNode): string[] {
  const sources = graph.edges.filter((edge) => edge.to === node.id).map((edge) => graph.nodes.get(edge.from));
  const artifacts = new Set<string>();
  for (const source of sources) {
    if (source === undefined || source.actor !== "agent") continue;
    for (const alternatives of source.produces) artifacts.add(alternatives.join(" or "));
  }
  return [...artifacts];
}

/** An operator's reason on one line, bounded. */
function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 300 ? `${flat.slice(0, 299)}…` : flat;
}
