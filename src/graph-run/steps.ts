import type { EventFields } from "../events/catalog.js";
import { GRAPH_HISTORY_LIMIT } from "./effects.js";
import type { GraphEffect, GraphEventEffect, GraphEventName, GraphRefusalCode, Refusal, Transition } from "./effects.js";
import type { GraphHistoryEntry, GraphState } from "./state.js";
import type { Graph, GraphActor } from "../graph/types.js";

/**
 * The small pieces every move of the advance is made of (advance.ts, outcomes.ts): a history
 * entry added within its bound, an event with its catalog fields, a refusal, a transition. Pure.
 */

/** Who made an input, and when (the time comes in the input: the advance reads no clock). */
export interface Moment {
  readonly actor: GraphActor;
  readonly at: Date;
}

export function withHistory(state: GraphState, entry: GraphHistoryEntry): GraphState {
  return { ...state, history: bounded([...state.history, entry]), updatedAt: entry.at };
}

export function bounded(history: GraphHistoryEntry[]): GraphHistoryEntry[] {
  return history.length > GRAPH_HISTORY_LIMIT ? history.slice(history.length - GRAPH_HISTORY_LIMIT) : history;
}

export function refuse(reasonCode: GraphRefusalCode, reason: string): Refusal {
  return { kind: "refuse", reasonCode, reason };
}

export function applied(moved: boolean, state: GraphState, effects: readonly GraphEffect[]): Transition {
  return { kind: "applied", moved, state, effects };
}

export function itemFields(graph: Graph, state: GraphState): { work_item: string; graph: string } {
  return { work_item: state.ref, graph: graph.name };
}

export function actorFields(actor: GraphActor): { actor: string; actor_kind: string } {
  return { actor: actor.id, actor_kind: actor.kind };
}

export function event<N extends GraphEventName>(name: N, fields: EventFields<N>): GraphEventEffect {
  return { kind: "event", name, fields } as GraphEventEffect;
}
