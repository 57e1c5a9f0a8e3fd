import type { GraphEffect, Refusal, Transition } from "./effects.js";
import type { GraphState } from "./state.js";
import { actorFields, applied, event, itemFields, refuse, withHistory } from "./steps.js";
import type { Moment } from "./steps.js";
import type { Graph, GraphNode, GraphOutcome } from "../graph/types.js";
import { isFinalGraphStatus } from "../graph/types.js";

/**
 * `routing.limits.perNode` as plain functions over data (docs/fleet.md, "Caps on graph nodes"):
 * how many runs are at each capped node, whether an edge may be taken now or the run waits at it,
 * and which waiting runs a freed place lets through, oldest first.
 *
 * A key names a node by its id, in whichever graph has it, or by its phase: a run is at key K
 * while its current node's id is K or that node's phase is K. Every run short of a final status
 * counts where it is — running, waiting (a gate, or its own turn at an edge) or blocked — since
 * each holds the node's work; a run that ended holds nothing.
 */

/** The caps as the config gives them: a node id or a phase → how many runs may be at it at once. */
export type NodeCaps = Readonly<Record<string, number>>;

/** The cap that holds an edge: its key, its limit, and how many runs are at it now. */
export interface FullNode {
  readonly key: string;
  readonly limit: number;
  readonly count: number;
}

/** Whether the node-caps are on at all: with none, no edge is ever held and nothing is counted. */
export function hasNodeCaps(caps: NodeCaps | undefined): caps is NodeCaps {
  return caps !== undefined && Object.keys(caps).length > 0;
}

/** The keys a node answers to: its id, and its phase when it has one. */
export function nodeKeys(node: Pick<GraphNode, "id" | "phase">): string[] {
  return node.phase !== undefined && node.phase !== node.id ? [node.id, node.phase] : [node.id];
}

/** The keys of `caps` that no node of any of the graphs answers to: caps on nothing (config validate warns of them). */
export function unmatchedNodeCaps(caps: NodeCaps, graphs: Iterable<Graph>): string[] {
  const known = new Set<string>();
  for (const graph of graphs) for (const node of graph.nodes.values()) for (const key of nodeKeys(node)) known.add(key);
  return Object.keys(caps).filter((key) => !known.has(key));
}

/** A run where the caps see it: its ref, and the keys of the node it is at. */
export interface RunAt {
  readonly ref: string;
  readonly keys: readonly string[];
}

/**
 * Where each run short of a final status is, as the caps see it. A run on a graph the config does
 * not have is at its node's id (its phase is unknown).
 */
export function runsAt(graphs: ReadonlyMap<string, Graph>, states: readonly GraphState[]): RunAt[] {
  return states
    .filter((state) => !isFinalGraphStatus(state.status))
    .map((state) => {
      const node = graphs.get(state.graph)?.nodes.get(state.node);
      return { ref: state.ref, keys: node !== undefined ? nodeKeys(node) : [state.node] };
    });
}

/** How many runs are at each capped key (a key no run is at is 0). */
export function occupancy(caps: NodeCaps, runs: readonly RunAt[]): Map<string, number> {
  const counts = new Map<string, number>(Object.keys(caps).map((key) => [key, 0]));
  for (const run of runs) {
    for (const key of new Set(run.keys)) {
      const count = counts.get(key);
      if (count !== undefined) counts.set(key, count + 1);
    }
  }
  return counts;
}

/**
 * The room the caps leave at each node, for one run about to move (`ref`): the other runs are
 * counted, the run itself never (it is at the node it would leave, or already at the target).
 * What the advance asks when an edge is followed.
 */
export interface NodeRoom {
  /** The first full cap the target answers to; undefined when the run may enter it. */
  full(target: Pick<GraphNode, "id" | "phase">): FullNode | undefined;
}

/** No caps: every node has room. */
export const UNLIMITED: NodeRoom = { full: () => undefined };

