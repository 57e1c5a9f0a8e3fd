import { loopPayload, nextLoopTimestamp } from "../graph-loop/payload.js";
import type { LoopSession } from "../graph-loop/payload.js";
import { HOOK_DENIED, planLoopMove, deniedMove } from "../graph-loop/plan.js";
import type { LoopAsk, LoopDenialOf, LoopMoveInput, LoopMovePlan, LoopObservedName, RunEffect } from "../graph-loop/plan.js";
import type { GraphState } from "../graph-run/state.js";
import type { Refusal, Transition } from "../graph-run/effects.js";
import { RUN_ENDING_BLOCKS, runHasEnded } from "../graph-run/advance.js";
import type { GateDecision } from "../graph-run/advance.js";
import type { CheckResult, Graph, GraphActor } from "../graph/types.js";
import { COMMENT_KINDS } from "../routing/inbound.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { LoopPayloadOf, LoopPointName } from "../sdk/hooks/loop-catalog.js";
import type { LoopOutcome } from "../hooks/types.js";
import { readUsage } from "../budget/summary.js";
import { isLive } from "../registry/record.js";
import { redactKnownSecrets } from "../secrets.js";
import { markSelfAuthored } from "../workitem/index.js";
import { commentReason } from "../sessions/announce.js";
import type { ContextNeeds } from "../sessions/context.js";
import { LoopQueue } from "./loop-queue.js";

/**
 * The `loop.*` hook events at the graph runtime's call sites (graph-run.ts, graph-effects.ts):
 * the `.pre` events asked before a move is written, the observe-only ones queued off the
 * dispatch path (loop-queue.ts), and the comment a denial leaves. Which events a move fires, and
 * their payloads, are decided in src/graph-loop/plan.ts.
 */

interface LoopDelivery {
  readonly run: string;
  readonly ref: string;
  readonly name: LoopObservedName;
  readonly payload: Readonly<Record<string, unknown>>;
}

const DAEMON: GraphActor = { kind: "daemon", id: "the-loop" };

// Keyed by the dispatcher's one context object: identity is all a queue needs of it.
const queues = new WeakMap<object, LoopQueue<LoopDelivery>>();

function queueOf(ctx: ContextNeeds<"hooks", "events">): LoopQueue<LoopDelivery> {
  let queue = queues.get(ctx);
  if (queue === undefined) {
    const events = ctx.options.events;
    queue = new LoopQueue<LoopDelivery>(
      async (item) => {
        const outcome = await ctx.hooks.runLoop(item.name, item.payload as LoopPayloadOf<typeof item.name>, { workItem: item.ref });
        // Labels are the observe-only answer: recorded with the hook's name, never applied.
        for (const annotation of outcome.annotations) {
          events.emit("hooks.loop_annotated", {
            point: item.name,
            hook: annotation.hook,
            labels: Object.entries(annotation.labels).map(([name, text]) => `${name}=${text}`),
            loop_run_id: item.run,
            work_item: item.ref,
          });
        }
      },
      (item, waiting) => events.emit("hooks.loop_dropped", { point: item.name, loop_run_id: item.run, waiting, work_item: item.ref }),
    );
    queues.set(ctx, queue);
  }
  return queue;
}

/** Waits for the observe-only loop events still queued (the daemon's drain). */
export async function drainLoopEvents(ctx: ContextNeeds<never>): Promise<void> {
  await queues.get(ctx)?.drain();
}

/** Queues an observe-only loop event behind its run's earlier ones; never waits for its hooks. */
export function queueLoopEvent(ctx: ContextNeeds<"hooks", "events">, ref: string, name: LoopObservedName, payload: Readonly<Record<string, unknown>>): void {
  const run = typeof payload["loop_run_id"] === "string" ? payload["loop_run_id"] : ref;
  queueOf(ctx).enqueue({ run, ref, name, payload });
}

/** What naming the item's session in a loop event reads: its record, and its usage against routing.budget. */
export type LoopSessionContext = ContextNeeds<"now" | "routing", "registry" | "budgets">;

