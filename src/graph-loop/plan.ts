import type { JsonObject } from "../sdk/hooks/catalog.js";
import { LOCAL_NETWORK_PARTICIPATION } from "../sdk/hooks/loop-catalog.js";
import type { LoopDecidingPointName, LoopPointName } from "../sdk/hooks/loop-catalog.js";
import { RUN_ENDING_BLOCKS, blockRun, failRun, renewRun } from "../graph-run/advance.js";
import type { GraphEffect, Transition } from "../graph-run/effects.js";
import { LoopClock, loopPayload, nextTask, withTaskEnded } from "./payload.js";
import type { LoopEventInput, LoopOwnInput, LoopSession, LoopSubject } from "./payload.js";
import type { GraphState } from "../graph-run/state.js";
import type { Graph, GraphActor } from "../graph/types.js";

/**
 * Where a move of the graph meets the `loop.*` events (pure): which events it fires, in which
 * order, with which payloads, and what a denial at a `.pre` event makes of the move instead.
 *
 * A move's events, in order (each one only when it applies):
 *
 *   loop.started                     a new run
 *   loop.gate.pre        (asked)     a human gate's decision, or a step into a terminal node
 *   loop.node.terminal               an attempt at a node ended: a claim decided, a gate decided, a force
 *   loop.gate.post
 *   loop.generation.post             the generation ended: changes were requested, or the run ended
 *   loop.generation.pre  (asked)     a generation begins: the run's first, or the next after changes were requested
 *   loop.terminal                    the run ended (fired from the move's run-ended effect, graph-effects.ts;
 *                                    here for a block that ends it, which has no run-ended)
 *
 * A move on a run that has ended (an answer or a force after a block that ended it, a force after
 * a final status) begins a new run: its events are the new run's, from loop.started on, and none
 * is sent on the ended run's id again.
 *
 * The two `.pre` events are asked before the move is written; the others are journalled with it
 * (as effects) and delivered off the dispatch path. All are stamped here, in this order, so their
 * timestamps order them however they are delivered.
 */

/** The reason code of a run a loop hook denied (`failed` at loop.generation.pre, `blocked` at loop.gate.pre). */
export const HOOK_DENIED = "hook_denied";

export type LoopObservedName = Exclude<LoopPointName, LoopDecidingPointName>;

/** A move's loop effect, journalled with the move's own effects. */
export type LoopEffect =
  /** Deliver an observe-only event (off the dispatch path, in order per run). */
  | { readonly kind: "loop"; readonly name: LoopObservedName; readonly payload: Readonly<Record<string, unknown>> }
  /** Post the marked comment naming the hook that denied. */
  | {
      readonly kind: "loop-denial";
      readonly point: LoopDecidingPointName;
      readonly hook: string;
      readonly reason: string;
      readonly node: string;
      readonly status: "failed" | "blocked";
    };

export type RunEffect = GraphEffect | LoopEffect;

/** A `.pre` event to ask before the move is written. */
export interface LoopAsk {
  readonly name: LoopDecidingPointName;
  readonly payload: Readonly<Record<string, unknown>>;
}

export interface LoopDenialOf {
  readonly hook: string;
  readonly reason: string;
}

/** What the move is, in loop terms, beyond its transition. */
export interface LoopMoveInput {
  readonly graph: Graph;
  /** The state the move started from; undefined for a move that begins a run. */
  readonly before: GraphState | undefined;
  readonly transition: Transition;
  readonly actor: GraphActor;
  readonly session: LoopSession | undefined;
  readonly now: () => Date;
  /** The loop events a hook runs at: a payload is built only for those. */
  readonly handled: (name: LoopPointName) => boolean;
  /** The attempt at a node the move ended (loop.node.terminal). */
  readonly left?: {
    readonly node: string;
    readonly taskStatus: "passed" | "failed" | "forced";
    readonly error: string | null;
    readonly details: JsonObject | null;
  };
  /** A human gate's decision (loop.gate.*); a step into a terminal node is found from the transition. */
  readonly gate?: { readonly gateId: string; readonly decision: "approved" | "changes-requested" };
  /** What started a new run: kept in its state, with the participation snapshot frozen now. */
  readonly origin?: GraphState["origin"];
}

