import { phaseLabel } from "./effects.js";
import type { GraphEffect, Refusal, Transition } from "./effects.js";
import type { GraphState } from "./state.js";
import { actorFields, applied, event, itemFields, refuse, withHistory } from "./steps.js";
import type { Moment } from "./steps.js";
import type { Graph, RunEndStatus } from "../graph/types.js";
import { isFinalGraphStatus } from "../graph/types.js";

/**
 * How a run ends short of a terminal node, decided purely like every other move (advance.ts):
 * `failed` (a hook's denial, …), `exhausted` (a changes-requested answer past the graph's
 * `maxGenerations`), `stalled` (no progress at an agent node within the stall window) and
 * `canceled` (the item was closed or stopped mid-run). Each is one `endRun`: the status and its
 * reason on the record, a history entry, its `graph.*` event, and `run-ended` with the status — a
 * canceled run's phase label taken off first —
 * where the runtime releases what waited on the run.
 */

/** Stable reason codes of the ends this module decides (scripts match them in `graph status --json`). */
export const END_REASON_CODES = {
  exhausted: "max-generations",
  stalled: "no-progress",
  itemClosed: "item-closed",
  stopped: "stopped",
} as const;

export interface EndInput extends Moment {
  readonly status: RunEndStatus;
  /** Kebab words: `max-generations`, `no-progress`, `item-closed`, `stopped`, … */
  readonly reasonCode: string;
  readonly reason: string;
}

/**
 * Ends the run at its node with `status`. Final: a final run is refused (with the reason it has).
 * `before`: effects of the same input that come first (a gate answer's own event).
 */
export function endRun(graph: Graph, state: GraphState, input: EndInput, before: readonly GraphEffect[] = []): Refusal | Transition {
  const final = finalRefusal(state);
  if (final) return final;
  const at = input.at.toISOString();
  const { status, reasonCode, reason } = input;
  // A canceled run leaves no work going on, so the item no longer carries its phase's label (the other ends keep it: where the run stopped).
  const unlabel: GraphEffect[] =
    status === "canceled" && state.phase !== undefined ? [{ kind: "phase-label", remove: phaseLabel(state.phase), add: null }] : [];
  // A run that ended waits at no edge: the daemon's release passes it over.
  const { heldEdge: _held, ...unheld } = state;
  const { phase: _phase, ...unphased } = unheld;
  const base = unlabel.length > 0 ? unphased : unheld;
  const ended = withHistory({ ...base, status, reasonCode, reason }, { at, kind: status, node: state.node, actor: input.actor, reason });
  const fields = { ...itemFields(graph, ended), node: state.node, reason_code: reasonCode, reason, ...actorFields(input.actor) };
  const withGeneration = { ...fields, generation: state.generation };
  const announced =
    status === "failed"
      ? event("graph.failed", fields)
      : status === "exhausted"
        ? event("graph.exhausted", withGeneration)
        : status === "stalled"
          ? event("graph.stalled", withGeneration)
          : event("graph.canceled", withGeneration);
  return applied(false, ended, [...before, ...unlabel, announced, { kind: "run-ended", status }]);
}

const ENDED_AS: Readonly<Record<RunEndStatus, string>> = {
  failed: "failed",
  exhausted: "is exhausted (out of generations)",
  stalled: "stalled",
  canceled: "was canceled",
};

/** The refusal of any input on a final run; undefined while the run is under way. */
export function finalRefusal(state: GraphState): Refusal | undefined {
  const status = state.status;
  if (!isFinalGraphStatus(status)) return undefined;
  if (status === "done") {
    return refuse("done", `the item's ${state.graph} run is done (at node "${state.node}"); a done run takes no more input`);
  }
  const why = state.reason ? ` (${state.reason})` : "";
  const again = status === "failed" ? "" : "; starting the item again begins a new run";
  return refuse(status, `the item's ${state.graph} run ${ENDED_AS[status]} at node "${state.node}"${why}; a ${status} run takes no more input${again}`);
}

// ---- exhausted ----------------------------------------------------------------------------------

/** Whether a changes-requested answer now would start a generation past the graph's `maxGenerations`. */
export function outOfGenerations(graph: Graph, state: GraphState): boolean {
  return graph.maxGenerations !== undefined && state.generation >= graph.maxGenerations;
}

/**
 * The end of a run whose changes-requested answer (recorded in `decided`, with its event in
 * `before`) would start a generation the graph does not allow: no node is entered and no
 * assignment delivered.
 */
export function exhaustRun(graph: Graph, decided: GraphState, moment: Moment, before: readonly GraphEffect[]): Transition {
  const max = graph.maxGenerations ?? decided.generation;
  const reason =
    `changes were requested at "${decided.node}" in generation ${decided.generation}, and the ${graph.name} graph allows ${max} ` +
    `(maxGenerations): the run is exhausted; start the item again for a new run, or raise maxGenerations in the graph file`;
  const ended = endRun(graph, decided, { ...moment, status: "exhausted", reasonCode: END_REASON_CODES.exhausted, reason }, before);
  // The answer was taken on a run under way, so the run is not final yet.
  if (ended.kind === "refuse") throw new Error(`exhaustRun on a final run: ${ended.reason}`);
  return ended;
}

// ---- stalled ------------------------------------------------------------------------------------

/** When the run last made progress: its last-progress time where it has one, else its last change. */
export function lastProgressOf(state: GraphState): string {
  // `lastProgressAt` is advanced when a node's work ends (loop.node.terminal); older records lack it.
  return state.lastProgressAt ?? state.updatedAt;
}

/**
 * Why the run is stalled at `now`, or undefined when it is not: it is `running` at an agent node
 * and made no progress for `windowMs`. A gate waits for a person and a blocked run for an
 * operator: neither is the agent's to stall.
 */
export function stallReason(graph: Graph, state: GraphState, now: Date, windowMs: number): string | undefined {
  if (state.status !== "running") return undefined;
  const node = graph.nodes.get(state.node);
  if (node === undefined || node.terminal || node.actor !== "agent") return undefined;
  const last = Date.parse(lastProgressOf(state));
  if (Number.isNaN(last)) return undefined;
  const idle = now.getTime() - last;
  if (idle < windowMs) return undefined;
  return (
    `no progress at node "${state.node}" for ${durationText(idle)} (graph.stallAfterMinutes allows ${durationText(windowMs)}): ` +
    `the run is stalled; start the item again for a new run`
  );
}

/** `45 seconds`, `12 minutes`, `3.5 hours`: enough to tell a person how long. */
export function durationText(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 180) return `${minutes} minutes`;
  return `${Math.round((minutes / 60) * 10) / 10} hours`;
}