export function roomFor(caps: NodeCaps, runs: readonly RunAt[], ref: string): NodeRoom {
  if (!hasNodeCaps(caps)) return UNLIMITED;
  const counts = occupancy(
    caps,
    runs.filter((run) => run.ref !== ref),
  );
  return {
    full: (target) => {
      for (const key of nodeKeys(target)) {
        const limit = caps[key];
        const count = counts.get(key) ?? 0;
        if (limit !== undefined && count >= limit) return { key, limit, count };
      }
      return undefined;
    },
  };
}

/** A run waiting at an edge, as the release orders them. */
export interface HeldRun {
  readonly ref: string;
  /** When it began waiting (ISO 8601): the oldest goes first. */
  readonly since: string;
}

/** The order a freed place is offered in: oldest `since` first, ties by ref (so every process agrees). */
export function releaseOrder<T extends HeldRun>(held: readonly T[]): T[] {
  return [...held].sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
}

/** The runs waiting at an edge: status `waiting` with the edge they wait at. */
export function heldRuns(states: readonly GraphState[]): (GraphState & { readonly heldEdge: NonNullable<GraphState["heldEdge"]> })[] {
  return states.filter(
    (state): state is GraphState & { heldEdge: NonNullable<GraphState["heldEdge"]> } => state.status === "waiting" && state.heldEdge !== undefined,
  );
}

/**
 * How many runs wait ahead of `state` for a place under the same cap (the key that held it):
 * those held under that key earlier (ties by ref). 0 for a run that does not wait.
 */
export function heldAhead(state: GraphState, states: readonly GraphState[]): number {
  const mine = state.heldEdge;
  if (mine === undefined) return 0;
  const order = releaseOrder(
    heldRuns(states)
      .filter((other) => other.heldEdge.cap === mine.cap)
      .map((other) => ({ ref: other.ref, since: other.heldEdge.since })),
  );
  const index = order.findIndex((other) => other.ref === state.ref);
  return index === -1 ? order.length : index;
}

/** A held edge in words, for `why`, `graph status` and the claim's answer. */
export function heldText(
  state: Pick<GraphState, "node">,
  held: { readonly to: string; readonly cap: string },
  limit: number | undefined,
  ahead?: number,
): string {
  const cap =
    limit === undefined
      ? `routing.limits.perNode.${held.cap} (no longer set: the daemon moves it within a second)`
      : `cap routing.limits.perNode.${held.cap} = ${limit}`;
  const behind = ahead === undefined ? "" : `, ${ahead} ahead`;
  return `waiting at edge ${state.node} → ${held.to}: node ${held.to} full, ${cap}${behind}`;
}

// ---------------------------------------------------------------------------------------------
// The advance's side (advance.ts follow, releaseHeld)

/** The run waits at the edge into a full node: it stays where it is, `waiting` (node-full), with the edge kept. */
export function holdAtEdge(
  graph: Graph,
  state: GraphState,
  from: GraphNode,
  target: GraphNode,
  outcome: GraphOutcome,
  full: FullNode,
  moment: Moment,
  effects: GraphEffect[],
): Transition {
  const at = moment.at.toISOString();
  const reason = `waiting at edge ${from.id} → ${target.id}: node ${target.id} full, cap routing.limits.perNode.${full.key} = ${full.limit}`;
  const held = withHistory(
    { ...state, status: "waiting", reasonCode: "node-full", reason, heldEdge: { to: target.id, outcome, since: at, cap: full.key }, updatedAt: at },
    { at, kind: "held", node: target.id, from: from.id, outcome, actor: moment.actor, reason },
  );
  effects.push(
    event("graph.edge_held", {
      ...itemFields(graph, held),
      from: from.id,
      node: target.id,
      outcome,
      cap: full.key,
      limit: full.limit,
      count: full.count,
      ...actorFields(moment.actor),
    }),
  );
  return applied(false, held, effects);
}

/** A claim or a gate answer on a run waiting at an edge: refused, saying what it waits for. */
export function heldRefusal(state: GraphState): Refusal {
  const to = state.heldEdge?.to ?? state.node;
  return refuse(
    "node-full",
    `${state.reason ?? `waiting for a place at node ${to}`}; the daemon moves it when a place frees (oldest first), or \`the-loop graph force\` moves it now`,
  );
}
