import type { Refusal, Transition } from "../graph-run/effects.js";
import { withPendingEffects } from "../graph-loop/plan.js";
import type { RunEffect } from "../graph-loop/plan.js";
import type { GraphState } from "../graph-run/state.js";
import type { GraphStateStore } from "../graph-run/store.js";
import type { Graph } from "../graph/types.js";
import type { NodeRoom } from "../graph-run/node-caps.js";
import { askAhead, committedMove, STALE_MOVE } from "./loop-events.js";
import type { AskedAhead, LoopAsker, LoopRest, WrittenMove } from "./loop-events.js";

/**
 * The one way a graph moves. Every entry point — a run's start, a gate answer, a claim, a force,
 * a run's end, a block — is a move given as data, and commitMove carries it out the same way:
 *
 * 1. **foresee**: the pure advance on the record as read (`seen`), outside the lock;
 * 2. **ask ahead**: the foreseen move's `.pre` loop events, outside the lock (a hook may take its
 *    whole timeout, and the lock's waiters give up after seconds);
 * 3. **transaction**: under the item's lock, the advance decided again on the record as it is.
 *    The hooks' answers stand when the item is as they were asked about it; a move with a `.pre`
 *    event that changed meanwhile is refused as stale (STALE_MOVE), to be given again;
 * 4. **write**: the new state with its effects journalled on it (pendingEffects), in one write: a
 *    crash after the commit repeats effects at the restart, and loses no state;
 * 5. **carry out**: the effects, then the journal taken off (graph-effects.ts carryOut).
 *
 * A move that may follow an edge (a claim, a gate answer, a release) gives `room`: steps 3 and 4
 * then run under the node caps' lock with the runs at each capped node counted inside it
 * (routing.limits.perNode), so two moves never both take a node's last place.
 *
 * A move written any other way is a test failure (test/graph-driver/move-only.test.ts).
 */

export interface EffectOptions {
  /** The assignment went into the session's boot prompt: nothing to paste. */
  readonly bootDelivered?: boolean;
}

/** The runs at the capped nodes, for a move that may follow an edge (node-room.ts). */
export interface RoomPort {
  /** The room as it is now, counted without the lock: what the move is foreseen with. */
  peek(ref: string): Promise<NodeRoom>;
  /** `work` with the room counted under the node caps' lock, which every move given a room takes. */
  within<T>(ref: string, work: (room: NodeRoom) => Promise<T>): Promise<T>;
}

/** What a move needs of the runtime: the state records, the loop hooks, and the effects' carrying out. */
export interface MovePorts {
  readonly states: Pick<GraphStateStore, "transaction">;
  readonly loop: LoopAsker;
  /** Carries out a written move's effects, then takes its journal off the record. */
  carryOut(graph: Graph, written: GraphState, effects: readonly RunEffect[], options?: EffectOptions): Promise<void>;
}

/** Why a move moved nothing: the advance's refusal, or the daemon's own (its reason codes are open). */
export interface MoveRefusal {
  readonly kind: "refuse";
  readonly reasonCode: string;
  readonly reason: string;
}

/** A transition, and its loop events (none: a move without loop events of its own, such as a run's end or a block). */
export interface MoveStep {
  readonly kind: "move";
  readonly transition: Transition;
  readonly loop?: LoopRest;
}

/** Nothing to move, and nothing refused: the record stays as it is (a start on a run under way). */
export const STAY = { kind: "stay" } as const;

/** What the advance makes of a move on a record. */
export type MoveDecision<R extends MoveRefusal> = MoveStep | R | typeof STAY;

/** The move: what it advances on, how, and what its refusal writes. */
export interface GraphMove<R extends MoveRefusal = Refusal> {
  readonly ref: string;
  /**
   * The record as read before, outside the lock: the move is foreseen on it and its `.pre` events
   * asked. Undefined: the item has none (or it was not read: a move without loop events asks nothing).
   */
  readonly seen: GraphState | undefined;
  /** What of a record the move sees (default: all of it). */
  view?(read: GraphState | undefined): GraphState | undefined;
  /** The graph the move advances on, for the record as seen. */
  graphOf(state: GraphState | undefined): Graph;
  /**
   * The pure advance: foreseen on `seen`, then decided again under the lock on the record as it
   * is then (`foreseen`: the transition foreseen, when there was one). `room`: what the node caps
   * leave, when the move was given a RoomPort.
   */
  decide(graph: Graph, state: GraphState | undefined, foreseen?: Transition, room?: NodeRoom): MoveDecision<R>;
  /** The node caps, for a move that may follow an edge: without it, no node is ever full. */
  readonly room?: RoomPort | undefined;
  /** A move that cannot be refused (a run's start): when the item changed after the asking, it is written with its loop events, unasked. */
  readonly always?: boolean;
  /**
   * Under the lock: the refusal recorded (its history entry, written with the refusal, and its
   * effects, carried out after). Without it, a refusal writes and carries out nothing.
   */
  recordRefusal?(
    graph: Graph,
    current: GraphState | undefined,
    refusal: R | Refusal,
  ): { readonly state: GraphState | undefined; readonly effects: readonly RunEffect[] };
  /** After the write, before the effects are carried out. */
  written?(graph: Graph, state: GraphState): void;
  /** How the effects are carried out. */
  readonly carry?: EffectOptions;
}