/** The item's session as the loop events name it: its harness, the harness's session id, and its usage so far. */
export function loopSessionOf(ctx: LoopSessionContext, ref: string): LoopSession | undefined {
  const record = ctx.options.registry.get(ref);
  if (record === undefined || !isLive(record)) return undefined;
  const store = ctx.options.budgets;
  // Without a budget store nothing is counted (a dispatcher built without one): no usage is said.
  const usage = store === undefined ? undefined : readUsage(store, ctx.routing.budget, ref, record, ctx.now());
  return { agentName: record.harness, sessionId: record.harnessSessionId, ...(usage !== undefined ? { usage } : {}) };
}

/** What planning a move's loop events, and asking its `.pre` ones, needs of the runtime. */
export interface LoopAsker {
  /** Runs a loop event's hooks (the chain's runLoop): at a `.pre` event, the first denial. */
  runLoop(name: LoopPointName, payload: Readonly<Record<string, unknown>>, ref: string): Promise<LoopOutcome>;
  /** Whether any hook runs at the event. */
  handles(name: LoopPointName): boolean;
  now(): Date;
  /** The item's session as the loop events name it. */
  session(ref: string): LoopSession | undefined;
}

/** The dispatcher's hooks, clock and registry as a LoopAsker (read at each use: a reload swaps the hooks). */
export function loopAskerOf(ctx: ContextNeeds<"hooks"> & LoopSessionContext): LoopAsker {
  return {
    runLoop: (name, payload, ref) => ctx.hooks.runLoop(name, payload as LoopPayloadOf<typeof name>, { workItem: ref }),
    handles: (name) => ctx.hooks.handles(name),
    now: () => ctx.now(),
    session: (ref) => loopSessionOf(ctx, ref),
  };
}

/** What a move needs from the runtime to plan its loop events. */
export function loopMoveInput(asker: LoopAsker, ref: string, rest: Omit<LoopMoveInput, "session" | "now" | "handled">): LoopMoveInput {
  return { ...rest, session: asker.session(ref), now: () => asker.now(), handled: (name: LoopPointName) => asker.handles(name) };
}

export type AskedMove = { readonly plan: LoopMovePlan; readonly denied?: { readonly at: LoopAsk; readonly denial: LoopDenialOf } };

/**
 * Plans the move's loop events and asks its `.pre` events, in order, before anything of it is
 * written; the first denial stops the asking. A hook that fails never denies (the chain).
 */
async function askLoopMove(asker: LoopAsker, ref: string, input: LoopMoveInput): Promise<AskedMove> {
  const plan = planLoopMove(input);
  for (const ask of plan.asks) {
    const outcome = await asker.runLoop(ask.name, ask.payload, ref);
    if (outcome.denied !== undefined) return { plan, denied: { at: ask, denial: outcome.denied } };
  }
  return { plan };
}

/** The state and effects a move writes: its plan's, or what its denial makes of it. */
export function writtenMove(input: LoopMoveInput, asked: AskedMove): WrittenMove {
  if (asked.denied === undefined) return { state: asked.plan.state, effects: asked.plan.effects };
  return { ...deniedMove({ ...input, plan: asked.plan, at: asked.denied.at, denial: asked.denied.denial }), denied: true };
}

/** What a move writes: its state and effects, loop events woven in; `denied` when a `.pre` hook denied it. */
export interface WrittenMove {
  readonly state: GraphState;
  readonly effects: readonly RunEffect[];
  readonly denied?: true;
}

/** A move whose item changed while its `.pre` hooks decided: refused, to be given again. */
export const STALE_MOVE: Refusal = {
  kind: "refuse",
  reasonCode: "not-current",
  reason: "the item moved while a loop hook decided on this move; give it again",
};

/** A new run (startRun): loop.started, then loop.generation.pre. */
export function loopStartMove(graph: Graph, transition: Transition, actor: GraphActor, event: InboundEvent): LoopRest {
  const kind = event.source === "cli" ? "cli" : COMMENT_KINDS.has(event.kind) ? "comment" : "event";
  return { graph, before: undefined, transition, actor, origin: { kind, ref: event.deliveryId } };
}

