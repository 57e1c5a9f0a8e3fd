import { controlStateOf } from "../control/plan.js";
import { messageOf } from "../errors.js";
import { lookEvery } from "./looks.js";
import { isFinalGraphStatus } from "../graph/types.js";
import { runEndedAt } from "../graph-run/session-notices.js";
import { exitText, failureText, planSupervision } from "../routing/supervision.js";
import type { SupervisionFacts } from "../routing/supervision.js";
import { markSelfAuthored, parseWorkItemRef } from "../workitem/index.js";
import { dispatchFailed, deliveryEvents, sameLiveSession, startedByOtherLiveProcess } from "../sessions/context.js";
import type { ContextNeeds } from "../sessions/context.js";
import type { PasteContext } from "../sessions/delivery.js";
import { HARNESS_START_BOUND_MS } from "../sessions/delivery.js";
import { respawn } from "../sessions/pane.js";
import type { SessionRecord } from "../registry/record.js";

/**
 * The supervision of a session's harness (routing.supervision, docs/fleet.md#supervision): the
 * daemon looks at every active session's pane each SUPERVISE_CHECK_MS, and one whose harness
 * ended — exited, killed, its pane or tmux session gone — is started again with its conversation
 * resumed, after a backoff, or, once the restarts in a row are spent, marked failed to start.
 * What to do is decided by planSupervision over the facts read here; this reads and carries out.
 *
 * Never a second agent: the restart is a compare-and-set on the start the check saw dead
 * (respawn), so of two processes finding one dead pane only one starts it again, and a start
 * another live process marked within HARNESS_START_BOUND_MS is left to it. Never after a stop,
 * a close or the end of the item's graph run: a closed record is not active, a standing stop or
 * pause holds it, and a run that ended before the harness died is its end.
 */

/** How often the daemon looks at the sessions' panes: a dead harness is noticed within about a second. */
export const SUPERVISE_CHECK_MS = 1_000;

/** The close reason a failed session's record carries beside its status. */
export const FAILED_TO_START = "failed-to-start";

export type SuperviseContext = PasteContext & ContextNeeds<"heavy", "control" | "graph" | "trackers">;

export type SupervisionOutcome = "none" | "waiting" | "restarted" | "failed";

/** Looks at one item's session, and restarts or fails it as planSupervision says. */
export async function superviseSession(ctx: SuperviseContext, ref: string): Promise<SupervisionOutcome> {
  const settings = ctx.routing.supervision;
  if (!settings.enabled) return "none";
  const { registry, runner } = ctx.options;
  const record = registry.get(ref);
  if (record === undefined || record.status !== "active" || record.harnessStartedAt === undefined) return "none";
  const pane = await runner.probe(record.tmuxTarget);
  if (pane === "live") return "none";
  const facts: SupervisionFacts = {
    status: record.status,
    pane,
    harnessStartedAt: Date.parse(record.harnessStartedAt),
    startingElsewhere: startingElsewhere(ctx, record),
    restarts: record.restarts ?? 0,
    held: held(ctx, ref),
    runEnded: await runEnded(ctx, record),
    now: ctx.now().getTime(),
  };
  const decision = planSupervision(settings, facts);
  switch (decision.kind) {
    case "none":
      return "none";
    case "wait":
      return "waiting";
    case "restart":
      return await restart(ctx, record, pane, decision.attempt);
    case "fail":
      return await fail(ctx, record, pane, decision.restarts);
  }
}

/** A start another process made recently, and still may be carrying out. */
function startingElsewhere(ctx: ContextNeeds<"now" | "self">, record: SessionRecord): boolean {
  const startedAt = Date.parse(record.harnessStartedAt ?? "");
  if (Number.isNaN(startedAt) || ctx.now().getTime() - startedAt >= HARNESS_START_BOUND_MS) return false;
  return startedByOtherLiveProcess(ctx.self, record);
}

/**
 * The item's standing command is a stop or a pause: its harness is not started again. A control
 * record that cannot be read holds it too — the item's next event or command reports the file,
 * and a harness is never restarted against a stop it cannot see.
 */
function held(ctx: ContextNeeds<never, "control">, ref: string): boolean {
  try {
    const standing = ctx.options.control.get(ref);
    return controlStateOf(standing) === "disarmed";
  } catch {
    // Damaged: held (see above).
    return true;
  }
}

/** The item's graph run ended since this session began: the harness that exits after it is at the end of its run. */
async function runEnded(ctx: ContextNeeds<never, "graph">, record: SessionRecord): Promise<boolean> {
  const setup = ctx.options.graph;
  if (setup === undefined) return false;
  let state;
  try {
    state = await setup.states.get(record.workItem.ref);
  } catch {
    // A run record that cannot be read ends nothing here: it is reported where it is read.
    return false;
  }
  if (state === undefined || !isFinalGraphStatus(state.status)) return false;
  return Date.parse(runEndedAt(state)) >= Date.parse(record.createdAt);
}

