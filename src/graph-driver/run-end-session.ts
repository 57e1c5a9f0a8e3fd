import { messageOf } from "../errors.js";
import { isLive } from "../registry/record.js";
import { blockedText, closeAfterField, runEndedAt, runEndedText, sessionCloseDue } from "../graph-run/session-notices.js";
import type { BlockWhat } from "../graph-run/session-notices.js";
import type { GraphState } from "../graph-run/state.js";
import type { Graph } from "../graph/types.js";
import { closeSession } from "../sessions/close.js";
import { closeOptions } from "../sessions/context.js";
import type { ContextNeeds } from "../sessions/context.js";
import { paste } from "../sessions/delivery.js";
import type { MoveContext } from "./move-context.js";

/**
 * The agent is told what became of its run, and its session does not outlive the run for long:
 * when a run ends its session gets one message (runEndedText) and is closed
 * `graph.closeAfterMinutes` later (at once for 0, never for `never`), a paused session too (it
 * is not typed into, so it is closed untold: docs/graph.md, "The session when its run ends"); when a gate or a check
 * blocks the item under a working session, the session gets the gate's message (blockedText).
 * The texts and the close decision are pure (graph-run/session-notices.ts); this pastes and
 * closes. Nothing here throws into the move it follows: a failure is recorded instead.
 */

/** The reason a session closed this way carries (`session.closed`, `sessions list`). */
export const RUN_ENDED_CLOSE = "run-ended";

type TellOutcome = "pasted" | "no-session" | "paused" | "not-started" | "no-harness" | "closed" | "spawn-failed" | "interrupted" | "failed";

/**
 * Pastes `text` into the item's live session when its harness runs. A session still starting (no
 * harnessStartedAt: the run ended or blocked while its boot prompt was being made) is not waited
 * for — its boot prompt says where the run stands — and a dead harness is not started again just
 * to be told.
 */
async function tellSession(ctx: MoveContext, ref: string, text: string): Promise<TellOutcome> {
  const record = ctx.options.registry.get(ref);
  if (record === undefined || !isLive(record)) return "no-session";
  if (record.status === "paused") return "paused";
  if (record.harnessStartedAt === undefined) return "not-started";
  if ((await ctx.options.runner.probe(record.tmuxTarget)) !== "live") return "no-harness";
  return paste(ctx, record, text);
}

async function told(
  ctx: MoveContext,
  fields: {
    readonly work_item: string;
    readonly graph: string;
    readonly node: string;
    readonly about: string;
    readonly status: string;
    readonly close_after: string;
  },
  text: string,
): Promise<TellOutcome> {
  let outcome: TellOutcome;
  try {
    outcome = await tellSession(ctx, fields.work_item, text);
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", {
      work_item: fields.work_item,
      graph: fields.graph,
      node: fields.node,
      effect: "tell-session",
      error: messageOf(error),
    });
    outcome = "failed";
  }
  ctx.options.events.emit("graph.session_told", { ...fields, outcome });
  return outcome;
}

/** The run ended (`state` as written): the session is told, and with closeAfterMinutes 0 closed at once. */
export async function tellRunEnded(ctx: MoveContext, graph: Graph, state: GraphState): Promise<void> {
  const closeAfterMs = ctx.options.graph?.closeAfterMs;
  const outcome = await told(
    ctx,
    { work_item: state.ref, graph: graph.name, node: state.node, about: "run-ended", status: state.status, close_after: closeAfterField(closeAfterMs) },
    runEndedText(graph, state, closeAfterMs),
  );
  // A session still starting is closed by the next check (closeEndedRunSession), once its harness ran.
  if (closeAfterMs === 0 && outcome !== "not-started") await closeEndedRunSession(ctx, state.ref);
}

/** A gate or a check blocked the item at `node`: the working session is told with the gate's message. */
export async function tellBlocked(ctx: MoveContext, graph: Graph, ref: string, node: string, what: BlockWhat, reason: string): Promise<void> {
  await told(
    ctx,
    { work_item: ref, graph: graph.name, node, about: "blocked", status: "blocked", close_after: "" },
    blockedText({ ref, graph: graph.name, node, what, reason }),
  );
}

/** The items whose live session is due to close because its run ended (one listing of the live sessions). */
export async function endedRunSessions(ctx: ContextNeeds<"now", "graph" | "registry">): Promise<string[]> {
  const setup = ctx.options.graph;
  if (setup === undefined || setup.closeAfterMs === undefined) return [];
  const due: string[] = [];
  for (const record of ctx.options.registry.list({ status: "live" }).records) {
    // Paused or not: a pause holds events back from an agent at work, and the run's end leaves no work to hold back.
    if (record.harnessStartedAt === undefined) continue;
    // A run record that cannot be read closes nothing: the session stays, and the damaged record is reported where it is read.
    const state = await setup.states.get(record.workItem.ref).catch(() => undefined);
    if (state !== undefined && closeDue(ctx, state, record.createdAt)) due.push(record.workItem.ref);
  }
  return due;
}

function closeDue(ctx: ContextNeeds<"now", "graph">, state: GraphState, sessionCreatedAt: string): boolean {
  return sessionCloseDue({
    status: state.status,
    endedAt: runEndedAt(state),
    sessionCreatedAt,
    now: ctx.now(),
    closeAfterMs: ctx.options.graph?.closeAfterMs,
  });
}

/**
 * Closes the item's session if its run ended `graph.closeAfterMinutes` ago or more, decided
 * again on the records as they are now (a new run or a close since wins; a pause does not hold
 * it). The one close
 * path (sessions/close.ts): the harness ended, the tmux session kept for its transcript as
 * `routing.tmux.keepSessionOnClose` says, `session.closed` with reason `run-ended`, and the
 * item's standing start cleared, so the daemon does not start the finished item again.
 */
export async function closeEndedRunSession(ctx: MoveContext, ref: string): Promise<boolean> {
  const setup = ctx.options.graph;
  if (setup === undefined) return false;
  try {
    const record = ctx.options.registry.get(ref);
    if (record === undefined || !isLive(record) || record.harnessStartedAt === undefined) return false;
    const state = await setup.states.get(ref);
    if (state === undefined || !closeDue(ctx, state, record.createdAt)) return false;
    return (await closeSession(closeOptions(ctx), ref, RUN_ENDED_CLOSE)) !== undefined;
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", { work_item: ref, graph: "", node: "", effect: "close-ended-session", error: messageOf(error) });
    return false;
  }
}