export type MoveOutcome<R extends MoveRefusal = Refusal> =
  | {
      readonly kind: "moved";
      readonly graph: Graph;
      readonly transition: Transition;
      /** The state as written (its journal taken off since, once carried out). */
      readonly state: GraphState;
      readonly effects: readonly RunEffect[];
      /** A `.pre` hook denied the move: what was written is what its denial makes of it. */
      readonly denied: boolean;
    }
  | {
      readonly kind: "refused";
      readonly graph: Graph;
      /** The advance's refusal, or STALE_MOVE. */
      readonly refusal: R | Refusal;
      /** The record as the refusal left it (its history entry, when recorded). */
      readonly state: GraphState | undefined;
    }
  | { readonly kind: "stayed"; readonly graph: Graph; readonly state: GraphState | undefined };

type Committed<R extends MoveRefusal> = MoveOutcome<R> & { readonly carried: readonly RunEffect[] };

/** Foresees, asks ahead, decides under the lock, writes with the effects journalled, carries them out. */
export async function commitMove<R extends MoveRefusal = Refusal>(ports: MovePorts, move: GraphMove<R>): Promise<MoveOutcome<R>> {
  const view = move.view ?? ((read: GraphState | undefined) => read);
  const seen = view(move.seen);
  const port = move.room;
  const foreseen = move.decide(move.graphOf(seen), seen, undefined, port !== undefined ? await port.peek(move.ref) : undefined);
  const ahead = foreseen.kind === "move" && foreseen.loop !== undefined ? await askAhead(ports.loop, move.ref, seen, foreseen.loop) : undefined;
  const roomed = <T>(work: (room: NodeRoom | undefined) => Promise<T>): Promise<T> => (port !== undefined ? port.within(move.ref, work) : work(undefined));
  const committed = await roomed((room) =>
    ports.states.transaction(move.ref, async (tx): Promise<Committed<R>> => {
      const current = view(tx.read());
      const graph = move.graphOf(current);
      const decided = move.decide(graph, current, foreseen.kind === "move" ? foreseen.transition : undefined, room);
      if (decided.kind === "stay") return { kind: "stayed", graph, state: current, carried: [] };
      // The hooks were asked about the move as foreseen: one the caps decided otherwise under the lock is planned afresh.
      const asked = decided.kind === "move" && foreseen.kind === "move" && sameLanding(foreseen.transition, decided.transition) ? ahead : undefined;
      const written = decided.kind !== "move" ? undefined : writtenOf(ports, move, current, decided, asked);
      if (decided.kind !== "move" || written === undefined) {
        const refusal = decided.kind === "move" ? STALE_MOVE : decided;
        const recorded = move.recordRefusal?.(graph, current, refusal);
        if (recorded === undefined) return { kind: "refused", graph, refusal, state: current, carried: [] };
        if (recorded.state !== undefined && recorded.state !== current) await tx.write(recorded.state);
        return { kind: "refused", graph, refusal, state: recorded.state ?? current, carried: recorded.effects };
      }
      const state = await tx.write(withPendingEffects(written.state, written.effects));
      return {
        kind: "moved",
        graph,
        transition: decided.transition,
        state,
        effects: written.effects,
        denied: written.denied === true,
        carried: written.effects,
      };
    }),
  );
  const { carried, ...outcome } = committed;
  if (outcome.kind === "moved") {
    move.written?.(outcome.graph, outcome.state);
    await ports.carryOut(outcome.graph, outcome.state, carried, move.carry);
  } else if (outcome.kind === "refused" && move.recordRefusal !== undefined) {
    // A refusal's events, on the record as it left it (or as it was read, when there is none now).
    const at = outcome.state ?? seen;
    if (at !== undefined) await ports.carryOut(outcome.graph, at, carried, move.carry);
  }
  return outcome;
}

/** Whether two transitions leave the run in the same place: the same node, status and edge waited at. */
function sameLanding(a: Transition, b: Transition): boolean {
  return a.state.node === b.state.node && a.state.status === b.state.status && a.state.heldEdge?.to === b.state.heldEdge?.to;
}

/** What the decided move writes: its loop events asked ahead (or planned afresh), or the transition as it is. */
function writtenOf<R extends MoveRefusal>(
  ports: MovePorts,
  move: GraphMove<R>,
  current: GraphState | undefined,
  decided: MoveStep,
  ahead: AskedAhead | undefined,
): WrittenMove | undefined {
  const loop = decided.loop;
  if (loop === undefined) return { state: decided.transition.state, effects: decided.transition.effects };
  return committedMove(ports.loop, move.ref, current, ahead, () => loop, move.always === true);
}
