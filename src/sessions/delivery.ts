import { messageOf } from "../errors.js";
import { ciDeliveryPort, prepareCiFailure } from "../feedback/index.js";
import { SessionMissingError, TargetLiveError } from "../harness/runner.js";
import { deliveryKeys } from "../routing/inbound.js";
import { graphContext } from "../graph-run/assignment.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { WorkItem } from "../workitem/index.js";
import { parseWorkItemRef } from "../workitem/index.js";
import { SESSION_CLOSED, SETTLED, claimerGone, closedAs, dispatchFailed, handBack, sameLiveSession, settle, turnOf } from "./context.js";
import type { ContextNeeds, HandleResult, Turn } from "./context.js";
import { inputReceived } from "./hook-points.js";
import { boundedInputText, deliveredInputKind } from "./lifecycle.js";
import { endIfClosed, pasteIntoPane, respawn, untilReady } from "./pane.js";
import { renderEventPrompt } from "./prompts.js";
import type { PromptInput } from "./prompts.js";
import { RECENT_DELIVERIES_MAX } from "../registry/record.js";
import type { SessionRecord } from "../registry/record.js";

/**
 * Delivery: an event into a live session's harness. Before the paste, the record is read again
 * (a pause or close by another process holds the text off) and the harness waited for; a pane
 * found missing is either a harness its claimer is still starting (waited for, bounded by
 * harnessStartBound) or a dead one (started again, with the text as its prompt).
 */

/**
 * The longest a claimed session's harness takes to start in the claimer's process without a
 * checkout, from the claim to the harnessStartedAt mark, summed from the timeouts of each step:
 * the tmux runner's spawn (at most six tmux calls, each stopped after 10 s), a tracker lookup of
 * the item's title for the boot prompt (the GitHub client's 30 s request timeout) and a record
 * write (15 s, the record lock's wait) — 105 s, rounded up.
 */
export const HARNESS_START_BOUND_MS = 120_000;
/** The longest pause between two reads of a record while waiting for its harness to start. */
const HARNESS_START_POLL_MAX_MS = 250;

/** How putting text into a session's harness ended (see paste). */
export type PasteResult = "pasted" | "closed" | "paused" | "spawn-failed" | "interrupted";

/** What a prompt template is rendered from; the title is looked up when the event does not carry it. */
export async function promptInput(
  ctx: ContextNeeds<never, "graph" | "trackers">,
  workItem: WorkItem,
  event: InboundEvent,
  record?: SessionRecord,
): Promise<PromptInput> {
  let title = event.title;
  if (title === undefined) {
    try {
      title = (await ctx.options.trackers.forRef(workItem.ref).getItem(parseWorkItemRef(workItem.ref))).title;
    } catch {
      title = undefined;
    }
  }
  return {
    workItem,
    event,
    title,
    askCommand: askCommandFor(workItem.ref),
    awaitingQuestion: record?.awaitingInput?.question,
    graphContext: await graphContextOf(ctx, workItem.ref),
  };
}

/** How the session asks a person something about `ref`. */
function askCommandFor(ref: string): string {
  return `the-loop ask --work-item ${ref} "your question"`;
}

/** `{{graph_context}}` for the item: empty without a graph or a readable run. */
async function graphContextOf(ctx: ContextNeeds<never, "graph">, ref: string): Promise<string> {
  const setup = ctx.options.graph;
  if (setup === undefined) return "";
  try {
    const state = await setup.states.get(ref);
    const graph = state === undefined ? undefined : setup.graphs.get(state.graph);
    return graph === undefined ? "" : graphContext(graph, state);
  } catch {
    // A damaged record is reported where the graph reads it to move; a prompt goes without it.
    return "";
  }
}

/**
 * The event as input for `record`'s session. `from`: the event's turn, kept when it is on the
 * record's own work item (an event redirected to another item's session is bound afresh).
 */
