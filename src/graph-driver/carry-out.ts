import { messageOf } from "../errors.js";
import { assignmentText } from "../graph-run/assignment.js";
import { forceText, operatorAnswerText, phaseText, reviewRequestText } from "../graph-run/comments.js";
import type { GraphEventEffect } from "../graph-run/effects.js";
import type { RunEffect } from "../graph-loop/plan.js";
import type { GraphState } from "../graph-run/state.js";
import type { GraphStateStore } from "../graph-run/store.js";
import type { Graph } from "../graph/types.js";
import { isLive } from "../registry/record.js";
import { parseWorkItemRef } from "../workitem/index.js";
import type { ContextNeeds } from "../sessions/context.js";
import type { MoveContext } from "./move-context.js";
import type { PasteContext } from "../sessions/delivery.js";
import { paste } from "../sessions/delivery.js";
import { parseJournalledEffect } from "./journalled-effect.js";
import { blockAtNode, passAt, postBlock, rememberPointText, sessionCwd } from "./capability-points.js";
import type { PointHalt, PointPass } from "./capability-points.js";
import { loopAskerOf, loopDenialText, queueLoopEvent, queueLoopTerminal } from "./loop-events.js";
import { commitMove } from "./move.js";
import { tellBlocked, tellRunEnded } from "./run-end-session.js";
import type { EffectOptions, MovePorts } from "./move.js";
import { workItemEntityOfRef } from "../sessions/lifecycle.js";

/**
 * Carries out what an advance of the graph decided, after its state was written: the phase
 * label, the hooks, the comments, the assignment. The state is committed first, so a crash in
 * between repeats nothing the state says happened and loses no move; an effect that fails is
 * recorded (`graph.effect_failed`, or `graph.assignment_failed`) and the rest still run.
 */

export type { EffectOptions } from "./move.js";

export { withPendingEffects } from "../graph-loop/plan.js";
export { parseJournalledEffect } from "./journalled-effect.js";

/** What a graph move (graph-move.ts commitMove) needs of the dispatcher: the item's state records, its loop hooks, carryOut. */
export function movePorts(ctx: MoveContext, states: GraphStateStore): MovePorts {
  return { states, loop: loopAskerOf(ctx), carryOut: (graph, written, effects, options) => carryOut(ctx, graph, written, effects, options) };
}

/**
 * A recorded refusal's effects — events only — on the item and the node they name: they need no
 * state, so an item without a record has its refusal said too.
 */
export function emitGraphEvents(
  ctx: ContextNeeds<never, "events">,
  graph: Graph,
  at: { readonly ref: string; readonly node: string },
  effects: readonly GraphEventEffect[],
): void {
  for (const effect of effects) {
    try {
      ctx.options.events.emit(effect.name, effect.fields as never);
    } catch (error) {
      ctx.options.events.emit("graph.effect_failed", { work_item: at.ref, graph: graph.name, node: at.node, effect: effect.kind, error: messageOf(error) });
    }
  }
}

/**
 * Carries out a committed move's effects, then takes them off the record — unless a later move
 * journalled its own meanwhile (those are that move's to clear).
 */
export async function carryOut(ctx: MoveContext, graph: Graph, written: GraphState, effects: readonly RunEffect[], options: EffectOptions = {}): Promise<void> {
  await applyGraphEffects(ctx, graph, written, effects, options);
  const journalled = written.pendingEffects;
  const states = ctx.options.graph?.states;
  if (journalled === undefined || states === undefined) return;
  await states.transaction(written.ref, async (tx) => {
    const current = tx.read();
    if (current?.pendingEffects === undefined || current.pendingEffects.join("\n") !== journalled.join("\n")) return;
    const { pendingEffects: _done, ...rest } = current;
    await tx.write(rest);
  });
}

/**
 * After a restart: the effects a killed daemon journalled and never carried out, for one item.
 * They run again whole: an effect that ran before the kill runs twice (a label added twice is
 * one label; a comment may be posted twice), which beats losing one.
 */
export async function resumeJournalledEffects(ctx: MoveContext, ref: string): Promise<boolean> {
  const setup = ctx.options.graph;
  if (setup === undefined) return false;
  const state = await setup.states.get(ref);
  const journalled = state?.pendingEffects;
  if (state === undefined || journalled === undefined) return false;
  const graph = setup.graphs.get(state.graph);
  if (graph === undefined) return false;
  const effects = journalled.map(parseJournalledEffect).filter((effect): effect is RunEffect => effect !== undefined);
  await carryOut(ctx, graph, state, effects);
  return true;
}

