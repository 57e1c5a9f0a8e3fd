import { PHASE_LABEL_PREFIX } from "./effects.js";
import type { GraphState } from "./state.js";
import type { Graph, GraphCheck, GraphNode } from "../graph/types.js";

/**
 * What the session is told about the graph: the assignment it receives on entering an agent node
 * (pasted into a live session, or part of its boot prompt), and the short block a prompt's
 * `{{graph_context}}` placeholder becomes. Plain text, pure. They quote the graph's own words
 * (node descriptions, artifact paths, check commands), which the operator wrote; nothing from the
 * ticket goes in.
 */

/** The command an agent claims a node with (REF defaults to `$THE_LOOP_WORK_ITEM` in a session). */
export function claimCommand(node: string): string {
  return `the-loop graph complete --node ${node}`;
}

/** The assignment for `node`: which node, what to produce, what is checked, how to claim. */
export function assignmentText(graph: Graph, node: GraphNode, state: GraphState): string {
  const where = `node "${node.id}"${phaseNote(node.phase ?? state.phase)} of the ${graph.name} graph`;
  const generation = state.generation > 1 ? `, generation ${state.generation} (changes were requested: read the latest review on the ticket first).` : ".";
  const lines = [`the-loop assignment for ${state.ref}: you are now at ${where}${generation}`];
  const description = node.description.trim();
  if (description !== "") lines.push("", description);
  if (node.produces.length > 0) {
    const artifacts = node.produces.map((alternatives) => `- ${alternatives.join(" or ")}`);
    lines.push("", "Produce (paths relative to your working directory):", ...artifacts);
  }
  const declared = node.checks.filter((check) => !isImplicitArtifactCheck(node, check));
  if (declared.length > 0) lines.push("", "Checked when you claim the node:", ...declared.map((check) => `- ${describeCheck(check)}`));
  const fromCapabilities = state.capabilityText;
  if (fromCapabilities !== undefined && fromCapabilities.node === node.id && fromCapabilities.generation === state.generation) {
    lines.push("", fromCapabilities.text);
  }
  lines.push(
    "",
    `When the node's work is done, claim it: ${claimCommand(node.id)}`,
    "The-loop runs the node's checks and answers whether the item moved; when it did not, the answer says what is missing.",
  );
  return lines.join("\n");
}

/**
 * The `{{graph_context}}` block: where the item is and what the session should do about it.
 * Empty when the item has no graph run.
 */
export function graphContext(graph: Graph, state: GraphState | undefined): string {
  if (state === undefined) return "";
  const node = graph.nodes.get(state.node);
  const where = `node "${state.node}"${phaseNote(node?.phase ?? state.phase)}`;
  const lines = [`Process graph: ${graph.name}; ${where}; status ${state.status}; generation ${state.generation}.`];
  const description = node?.description.trim() ?? "";
  if (description !== "" && state.status === "running") lines.push(`This node: ${description}`);
  switch (state.status) {
    case "running":
      if (state.reason !== undefined) lines.push(`Last claim: ${state.reason}`);
      lines.push(`When this node's work is done, run: ${claimCommand(state.node)}`);
      break;
    case "waiting":
      lines.push(
        state.heldEdge !== undefined
          ? `This node's work is done; the run waits for a place at node "${state.heldEdge.to}" (routing.limits.perNode): do not start its work, the-loop gives it to you when it moves.`
          : "Waiting for an authorized person's review at this gate: do not start the next phase, and do not answer the gate yourself.",
      );
      break;
    case "blocked":
      lines.push(`Blocked${reasonNote(state)}. A person resumes it with a gate answer or \`the-loop graph force\`.`);
      break;
    case "done":
      lines.push("The run is done: there is no node left to work on.");
      break;
    case "failed":
      lines.push(`The run failed${reasonNote(state)}.`);
      break;
    case "exhausted":
    case "stalled":
    case "canceled":
      lines.push(`The run ended ${state.status}${reasonNote(state)}: there is no node left to work on.`);
      break;
  }
  return lines.join("\n");
}

function reasonNote(state: GraphState): string {
  return state.reason !== undefined ? `: ${state.reason}` : "";
}

function phaseNote(phase: string | undefined): string {
  return phase === undefined ? "" : ` (phase ${phase}, label ${PHASE_LABEL_PREFIX}${phase})`;
}

/** The artifact checks the loader adds for `produces` (listed as "Produce", not again as checks). */
function isImplicitArtifactCheck(node: GraphNode, check: GraphCheck): boolean {
  return check.kind === "artifact-exists" && node.produces.some((alternatives) => sameList(alternatives, check.anyOf));
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item, index) => item === b[index]);
}

function describeCheck(check: GraphCheck): string {
  switch (check.kind) {
    case "artifact-exists":
      return `${check.anyOf.join(" or ")} exists`;
    case "checklist-complete":
      return `every "- [ ]" item in ${check.anyOf.join(" or ")} is ticked`;
    case "command":
      return `\`${check.argv.join(" ")}\` exits 0 (within ${check.timeoutSeconds} s)`;
  }
}