export async function deliverEvent(
  ctx: ContextNeeds<
    "accepting" | "forget" | "heavy" | "hooks" | "inputSeen" | "now" | "policy" | "react" | "readyAt" | "routing" | "self" | "templates" | "options"
  >,
  record: SessionRecord,
  from: Turn,
): Promise<HandleResult> {
  const workItem = record.workItem as WorkItem;
  const { event } = from;
  const turn: Turn = from.workItem.ref === workItem.ref ? { ...from, workItem } : turnOf(ctx, workItem, event);
  if (record.status === "paused") return settle(turn, "session-paused");
  if (deliveryKeys(event).some((id) => record.recentDeliveries.includes(id))) return settle(turn, "already-processed");
  ctx.react(event, "started");
  const inputKind = deliveredInputKind(event, record);
  if (inputKind !== undefined) await inputReceived(ctx, workItem, event, { kind: inputKind, text: boundedInputText(event.body) });
  // A CI failure is counted for its pull request and told in words of its own (feedback/delivery.ts).
  const ci =
    event.kind === "check_failed"
      ? await prepareCiFailure(ciDeliveryPort({ attempts: ctx.options.ciAttempts, trackers: ctx.options.trackers, events: ctx.options.events, now: ctx.now }), {
          event,
          workItem: turn.workItem,
          turnEvents: turn.events,
          feedback: ctx.policy.feedback,
          askCommand: askCommandFor(workItem.ref),
        })
      : undefined;
  if (ci?.kind === "drop") return settle(turn, ci.reason);
  if (ci?.kind === "settled") return SETTLED;
  const text = ci?.text ?? renderEventPrompt(ctx.templates, await promptInput(ctx, workItem, event, record));
  let pasted: PasteResult;
  try {
    pasted = await paste(ctx, record, text);
  } catch (error) {
    await ci?.release();
    throw error;
  }
  if (pasted !== "pasted") await ci?.release();
  if (pasted === "closed") return settle(turn, SESSION_CLOSED);
  if (pasted === "paused") return settle(turn, "session-paused");
  if (pasted === "spawn-failed" || pasted === "interrupted") {
    // Not dropped: the session this event was for never got a harness (its claimer's spawn
    // failed), or this process stopped waiting for it. Handed out again, the event is decided
    // afresh — a failed spawn left no live session, so it may start one itself.
    return handBack(
      ctx,
      turn,
      "deliver",
      pasted === "spawn-failed"
        ? "the session's harness could not be started by the process that claimed it; the event is tried again"
        : "the-loop stopped while the session's harness was still being started by another process; the event is tried again",
    );
  }
  await ctx.options.registry.update(workItem.ref, (current) => {
    const { awaitingInput: _answered, ...rest } = current;
    const keys = deliveryKeys(event);
    const recent = [...rest.recentDeliveries.filter((id) => !keys.includes(id)), ...keys];
    return { ...rest, lastEventAt: ctx.now().toISOString(), recentDeliveries: recent.slice(-RECENT_DELIVERIES_MAX) };
  });
  turn.events.emit("dispatch.succeeded", { tmux_target: record.tmuxTarget });
  ci?.delivered();
  ctx.react(event, "completed");
  await recordLink(ctx, turn);
  return SETTLED;
}

/**
 * What pasting text into a live session needs: the pane and its readiness, the record read again,
 * a respawn when the pane is gone. Every move that delivers an assignment needs it too.
 */
export type PasteContext = ContextNeeds<
  "accepting" | "heavy" | "now" | "readyAt" | "routing" | "self",
  "events" | "harnessStartWaitMs" | "prepareHarness" | "registry" | "resumeProbeMs" | "runner" | "sessionEnv" | "workspaces"
>;

/**
 * Puts `text` into the session's harness, starting the harness again (with `text` as its
 * prompt) when its pane died. `closed`: the session was closed by another process meanwhile,
 * and nothing was started for it; `paused`: it was paused meanwhile, and nothing was pasted;
 * `spawn-failed`: it was closed because its claimer's start failed, so its harness never ran;
 * `interrupted`: this dispatcher began to drain while it waited for that start.
 *
 * A pane missing from a session whose harness is not marked started yet (harnessStarted) is
 * not a dead harness: its claimer — another process, most likely — is still starting it, and
 * a respawn here would race that start (the claimer's spawn would then fail over the harness
 * started here, and close the session under it). The start is waited for (awaitHarnessStart);
 * only a claimer known to run no more (claimerGone), or one that has not marked it within
 * harnessStartBound, is taken for dead.
 */