export async function applyGraphEffects(
  ctx: MoveContext,
  graph: Graph,
  state: GraphState,
  effects: readonly RunEffect[],
  options: EffectOptions = {},
): Promise<void> {
  const ref = state.ref;
  const events = ctx.options.events;
  // phase_changed's `notify: false` silences the announcement that follows it, never the label.
  let notify = true;
  for (const effect of effects) {
    const failed = (error: unknown): void =>
      events.emit("graph.effect_failed", { work_item: ref, graph: graph.name, node: state.node, effect: effect.kind, error: messageOf(error) });
    try {
      switch (effect.kind) {
        case "event":
          events.emit(effect.name, effect.fields as never);
          break;
        case "phase-label":
          await relabel(ctx, ref, effect.remove, effect.add);
          break;
        case "hook":
          if (effect.point === "phase_changed") {
            const outcome = await ctx.hooks.run(
              "phase_changed",
              {
                workItem: workItemEntityOfRef(ref, ctx.options.registry.get(ref)),
                graph: effect.graph,
                node: effect.node,
                fromPhase: effect.fromPhase,
                toPhase: effect.toPhase,
                terminal: effect.terminal,
                notify: true,
              },
              { workItem: ref },
            );
            notify = outcome.context.notify !== false;
          } else {
            // The request's text is the graph's: a hook's question or summary is not read here.
            await ctx.hooks.run(
              "waiting_for_input",
              { workItem: workItemEntityOfRef(ref, ctx.options.registry.get(ref)), asker: "gate", node: effect.node, question: "", summary: "" },
              { workItem: ref },
            );
          }
          break;
        case "announce-phase": {
          const node = graph.nodes.get(effect.node);
          if (notify && node !== undefined) await post(ctx, ref, phaseText(ref, graph, node, effect.terminal));
          notify = true;
          break;
        }
        case "request-review": {
          const node = graph.nodes.get(effect.node);
          const keywords = ctx.options.graph?.keywords;
          if (node === undefined || keywords === undefined) break;
          const entered = await enterPoints(ctx, graph, state, effect.node, effect.generation);
          if (entered.blocked) break;
          await post(ctx, ref, reviewRequestText(ref, graph, node, keywords, effect.generation, entered.pass.text));
          break;
        }
        case "announce-force":
          await post(ctx, ref, forceText(ref, graph, effect.from, effect.to, effect.reason, effect.actor));
          break;
        case "announce-answer":
          await post(ctx, ref, operatorAnswerText(ref, graph, effect.node, effect.decision, effect.reason, effect.actor, effect.via));
          break;
        case "deliver-assignment": {
          // In the boot prompt: its points pass there, and it is recorded once the harness started with it (spawn.ts).
          if (options.bootDelivered) break;
          const entered = await enterPoints(ctx, graph, state, effect.node, effect.generation);
          if (!entered.blocked) await deliverAssignment(ctx, graph, entered.state, effect.node, effect.generation);
          break;
        }
        case "run-ended":
          // A terminal node's points pass once it is reached: its steps run, its gates are recorded (a done run has nothing to stop).
          if (effect.status === "done") await enterPoints(ctx, graph, state, state.node, state.generation);
          // loop.terminal, whatever ended the run: after every other loop event of its last move.
          queueLoopTerminal(ctx, graph, state, effect.status);
          // Last: the agent is told, and with graph.closeAfterMinutes 0 its session closes now.
          await tellRunEnded(ctx, graph, state);
          break;
        case "loop":
          queueLoopEvent(ctx, ref, effect.name, effect.payload);
          break;
        case "loop-denial":
          // Its event is the move's own graph.failed or graph.blocked (reason_code hook_denied, the reason naming the hook).
          await post(ctx, ref, loopDenialText(ref, effect.point, effect.hook, effect.reason, effect.node, effect.status));
          break;
      }
    } catch (error) {
      failed(error);
    }
  }
}

export type Entered = { readonly blocked: true } | { readonly blocked: false; readonly state: GraphState; readonly pass: PointPass };

/**
 * The item entered `nodeId`: the points it binds pass (and, with a task plan, its tasks resolve).
 * Answers the state to deliver the assignment from — the points' text kept on it — or that a
 * gate, a halting step or a resolver blocked the item there. A terminal node cannot be blocked:
 * its halt is surfaced and recorded only.
 */
export async function enterPoints(
  ctx: MoveContext,
  graph: Graph,
  state: GraphState,
  nodeId: string,
  generation: number,
  cwd: string = sessionCwd(ctx, state.ref),
): Promise<Entered> {
  const node = graph.nodes.get(nodeId);
  if (node === undefined) return { blocked: false, state, pass: { text: "", notes: [] } };
  const pass = await passAt(ctx, graph, state, node, "enter", cwd);
  if (pass.halt !== undefined && !node.terminal) {
    await applyPointHalt(ctx, graph, state.ref, nodeId, generation, pass.halt);
    return { blocked: true };
  }
  if (node.terminal) return { blocked: false, state, pass };
  const remembered = await rememberPointText(ctx, state.ref, nodeId, generation, pass.text);
  const withText = pass.text !== "" ? { ...state, capabilityText: { node: nodeId, generation, text: pass.text } } : state;
  return { blocked: false, state: remembered ?? withText, pass };
}