/** How the harness ended, in words; the runner's account of a dead pane when it has one. */
async function howItEnded(ctx: ContextNeeds<never, "runner">, record: SessionRecord, pane: "dead" | "absent"): Promise<string> {
  let exit;
  try {
    exit = pane === "dead" ? await ctx.options.runner.exitOf?.(record.tmuxTarget) : undefined;
  } catch {
    // Only the words of the event and the reason depend on it: "exited" says enough then.
    exit = undefined;
  }
  return exitText(pane, exit);
}

/** The first input of a harness the supervision started again. */
export function restartText(ref: string, url: string, how: string, attempt: number, maxRestarts: number): string {
  return [
    `the-loop started you again on ${ref}: your harness ${how} (restart ${attempt} of at most ${maxRestarts} in a row).`,
    `If this conversation is new to you, read the work item again (${url}) and carry on with its task; \`the-loop why --work-item ${ref}\` says where it stands.`,
  ].join("\n");
}

async function restart(ctx: SuperviseContext, record: SessionRecord, pane: "dead" | "absent", attempt: number): Promise<SupervisionOutcome> {
  const ref = record.workItem.ref;
  const settings = ctx.routing.supervision;
  const how = await howItEnded(ctx, record, pane);
  const text = restartText(ref, record.url || ref, how, attempt, settings.maxRestarts);
  const outcome = await ctx.heavy.use(() => respawn(ctx, record, text, { attempt, how }));
  return outcome === "respawned" ? "restarted" : "none";
}

/**
 * Every restart allowed was spent: the record becomes `failed` (no longer live, so its slot is
 * free and a new authorized start may begin one again), if it still holds the start the check
 * saw dead; the item's standing start is cleared inside its control lock, so neither the daemon's
 * next start nor the queue starts it again by itself; then the event and the marked comment.
 * The tmux session and the checkout stay, for the transcript and the work in it.
 */
async function fail(ctx: SuperviseContext, record: SessionRecord, pane: "dead" | "absent", restarts: number): Promise<SupervisionOutcome> {
  const ref = record.workItem.ref;
  const { registry, control, events } = ctx.options;
  const settings = ctx.routing.supervision;
  const how = await howItEnded(ctx, record, pane);
  const reason = failureText(record.harness, how, restarts, settings.maxRestarts);
  const at = ctx.now();
  let failed = false;
  let cleared: string | undefined;
  await control.transaction(ref, async (tx) => {
    await registry.update(ref, (current) => {
      if (!sameLiveSession(current, record) || current.status !== "active" || current.harnessStartedAt !== record.harnessStartedAt) return undefined;
      failed = true;
      const { awaitingInput: _unanswered, ...rest } = current;
      return { ...rest, status: "failed", closedAt: at.toISOString(), closeReason: FAILED_TO_START, failureReason: reason };
    });
    if (!failed) return;
    const standing = tx.read();
    if (standing?.command === "start" && controlStateOf(standing) === "start-requested") {
      await tx.write({ ...standing, clearedAt: at.toISOString(), clearedBy: FAILED_TO_START });
      cleared = standing.command;
    }
  });
  if (!failed) return "none";
  if (cleared !== undefined) events.emit("control.cleared", { work_item: ref, command: cleared, cleared_by: FAILED_TO_START });
  events.emit("session.failed_to_start", { work_item: ref, harness: record.harness, tmux_target: record.tmuxTarget, restarts, reason });
  try {
    await ctx.options.trackers.forRef(ref).postComment(parseWorkItemRef(ref), failedText(ref, reason));
  } catch (error) {
    dispatchFailed(
      deliveryEvents(events, ref, `supervision-${at.getTime()}`),
      "spawn",
      `the session failed to start, but its comment could not be posted: ${messageOf(error)}`,
    );
  }
  return "failed";
}

/** The comment a session that failed to start leaves on its item. */
export function failedText(ref: string, reason: string): string {
  return markSelfAuthored(
    [
      `⚠️ **the-loop's session for \`${ref}\` failed to start**: ${reason}.`,
      "",
      `Its tmux session is kept, with the harness's last words (\`the-loop sessions attach --work-item ${ref}\`). Once the cause is fixed, an authorized start (\`the-loop sessions start --work-item ${ref}\`, or the start keyword in a comment) begins a new session.`,
    ].join("\n"),
  );
}

/**
 * The daemon's look at the sessions' panes, every SUPERVISE_CHECK_MS until `signal` aborts. A
 * look that fails is reported once until one succeeds again, not every second.
 */
export function watchSessions(supervise: () => Promise<unknown>, signal: AbortSignal, warn: (message: string) => void): Promise<void> {
  return lookEvery(SUPERVISE_CHECK_MS, supervise, signal, warn, "could not look after the sessions' harnesses");
}