export interface LoopMovePlan {
  /** Asked in order before the move is written; the first denial stops there (deniedMove). */
  readonly asks: readonly LoopAsk[];
  /** The move's state with the loop's bookkeeping (last timestamp, attempts ended, progress). */
  readonly state: GraphState;
  /** The move's effects with its loop events woven in. */
  readonly effects: readonly RunEffect[];
  /** A move that begins a new run where an ended one stood: that run as it begins, and what says it began. */
  readonly opened?: { readonly state: GraphState; readonly effects: readonly RunEffect[] };
}

const isFinal = (status: string): boolean => status !== "running" && status !== "waiting" && status !== "blocked";

/** Whether the state ends the loop run: a final status, or a block that ends it (RUN_ENDING_BLOCKS). */
const ends = (state: GraphState): boolean =>
  isFinal(state.status) || (state.status === "blocked" && state.reasonCode !== undefined && RUN_ENDING_BLOCKS.has(state.reasonCode));

/** The move's loop events, payloads stamped in order, and the state and effects to write when no hook denies. */
export function planLoopMove(input: LoopMoveInput): LoopMovePlan {
  const { graph, before, transition } = input;
  const after = transition.state;
  const clock = LoopClock.of(before, input.now);
  const at = (state: GraphState, subject: Omit<LoopSubject, "actor">): LoopEventInput => ({
    timestamp: clock.stamp(),
    graph,
    state,
    session: input.session,
    subject: { ...subject, actor: input.actor },
  });
  // A denial stays on the record until the item moves on: the move that resumes it forgets it.
  const { denial: _resumed, ...movedOn } = after;
  const renewed = before !== undefined && after.loopRunId !== before.loopRunId;
  const opening = before === undefined || renewed;
  const begins = (state: GraphState): GraphState => ({
    ...state,
    networkParticipation: { ...LOCAL_NETWORK_PARTICIPATION },
    ...(input.origin ? { origin: input.origin } : {}),
  });
  const base: GraphState = opening ? begins(renewed ? movedOn : after) : transition.moved ? movedOn : after;
  const head: LoopEffect[] = [];
  const tail: LoopEffect[] = [];
  const asks: LoopAsk[] = [];
  const observe = <N extends LoopObservedName>(into: LoopEffect[], name: N, event: () => [LoopEventInput, LoopOwnInput<N>]): void => {
    if (!input.handled(name)) return;
    const [where, own] = event();
    into.push({ kind: "loop", name, payload: loopPayload(name, where, own) });
  };
  const ask = <N extends LoopDecidingPointName>(name: N, event: () => [LoopEventInput, LoopOwnInput<N>]): void => {
    if (!input.handled(name)) return;
    const [where, own] = event();
    asks.push({ name, payload: loopPayload(name, where, own) });
  };
  // The new run as it begins, where the ended one stood: what the move's events are about before it.
  const fresh = renewed ? begins(renewRun(graph, before, { loopRunId: after.loopRunId }, { actor: input.actor, at: input.now() }).state) : undefined;
  const from = fresh ?? before ?? base;

  if (opening) {
    const startedAt = fresh ?? base;
    observe(head, "loop.started", () => [
      at(startedAt, { node: startedAt.node, generation: 1 }),
      { status: "running", cause: "start", reason_code: null, details: null },
    ]);
  }
  const intoTerminal = transition.moved && graph.nodes.get(after.node)?.terminal === true;
  const gate = input.gate ?? (intoTerminal && before !== undefined ? { gateId: null, decision: null } : undefined);
  const wouldBe = ends(after) ? after.status : "running";
  if (gate !== undefined) {
    const gateNode = gate.gateId ?? after.node;
    const task = gate.gateId === null ? { node: after.node, attempt: 1 } : nextTask(from, gate.gateId);
    ask("loop.gate.pre", () => [
      at(from, { node: gateNode, task, generation: from.generation }),
      { gate_id: gate.gateId, decision: gate.decision, status: wouldBe, reason_code: null, details: null, denied: false, deny_reason: null },
    ]);
  }
  let state = base;
  const left = input.left;
  if (left !== undefined) {
    const task = nextTask(from, left.node);
    observe(head, "loop.node.terminal", () => [
      at(from, { node: left.node, task, generation: from.generation }),
      { task_status: left.taskStatus, run_status: after.status, error: left.error, details: left.details },
    ]);
    // The run's progress signal: advanced before any hook hears of it, whatever the hooks do.
    state = withTaskEnded(state, left.node, input.now().toISOString());
  }
  if (gate !== undefined) {
    const gateNode = gate.gateId ?? after.node;
    const task = gate.gateId === null ? { node: after.node, attempt: 1 } : nextTask(from, gate.gateId);
    observe(tail, "loop.gate.post", () => [
      at(from, { node: gateNode, task, generation: from.generation }),
      { gate_id: gate.gateId, decision: gate.decision, status: after.status, reason_code: after.reasonCode ?? null, details: null },
    ]);
  }
  const nextGeneration = before !== undefined && !renewed && after.generation > before.generation && !ends(after);
  if (nextGeneration) {
    observe(tail, "loop.generation.post", () => [
      at(before, { node: before.node, generation: before.generation }),
      { status: "running", reason_code: "changes_requested", details: { next_generation: after.generation } },
    ]);
  } else if (ends(after)) {
    observe(tail, "loop.generation.post", () => [
      at(after, { node: after.node }),
      { status: after.status, reason_code: after.reasonCode ?? null, details: null },
    ]);
  }
  // A block that ends the run has no run-ended effect (the-loop can resume the item): its loop.terminal is here.
  if (after.status === "blocked" && ends(after)) {
    observe(tail, "loop.terminal", () => [
      at(state, { node: after.node }),
      { status: "blocked", cause: after.reasonCode ?? "contract", reason_code: after.reasonCode ?? null, details: null },
    ]);
  }
  if (opening || nextGeneration) {
    ask("loop.generation.pre", () => [
      at(state, { node: after.node }),
      { status: "running", reason_code: null, details: null, denied: false, deny_reason: null },
    ]);
  }
  const opened =
    fresh === undefined
      ? undefined
      : {
          state: fresh,
          effects: [
            ...head.filter((effect) => effect.kind === "loop" && effect.name === "loop.started"),
            ...transition.effects.filter((effect) => effect.kind === "event" && effect.name === "graph.started"),
          ],
        };
  return { asks, state: clock.kept(state), effects: woven(head, transition.effects, tail), ...(opened ? { opened } : {}) };
}