/** A halting pass blocks the item at the node (if it is still there) and says so on the ticket. */
export async function applyPointHalt(
  ctx: MoveContext,
  graph: Graph,
  ref: string,
  nodeId: string,
  generation: number,
  halt: PointHalt,
): Promise<GraphState | undefined> {
  const states = ctx.options.graph?.states;
  if (states === undefined) return undefined;
  const blocked = await commitMove<never>(movePorts(ctx, states), {
    ref,
    seen: undefined,
    graphOf: () => graph,
    decide: (_graph, current) => blockAtNode(graph, current, nodeId, generation, halt, ctx.now()),
  });
  if (blocked.kind !== "moved") return undefined;
  await postBlock(ctx, graph, ref, nodeId, halt);
  // The agent learns it from the-loop, not from the ticket: a claim it made may have led here.
  await tellBlocked(ctx, graph, ref, nodeId, halt.reasonCode, halt.reason);
  return blocked.state;
}

/** Replaces the one old `loop:` label with the new one (or, with none, takes it off); every other label is left alone. */
async function relabel(ctx: ContextNeeds<never, "trackers">, ref: string, remove: string | null, add: string | null): Promise<void> {
  const tracker = ctx.options.trackers.forRef(ref);
  const item = parseWorkItemRef(ref);
  if (remove !== null && remove !== add) {
    const current = await tracker.getItem(item);
    if (current.labels.some((label) => label.toLowerCase() === remove.toLowerCase())) await tracker.removeLabel(item, remove);
  }
  if (add !== null) await tracker.addLabel(item, add);
}

async function post(ctx: ContextNeeds<never, "trackers">, ref: string, text: string): Promise<void> {
  await ctx.options.trackers.forRef(ref).postComment(parseWorkItemRef(ref), text);
}

/**
 * Pastes the node's assignment into the item's live session. A paused session is not typed into:
 * the state remembers the assignment, and the resume delivers it (deliverPendingAssignment).
 */
export async function deliverAssignment(
  ctx: PasteContext & ContextNeeds<never, "graph">,
  graph: Graph,
  state: GraphState,
  nodeId: string,
  generation: number,
): Promise<void> {
  const events = ctx.options.events;
  const node = graph.nodes.get(nodeId);
  if (node === undefined) return;
  const fields = { work_item: state.ref, graph: graph.name, node: nodeId, generation };
  const record = ctx.options.registry.get(state.ref);
  const later = async (why: string): Promise<void> => {
    await rememberUndelivered(ctx, state.ref, nodeId, generation);
    events.emit("graph.assignment_failed", { ...fields, error: why, will_retry: true });
  };
  if (record === undefined || !isLive(record)) return later("the item has no live session: the assignment goes into its next session's boot prompt");
  if (record.status === "paused") return later("the session is paused: the assignment is delivered when it is resumed");
  const outcome = await paste(ctx, record, assignmentText(graph, node, state));
  if (outcome === "pasted") {
    await forgetUndelivered(ctx, state.ref, nodeId, generation);
    events.emit("graph.assignment_delivered", { ...fields, how: "pasted" });
    return;
  }
  return later(`the session could not take it (${outcome})`);
}

async function rememberUndelivered(ctx: ContextNeeds<never, "graph">, ref: string, node: string, generation: number): Promise<void> {
  const states = ctx.options.graph?.states;
  await states?.transaction(ref, async (tx) => {
    const current = tx.read();
    if (current === undefined || current.node !== node || current.generation !== generation) return;
    await tx.write({ ...current, undelivered: { node, generation } });
  });
}

async function forgetUndelivered(ctx: ContextNeeds<never, "graph">, ref: string, node: string, generation: number): Promise<void> {
  const states = ctx.options.graph?.states;
  await states?.transaction(ref, async (tx) => {
    const current = tx.read();
    if (current?.undelivered === undefined) return;
    if (current.undelivered.node !== node || current.undelivered.generation !== generation) return;
    const { undelivered: _delivered, ...rest } = current;
    await tx.write(rest);
  });
}

/** On resume: the assignment a paused session missed, if it is still the current one. */
export async function deliverPendingAssignment(ctx: PasteContext & ContextNeeds<never, "graph">, ref: string): Promise<void> {
  const setup = ctx.options.graph;
  if (setup === undefined) return;
  let state: GraphState | undefined;
  try {
    state = await setup.states.get(ref);
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", { work_item: ref, graph: "", node: "", effect: "deliver-assignment", error: messageOf(error) });
    return;
  }
  const pending = state?.undelivered;
  if (state === undefined || pending === undefined) return;
  const graph = setup.graphs.get(state.graph);
  if (graph === undefined || state.node !== pending.node || state.generation !== pending.generation || state.status !== "running") {
    await forgetUndelivered(ctx, ref, pending.node, pending.generation);
    return;
  }
  await deliverAssignment(ctx, graph, state, pending.node, pending.generation);
}

/** The items whose last graph move journalled effects a killed process never carried out (resumeJournalledEffects). */
export async function journalledMoves(ctx: ContextNeeds<never, "events" | "graph">): Promise<string[]> {
  const states = ctx.options.graph?.states;
  if (states === undefined) return [];
  const listing = await states.list({ keep: (state) => state.pendingEffects !== undefined });
  for (const problem of listing.problems) {
    ctx.options.events.emit("graph.effect_failed", { work_item: "", graph: "", node: "", effect: "resume", error: `${problem.where}: ${problem.message}` });
  }
  return listing.records.map((state) => state.ref);
}