/**
 * A gate answer: loop.gate.pre, the gate's attempt ended, and the next generation on changes
 * requested. On a run a block ended, the answer begins a new run: `origin` is what it came in.
 */
export function loopGateMove(
  graph: Graph,
  before: GraphState,
  transition: Transition,
  actor: GraphActor,
  decision: GateDecision,
  origin?: GraphState["origin"],
): LoopRest {
  const approved = decision === "approved";
  return {
    graph,
    before,
    transition,
    actor,
    ...(origin !== undefined && runHasEnded(before) ? { origin } : {}),
    gate: { gateId: before.node, decision },
    left: { node: before.node, taskStatus: approved ? "passed" : "failed", error: approved ? null : "changes requested", details: { decision } },
  };
}

/** A decided claim: the attempt ended (its checks), and loop.gate.pre when it steps into a terminal node. */
export function loopClaimMove(
  graph: Graph,
  before: GraphState,
  transition: Transition,
  actor: GraphActor,
  node: string,
  results: readonly CheckResult[],
): LoopRest {
  const failed = results.find((result) => !result.passed);
  return {
    graph,
    before,
    transition,
    actor,
    left: {
      node,
      taskStatus: failed === undefined ? "passed" : "failed",
      error: failed?.message ?? null,
      details: { checks: results.map((result) => ({ check: result.check, passed: result.passed })) },
    },
  };
}

/** An operator's force: the node left (if the item was on one), or a new run begun at the target. */
export function loopForceMove(
  graph: Graph,
  before: GraphState | undefined,
  transition: Transition,
  actor: GraphActor,
  forced: { readonly to: string; readonly reason: string },
): LoopRest {
  // A new run (none before, or the one before ended): no attempt of it was at a node to leave.
  if (before === undefined || runHasEnded(before)) return { graph, before, transition, actor, origin: { kind: "cli" } };
  return {
    graph,
    before,
    transition,
    actor,
    left: { node: before.node, taskStatus: "forced", error: null, details: { to: forced.to, reason: forced.reason } },
  };
}

/** loop.terminal, from the run-ended effect: the run's last loop event. */
export function queueLoopTerminal(ctx: ContextNeeds<"hooks", "events"> & LoopSessionContext, graph: Graph, state: GraphState, status: string): void {
  if (!ctx.hooks.handles("loop.terminal")) return;
  // A block that ended the loop run said so then: the item's record ending now sends nothing on that id.
  if (endedByBlockBefore(graph, state)) return;
  const actor = state.history[state.history.length - 1]?.actor ?? DAEMON;
  const payload = loopPayload(
    "loop.terminal",
    {
      timestamp: nextLoopTimestamp(state.lastLoopAt, ctx.now()),
      graph,
      state,
      session: loopSessionOf(ctx, state.ref),
      subject: { node: state.node, actor },
    },
    {
      status,
      cause: causeOf(status, state.reasonCode),
      reason_code: status === "done" ? null : (state.reasonCode ?? null),
      details: state.denial !== undefined ? { hook: state.denial.hook, point: state.denial.point } : null,
    },
    // agh carries a denial's reason in details; reason_code stays hook_denied, as the requirement says.
    state.denial !== undefined && state.denial.reason !== "" ? { deny_reason: state.denial.reason } : {},
  );
  queueLoopEvent(ctx, state.ref, "loop.terminal", payload);
  // Here the-loop releases what waited on the run. Nothing does yet: a start of the same item is
  // not held behind a run (it continues the run), and runs do not nest, so no parent waits.
}

const REFUSALS = new Set(["claim-refused", "gate-refused", "gate-ambiguous"]);

/**
 * Whether the record's run had already ended by a block before this end (an item closed or stopped
 * while blocked): its last entry before this one, refusals aside, is a block that ends the run —
 * found from what the record keeps, since the end replaced the block's reason code.
 */