export async function paste(ctx: PasteContext, record: SessionRecord, text: string): Promise<PasteResult> {
  const registry = ctx.options.registry;
  const ref = record.workItem.ref;
  let known = record;
  let waited = false;
  let raced = false;
  for (;;) {
    await untilReady(ctx, known);
    // Read again right before the paste: a pause or a close by another process (the CLI) since
    // the caller read the record — during the grace above, or a tracker lookup for the prompt —
    // must hold this text off (docs/control.md#the-keywords), as it would had it come first. Nothing is pasted into a
    // paused session or a closed one.
    const now = registry.get(ref);
    if (now === undefined || !sameLiveSession(now, record)) return closedAs(now, record);
    if (now.status === "paused") return "paused";
    try {
      await pasteIntoPane(ctx, record, text);
      return "pasted";
    } catch (error) {
      if (!(error instanceof SessionMissingError)) throw error;
    }
    // A pane gone because another process closed the session (`the-loop sessions close`) is not
    // a dead harness: starting one again would run an agent for a closed session, in a
    // checkout that close may have removed.
    const current = registry.get(ref);
    if (current === undefined || !sameLiveSession(current, record)) return closedAs(current, record);
    if (!waited && !harnessStarted(ctx, current)) {
      waited = true;
      const started = await awaitHarnessStart(ctx, current);
      if (typeof started !== "string") {
        // Started by its claimer: delivered like any input, after the harness's startup grace.
        known = started;
        continue;
      }
      if (started !== "abandoned") return started;
      // Claimed, never started: the claimer died between its claim and its spawn.
    }
    try {
      const outcome = await ctx.heavy.use(() => respawn(ctx, current, text));
      if (outcome === "not-live") return closedAs(registry.get(ref), record);
      if (outcome === "started-elsewhere") {
        // Another process (the daemon's supervision, most likely) started it again since the
        // record was read: the text goes there, once its pane is up.
        if (raced || !(await untilPaneLive(ctx, current.tmuxTarget))) {
          throw new Error("the session's harness is being started again by another process and its pane did not come up; the event is tried again");
        }
        raced = true;
        known = registry.get(ref) ?? current;
        continue;
      }
    } catch (error) {
      // Another process started the harness between the delivery above and this respawn (two
      // deliveries finding one dead pane, or a claimer slower than the bound): the text goes there.
      if (!(error instanceof TargetLiveError) || raced) throw error;
      raced = true;
      known = registry.get(ref) ?? current;
      continue;
    }
    if (await endIfClosed(ctx, record)) return "closed";
    return "pasted";
  }
}

/** How long a delivery waits for the pane of a harness another process is starting again. */
const RESTARTED_ELSEWHERE_WAIT_MS = 30_000;

