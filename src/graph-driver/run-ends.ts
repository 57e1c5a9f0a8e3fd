import { setTimeout as delay } from "node:timers/promises";
import type { ControlSource } from "../control/types.js";
import { messageOf } from "../errors.js";
import { END_REASON_CODES, endRun, stallReason } from "../graph-run/outcomes.js";
import type { EndInput } from "../graph-run/outcomes.js";
import type { GraphState } from "../graph-run/state.js";
import { isFinalGraphStatus } from "../graph/types.js";
import type { Graph, GraphActor } from "../graph/types.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { ContextNeeds } from "../sessions/context.js";
import type { MoveContext } from "./move-context.js";
import { movePorts } from "./carry-out.js";
import { commitMove, STAY } from "./move.js";

/**
 * The ends of a run the daemon decides itself, at their call sites: `canceled` when the item is
 * closed (closing.ts, the dispatcher) or stopped (commands.ts), and `stalled` when a run made no
 * progress within `graph.stallAfterMinutes` (checked every poll interval, watchForStalls). Each
 * is the pure advance's `endRun`, a move (graph-move.ts): committed with its effects journalled
 * and then carried out, so its `run-ended` is where what waited on the run is released. None of
 * these throws: the close or stop it rides on must go on, so a failure is recorded instead
 * (`graph.effect_failed`, effect `run-ended`).
 */

const DAEMON: GraphActor = { kind: "daemon", id: "the-loop" };

/** How an end is decided under the item's lock, on the record as it is then; undefined: the run goes on. */
type EndDecision = (graph: Graph, state: GraphState, at: Date) => EndInput | undefined;

/**
 * A run on a graph the config no longer has is still ended: the end names the graph and the node,
 * and enters none.
 */
function graphOrStandIn(ctx: ContextNeeds<never, "graph">, state: GraphState): Graph {
  return ctx.options.graph?.graphs.get(state.graph) ?? { name: state.graph, source: "", start: state.node, nodes: new Map(), edges: [] };
}

/** Ends the item's run as `decide` says, if it is under way; the record as ended, or undefined. */
async function endItemRun(ctx: MoveContext, ref: string, decide: EndDecision): Promise<GraphState | undefined> {
  const setup = ctx.options.graph;
  if (setup === undefined) return undefined;
  try {
    const ended = await commitMove<never>(movePorts(ctx, setup.states), {
      ref,
      seen: undefined,
      graphOf: (state) => (state !== undefined ? graphOrStandIn(ctx, state) : setup.defaultGraph),
      decide: (graph, current) => {
        if (current === undefined || isFinalGraphStatus(current.status)) return STAY;
        const input = decide(graph, current, ctx.now());
        if (input === undefined) return STAY;
        const transition = endRun(graph, current, input);
        return transition.kind === "refuse" ? STAY : { kind: "move", transition };
      },
    });
    return ended.kind === "moved" ? ended.state : undefined;
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", { work_item: ref, graph: "", node: "", effect: "run-ended", error: messageOf(error) });
    return undefined;
  }
}

function whereText(state: GraphState): string {
  return `at node "${state.node}" (${state.status})`;
}

// ---- canceled -----------------------------------------------------------------------------------

/** The item closed (by `event.actor`, when the tracker names one): its run, if under way, ends `canceled`. */
export async function cancelRunOfClosedItem(ctx: MoveContext, ref: string, event: InboundEvent): Promise<GraphState | undefined> {
  const actor: GraphActor = event.actor ? { kind: "human", id: event.actor } : DAEMON;
  return endItemRun(ctx, ref, (_graph, state, at) => ({
    status: "canceled",
    reasonCode: END_REASON_CODES.itemClosed,
    reason: `the item was closed${event.actor ? ` by ${event.actor}` : ""} while its run was ${whereText(state)}: the run is canceled; reopening and starting the item begins a new run`,
    actor,
    at,
  }));
}

/** An applied stop (a comment's or the CLI's, already authorized): the item's run, if under way, ends `canceled`. */
export async function cancelRunOfStoppedItem(
  ctx: MoveContext,
  ref: string,
  stop: { readonly actor: string; readonly source: ControlSource },
): Promise<GraphState | undefined> {
  const actor: GraphActor = stop.source === "cli" || stop.source === "dashboard" ? { kind: "operator", id: stop.actor } : { kind: "human", id: stop.actor };
  return endItemRun(ctx, ref, (_graph, state, at) => ({
    status: "canceled",
    reasonCode: END_REASON_CODES.stopped,
    reason: `stopped by ${stop.actor} (${stop.source}) while its run was ${whereText(state)}: the run is canceled; starting the item again begins a new run`,
    actor,
    at,
  }));
}

// ---- stalled ------------------------------------------------------------------------------------

/**
 * Whether the item's session is paused: an operator's hold, which is not the agent stalling. A
 * session record that does not parse counts as not paused (its run is judged as any other).
 */
function sessionPaused(ctx: ContextNeeds<never, "registry">, ref: string): boolean {
  try {
    return ctx.options.registry.get(ref)?.status === "paused";
  } catch {
    return false;
  }
}

function stallDecision(ctx: ContextNeeds<never, "registry">, windowMs: number): EndDecision {
  return (graph, state, at) => {
    const reason = stallReason(graph, state, at, windowMs);
    if (reason === undefined || sessionPaused(ctx, state.ref)) return undefined;
    return { status: "stalled", reasonCode: END_REASON_CODES.stalled, reason, actor: DAEMON, at };
  };
}

/**
 * The items whose run looks stalled now: one listing of the state records (served from its cache
 * while the folder is unchanged), kept to the running ones. Each is decided again under its lock
 * (endStalledRun), so a claim that lands meanwhile wins.
 */
export async function stalledRuns(ctx: ContextNeeds<"now", "graph" | "registry">): Promise<string[]> {
  const setup = ctx.options.graph;
  const windowMs = setup?.stallAfterMs;
  if (setup === undefined || windowMs === undefined) return [];
  const now = ctx.now();
  const listing = await setup.states.list({ keep: (state) => state.status === "running" });
  const decide = stallDecision(ctx, windowMs);
  return listing.records
    .filter((state) => setup.graphs.has(state.graph) && decide(graphOrStandIn(ctx, state), state, now) !== undefined)
    .map((state) => state.ref);
}

/** Ends the item's run `stalled` if it still is; whether it did. */
export async function endStalledRun(ctx: MoveContext, ref: string): Promise<boolean> {
  const windowMs = ctx.options.graph?.stallAfterMs;
  if (windowMs === undefined) return false;
  const decide = stallDecision(ctx, windowMs);
  // A graph the config no longer has: its nodes are unknown, so nothing says the run is at an agent node.
  const ended = await endItemRun(ctx, ref, (graph, state, at) => (ctx.options.graph?.graphs.has(graph.name) ? decide(graph, state, at) : undefined));
  return ended !== undefined;
}

/** Least time between two stall checks, however short the poll interval: each is a listing. */
export const MIN_STALL_CHECK_MS = 1_000;

/**
 * Runs `check` every `intervalMs` (at least MIN_STALL_CHECK_MS) until the signal aborts; a check
 * under way when it does is finished first. `check` reports its own failures.
 */
export async function watchForStalls(check: () => Promise<unknown>, intervalMs: number, signal: AbortSignal): Promise<void> {
  const pause = Math.max(MIN_STALL_CHECK_MS, intervalMs);
  while (!signal.aborted) {
    try {
      await delay(pause, undefined, { signal });
    } catch {
      return;
    }
    await check();
  }
}
