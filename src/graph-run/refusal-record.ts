import type { GraphEventEffect } from "./effects.js";
import type { GraphHistoryEntry, GraphHistoryKind, GraphState } from "./state.js";
import { actorFields, bounded, event } from "./steps.js";
import type { Moment } from "./steps.js";
import type { Graph, GraphActor } from "../graph/types.js";

/** Inputs that moved nothing, on the record: what advance.ts's recordRefusal writes. Pure. */

export type RefusalKind = Extract<GraphHistoryKind, "claim-refused" | "gate-refused" | "gate-ambiguous">;

export interface RefusalRecordInput extends Moment {
  readonly kind: RefusalKind;
  /** The work item's canonical ref (the state's, when it has one). */
  readonly ref: string;
  readonly reasonCode: string;
  readonly reason: string;
  /** The node a refused claim named. */
  readonly claimed?: string | undefined;
}

/**
 * An input that moved nothing, for the record: its event, and (when the item has a run) a history
 * entry. The same refusal again by the same actor replaces its entry rather than adding one, so
 * an agent claiming in a loop cannot push the run's story out of the bounded history.
 */
export function recordRefusal(
  graph: Graph,
  state: GraphState | undefined,
  input: RefusalRecordInput,
): { readonly state: GraphState | undefined; readonly effects: readonly GraphEventEffect[] } {
  const common = {
    work_item: state?.ref ?? input.ref,
    graph: graph.name,
    reason: input.reason,
    ...actorFields(input.actor),
    ...(state ? { node: state.node } : {}),
  };
  const effect =
    input.kind === "claim-refused"
      ? event("graph.claim_refused", {
          ...common,
          reason_code: input.reasonCode,
          ...(input.claimed !== undefined ? { claimed: input.claimed } : {}),
        })
      : input.kind === "gate-refused"
        ? event("graph.gate_refused", { ...common, reason_code: input.reasonCode })
        : event("graph.gate_ambiguous", common);
  if (state === undefined) return { state, effects: [effect] };
  const at = input.at.toISOString();
  const entry: GraphHistoryEntry = {
    at,
    kind: input.kind,
    node: input.claimed ?? state.node,
    actor: input.actor,
    reason: `${input.reasonCode}: ${input.reason}`,
  };
  const last = state.history[state.history.length - 1];
  const repeated =
    last !== undefined && last.kind === entry.kind && last.node === entry.node && last.reason === entry.reason && sameActor(last.actor, entry.actor);
  const history = repeated ? [...state.history.slice(0, -1), entry] : bounded([...state.history, entry]);
  return { state: { ...state, history, updatedAt: at }, effects: [effect] };
}

function sameActor(a: GraphActor, b: GraphActor): boolean {
  return a.kind === b.kind && a.id === b.id;
}