export function endedByBlockBefore(graph: Graph, state: GraphState): boolean {
  const earlier = state.history.slice(0, -1).filter((entry) => !REFUSALS.has(entry.kind));
  const prior = earlier[earlier.length - 1];
  if (prior?.kind !== "blocked" || prior.node !== state.node) return false;
  if (state.status === "blocked") return state.reasonCode !== undefined && RUN_ENDING_BLOCKS.has(state.reasonCode);
  // The block's own code, where the record kept it; an older record's is found from what it does keep.
  if (prior.reasonCode !== undefined) return RUN_ENDING_BLOCKS.has(prior.reasonCode);
  if (state.denial?.point === "loop.gate.pre") return true;
  const node = graph.nodes.get(state.node);
  if (node === undefined) return false;
  if ((state.attempts[node.id] ?? 0) >= node.maxAttempts) return true;
  const outcome = state.outcomes[node.id];
  return outcome !== undefined && !graph.edges.some((edge) => edge.from === node.id && edge.on === outcome);
}

/** the-loop's word for what ended the run; loopPayload sends agh's (loop-vocabulary.ts `aghCause`). */
function causeOf(status: string, reasonCode: string | undefined): string {
  if (status === "done") return "node";
  if (reasonCode === HOOK_DENIED) return "contract";
  if (status === "exhausted") return "iteration_cap";
  if (status === "stalled") return "no_progress";
  if (status === "canceled") return reasonCode === "item-closed" ? "closed" : "stopped";
  // Failed or blocked by the graph's own rules (a claim out of attempts, a node's failure).
  return reasonCode ?? "contract";
}

/** The marked comment a loop hook's denial leaves: the hook, the event, its reason (one line, bounded, redacted). */
export function loopDenialText(ref: string, point: string, hook: string, reason: string, node: string, status: "failed" | "blocked"): string {
  const outcome =
    status === "failed"
      ? `The run ended \`failed\` (\`${HOOK_DENIED}\`) before the generation began: no assignment was given. A new start of the item begins a new run.`
      : `The run is \`blocked\` at node \`${node}\`, which the item keeps with its label. An authorized person's gate answer, or \`the-loop graph force\`, resumes it.`;
  return markSelfAuthored(
    [
      `🛑 **the-loop**: the loop hook \`${redactKnownSecrets(hook)}\` denied \`${point}\` on \`${ref}\`.`,
      "",
      `> ${commentReason(reason) || "no reason given"}`,
      "",
      outcome,
    ].join("\n"),
  );
}

/** A move's `.pre` events asked ahead of its transaction, on the state it was planned from. */
export interface AskedAhead {
  readonly seen: GraphState | undefined;
  readonly input: LoopMoveInput;
  readonly asked: AskedMove;
}

/** A move's loop events, less what the runtime adds (the session, the clock, which hooks run). */
export type LoopRest = Omit<LoopMoveInput, "session" | "now" | "handled">;

/**
 * Asks a move's `.pre` events outside the record's lock (a hook may take its whole timeout, and
 * the lock's waiters give up after seconds), on the state the move was computed from.
 */
export async function askAhead(asker: LoopAsker, ref: string, seen: GraphState | undefined, rest: LoopRest): Promise<AskedAhead> {
  const input = loopMoveInput(asker, ref, rest);
  return { seen, input, asked: await askLoopMove(asker, ref, input) };
}

/**
 * Inside the move's transaction: what to write. The hooks' answers stand when the item is as
 * they were asked about it; a move that changed meanwhile and has a `.pre` event to ask is
 * stale (undefined: the caller refuses it, to be tried again), one without is planned afresh.
 * `always`: a move that cannot be refused (a run's start) is written with its events, unasked, when it went stale.
 */
export function committedMove(
  asker: LoopAsker,
  ref: string,
  current: GraphState | undefined,
  ahead: AskedAhead | undefined,
  fresh: () => LoopRest,
  always = false,
): WrittenMove | undefined {
  if (ahead !== undefined && sameMoment(ahead.seen, current)) return writtenMove(ahead.input, ahead.asked);
  const input = loopMoveInput(asker, ref, fresh());
  const plan = planLoopMove(input);
  return plan.asks.length === 0 || always ? { state: plan.state, effects: plan.effects } : undefined;
}

function sameMoment(a: GraphState | undefined, b: GraphState | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.loopRunId === b.loopRunId && a.updatedAt === b.updatedAt && a.node === b.node && a.status === b.status && a.generation === b.generation;
}