/** `effects` with `head` first and `tail` before the run's end (so loop.terminal comes last). */
function woven(head: readonly LoopEffect[], effects: readonly GraphEffect[], tail: readonly LoopEffect[]): RunEffect[] {
  const end = effects.findIndex((effect) => effect.kind === "run-ended");
  const cut = end === -1 ? effects.length : end;
  return [...head, ...effects.slice(0, cut), ...tail, ...effects.slice(cut)];
}

export interface LoopDeniedInput extends LoopMoveInput {
  readonly plan: LoopMovePlan;
  /** The ask that was denied (one of plan.asks). */
  readonly at: LoopAsk;
  readonly denial: LoopDenialOf;
}

/**
 * What a denied move writes instead. loop.gate.pre: the run is blocked where it stood (node and
 * label unchanged, nothing of the move applied). loop.generation.pre: the move stands, without
 * its assignment, and the run ends `failed` (`hook_denied`). Either keeps the denial in the state
 * and posts the marked comment naming the hook.
 */
export function deniedMove(input: LoopDeniedInput): { readonly state: GraphState; readonly effects: readonly RunEffect[] } {
  const { graph, plan, denial } = input;
  const clock = new LoopClock(String(input.at.payload["timestamp"]), input.now);
  const moment = { actor: input.actor, at: input.now() };
  const reason = `the loop hook "${denial.hook}" denied at ${input.at.name}${denial.reason !== "" ? `: ${denial.reason}` : ""}`;
  const kept = { hook: denial.hook, point: input.at.name, reason: denial.reason };
  const where = (state: GraphState, subject: Omit<LoopSubject, "actor">): LoopEventInput => ({
    timestamp: clock.stamp(),
    graph,
    state,
    session: input.session,
    subject: { ...subject, actor: input.actor },
  });
  if (input.at.name === "loop.gate.pre") {
    // On an ended run, the move began a new one: the denial blocks that run, which began all the same.
    const before = plan.opened?.state ?? input.before ?? plan.state;
    const blocked = blockRun(graph, before, { ...moment, reasonCode: HOOK_DENIED, reason });
    if (blocked.kind === "refuse") return { state: before, effects: [] };
    const state = { ...blocked.state, denial: kept };
    const gate = input.gate ?? { gateId: null, decision: null };
    const effects: RunEffect[] = [...(plan.opened?.effects ?? []), ...blocked.effects];
    if (input.handled("loop.gate.post")) {
      const task = gate.gateId === null ? { node: plan.state.node, attempt: 1 } : nextTask(before, gate.gateId);
      // agh's gate.post reflects the denial: denied, and its reason, beside reason_code hook_denied.
      const payload = loopPayload("loop.gate.post", where(state, { node: gate.gateId ?? plan.state.node, task }), {
        gate_id: gate.gateId,
        decision: gate.decision,
        status: "blocked",
        reason_code: HOOK_DENIED,
        denied: true,
        deny_reason: denial.reason,
        details: { hook: denial.hook },
      });
      effects.push({ kind: "loop", name: "loop.gate.post", payload });
    }
    effects.push({ kind: "loop-denial", point: "loop.gate.pre", hook: denial.hook, reason: denial.reason, node: before.node, status: "blocked" });
    // `blocked` is one of agh's terminal statuses: the loop run ends here, and says so last.
    if (input.handled("loop.terminal")) {
      const payload = loopPayload(
        "loop.terminal",
        where(state, { node: state.node }),
        { status: "blocked", cause: "contract", reason_code: HOOK_DENIED, details: { hook: denial.hook, point: "loop.gate.pre" } },
        denial.reason !== "" ? { deny_reason: denial.reason } : {},
      );
      effects.push({ kind: "loop", name: "loop.terminal", payload });
    }
    return { state: clock.kept(state), effects };
  }
  // The generation is denied before it began: the move that led to it stands, its assignment is not given.
  const moved = plan.state;
  const failed = failRun(graph, moved, { ...moment, reasonCode: HOOK_DENIED, reason });
  if (failed.kind === "refuse") return { state: moved, effects: plan.effects };
  const state = { ...failed.state, denial: kept };
  // The denied generation never began, so it has no loop.generation.post (agh asserts none is sent).
  const tail: LoopEffect[] = [];
  tail.push({ kind: "loop-denial", point: "loop.generation.pre", hook: denial.hook, reason: denial.reason, node: state.node, status: "failed" });
  const kept0 = plan.effects.filter((effect) => effect.kind !== "deliver-assignment" && effect.kind !== "run-ended");
  return { state: clock.kept(state), effects: [...kept0, ...woven([], failed.effects, tail)] };
}

/** The state as a move writes it: with its effects journalled (see GraphState.pendingEffects). */
export function withPendingEffects(state: GraphState, effects: readonly RunEffect[]): GraphState {
  const { pendingEffects: _carriedOut, ...rest } = state;
  return effects.length === 0 ? rest : { ...rest, pendingEffects: effects.map((effect) => JSON.stringify(effect)) };
}
