import type { EventFields, EventType } from "../events/catalog.js";
import { graphStateShape } from "./state-shape.js";
import type { GraphState } from "./state.js";
import type { FinalGraphStatus, GraphActor } from "../graph/types.js";

/**
 * What the advance (advance.ts) answers with: a refusal, or a transition — the next state and the
 * effects the runtime applies, in order, once that state is committed.
 */

/** Every phase label is this prefix and the node's phase: `loop:design`. */
export const PHASE_LABEL_PREFIX = "loop:";

/** The history entries a record keeps (graphStateSchema's bound, read from its shape: no zod here). */
export const GRAPH_HISTORY_LIMIT: number = graphStateShape.properties.history.maxItems;

export function phaseLabel(phase: string): string {
  return PHASE_LABEL_PREFIX + phase;
}

/** Why an input moved nothing. Stable codes for scripts; the reason is for people. */
export const GRAPH_REFUSAL_CODES = [
  /** The item has no graph run. */
  "not-running",
  /** The claim names another node than the item's. */
  "not-current",
  /** The item is at a human gate (or a terminal node): nothing for the agent to claim. */
  "not-agent-node",
  /** A gate answer while nothing waits for one (the agent is working on the node). */
  "not-waiting",
  "blocked",
  "done",
  "failed",
  "exhausted",
  "stalled",
  "canceled",
  /** The node has no edge for the answer given. */
  "no-edge",
  /** The state, or a force, names a node the graph does not have. */
  "unknown-node",
  /** A force without a reason: it is audited, so it needs one. */
  "no-reason",
  /** The daemon's, not the advance's: a claim made under another config than the daemon's own. */
  "other-config",
  /** The run waits at an edge for a place at a node full under routing.limits.perNode: nothing moves it but the daemon's release, or a force. */
  "node-full",
] as const;
export type GraphRefusalCode = (typeof GRAPH_REFUSAL_CODES)[number];

export interface Refusal {
  readonly kind: "refuse";
  readonly reasonCode: GraphRefusalCode;
  readonly reason: string;
}

/** An input that changed the state. `moved`: a node was entered (another, or the same one again). */
export interface Transition {
  readonly kind: "applied";
  readonly moved: boolean;
  readonly state: GraphState;
  readonly effects: readonly GraphEffect[];
}

export type GraphEventName = Extract<EventType, `graph.${string}`>;

/** An event for the log, with exactly the fields its catalog entry declares. */
export type GraphEventEffect = {
  readonly [N in GraphEventName]: { readonly kind: "event"; readonly name: N; readonly fields: EventFields<N> };
}[GraphEventName];

export type GraphEffect =
  /** Remove the one old phase label (null: none) and add the new one (null: none, a canceled run); leave every other label alone. */
  | { readonly kind: "phase-label"; readonly remove: string | null; readonly add: string | null }
  /** Fire phase_changed (its facts); its `notify: false` suppresses the announce-phase that follows. */
  | {
      readonly kind: "hook";
      readonly point: "phase_changed";
      readonly graph: string;
      readonly node: string;
      /** Empty at the start. */
      readonly fromPhase: string;
      readonly toPhase: string;
      readonly terminal: boolean;
    }
  /** Fire waiting_for_input for a human gate (question and summary are the graph's: empty). */
  | { readonly kind: "hook"; readonly point: "waiting_for_input"; readonly asker: "gate"; readonly node: string }
  /** Post the marked phase comment (and whatever else the-loop publishes for the phase). */
  | { readonly kind: "announce-phase"; readonly node: string; readonly phase: string | null; readonly terminal: boolean }
  /** Give the session its assignment for the node: pasted into a live session, or in its next boot prompt. */
  | { readonly kind: "deliver-assignment"; readonly node: string; readonly generation: number }
  /** Post one marked comment saying what is to be reviewed and how to answer. */
  | { readonly kind: "request-review"; readonly node: string; readonly generation: number }
  /** Post the marked comment recording an operator's force (its audit on the ticket). */
  | {
      readonly kind: "announce-force";
      readonly from: string | null;
      readonly to: string;
      readonly reason: string;
      readonly actor: GraphActor;
    }
  /** Post the marked comment recording an operator's gate answer (`graph approve | request-changes`, the dashboard). */
  | {
      readonly kind: "announce-answer";
      readonly node: string;
      readonly decision: "approved" | "changes-requested";
      readonly reason: string | null;
      readonly actor: GraphActor;
      readonly via: "cli" | "dashboard";
    }
  /** The run is over (`status`: how it ended): the runtime stops treating the item as in its graph. */
  | { readonly kind: "run-ended"; readonly status: FinalGraphStatus }
  | GraphEventEffect;