/** Polls the pane until it is live (true), or RESTARTED_ELSEWHERE_WAIT_MS pass or the dispatcher drains (false). */
async function untilPaneLive(ctx: ContextNeeds<"accepting", "runner">, target: string): Promise<boolean> {
  const deadline = performance.now() + RESTARTED_ELSEWHERE_WAIT_MS;
  for (;;) {
    if ((await ctx.options.runner.probe(target)) === "live") return true;
    if (!ctx.accepting || performance.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Whether the session's harness has been started, so that a pane missing from tmux means it
 * died: marked (harnessStartedAt), or claimed longer ago than a start can take — a record
 * written before the mark existed, or one whose claimer died before it started the harness.
 */
function harnessStarted(ctx: ContextNeeds<"now" | "routing", "harnessStartWaitMs" | "workspaces">, session: SessionRecord): boolean {
  return session.harnessStartedAt !== undefined || harnessStartLeftMs(ctx, session) <= 0;
}

/** How much of harnessStartBound is left since the session was claimed (by its createdAt). */
function harnessStartLeftMs(ctx: ContextNeeds<"now" | "routing", "harnessStartWaitMs" | "workspaces">, session: SessionRecord): number {
  const age = ctx.now().getTime() - Date.parse(session.createdAt);
  if (Number.isNaN(age)) return 0;
  return harnessStartBound(ctx, session) - Math.max(0, age);
}

/**
 * How long the claimer of `session` may take to start its harness, from its claim to its mark:
 * HARNESS_START_BOUND_MS, plus — when the session gets a checkout — the checkout's own worst
 * case: the wait for the repository's lock, which another process's checkout may hold as long
 * as its git commands may run (the workspace's own lock timeout, 5 × gitTimeoutSeconds + 10 s),
 * and then this checkout's git commands, as long again. Local work items never get a checkout.
 */
function harnessStartBound(ctx: ContextNeeds<"routing", "harnessStartWaitMs" | "workspaces">, session: SessionRecord): number {
  if (ctx.options.harnessStartWaitMs !== undefined) return ctx.options.harnessStartWaitMs;
  const workspace = ctx.routing.workspace;
  const checkout = ctx.options.workspaces !== undefined && workspace.enabled && session.workItem.tracker !== "local";
  return HARNESS_START_BOUND_MS + (checkout ? 2 * (5 * workspace.gitTimeoutSeconds * 1000 + 10_000) : 0);
}

/**
 * Waits for the claimer of `session` (unmarked, live) to mark its harness started, reading the
 * record again after pauses that double up to HARNESS_START_POLL_MAX_MS, until what is left of
 * harnessStartBound has passed. The marked record; otherwise `closed` or `spawn-failed` when the
 * session was closed meanwhile, `interrupted` when this dispatcher began to drain (the event is
 * handed back rather than holding up the drain for the rest of the bound), `abandoned` when
 * the record is still unmarked and its claimer runs no more (claimerGone) or the bound passed.
 */
async function awaitHarnessStart(
  ctx: ContextNeeds<"accepting" | "now" | "routing" | "self", "harnessStartWaitMs" | "registry" | "workspaces">,
  session: SessionRecord,
): Promise<SessionRecord | Exclude<PasteResult, "pasted" | "paused"> | "abandoned"> {
  const ref = session.workItem.ref;
  // Real time, not ctx.now(): how long this process waits, whatever clock stamps the records.
  const deadline = performance.now() + harnessStartLeftMs(ctx, session);
  let pause = 10;
  let current = session;
  for (;;) {
    const left = deadline - performance.now();
    if (left <= 0 || claimerGone(ctx.self, current)) return "abandoned";
    if (!ctx.accepting) return "interrupted";
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)));
    pause = Math.min(pause * 2, HARNESS_START_POLL_MAX_MS);
    const read = ctx.options.registry.get(ref);
    if (read === undefined || !sameLiveSession(read, session)) return closedAs(read, session);
    if (read.harnessStartedAt !== undefined) return read;
    current = read;
  }
}

/**
 * An event about a pull request reached the session of another work item: from now on the PR's
 * events go there even when they no longer name that item. The binding and the record's list
 * are written once; a failure to write them is reported and does not undo the delivery.
 */
export async function recordLink(ctx: ContextNeeds<"now", "events" | "links" | "registry">, turn: Turn): Promise<void> {
  const { workItem, event } = turn;
  const pullRequest = event.pullRequest?.ref;
  if (pullRequest === undefined || pullRequest === workItem.ref) return;
  const { links, registry, events } = ctx.options;
  const at = ctx.now();
  try {
    const changed = links ? await links.bind(pullRequest, workItem, event.linkedBy?.[workItem.ref] ?? "closing-reference", at) : undefined;
    const stored = links?.get(pullRequest);
    // An explicit binding to another item, made since this event was routed, keeps its place:
    // the PR's events no longer come here, so the record must not say they do.
    if (stored !== undefined && stored.workItem.ref !== workItem.ref) return;
    // The record says how the binding in force was made, which an earlier event may have decided.
    const source = stored !== undefined && stored.workItem.ref === workItem.ref ? stored.source : (event.linkedBy?.[workItem.ref] ?? "closing-reference");
    let added = false;
    await registry.update(workItem.ref, (record) => {
      if (record.pullRequests?.some((link) => link.ref === pullRequest)) return undefined;
      added = true;
      return { ...record, pullRequests: [...(record.pullRequests ?? []), { ref: pullRequest, source, linkedAt: at.toISOString() }] };
    });
    if (changed ?? added) events.emit("session.pr_linked", { work_item: workItem.ref, pull_request: pullRequest, linked_by: source });
  } catch (error) {
    dispatchFailed(turn.events, "link", `the delivery succeeded, but binding ${pullRequest} to it failed: ${messageOf(error)}`);
  }
}
