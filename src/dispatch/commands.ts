import { randomUUID } from "node:crypto";
import type { ControlCommand } from "../config/schema.js";
import { controlStateOf, planControl, sessionStateOf } from "../control/plan.js";
import type { ControlOutcome, ControlRequest, ControlSource, PlanRejection } from "../control/types.js";
import { messageOf } from "../errors.js";
import type { HarnessAdapter } from "../harness/adapters.js";
import { boundExcerpt } from "../routing/inbound.js";
import type { InboundEvent } from "../routing/inbound.js";
import { armsSpawn, standingState } from "../routing/router.js";
import { chooseHarness } from "../routing/harness-choice.js";
import type { Decision } from "../routing/router.js";
import type { WorkItemState } from "../trackers/tracker.js";
import type { WorkItem } from "../workitem/index.js";
import { parseWorkItemRef } from "../workitem/index.js";
import { closeDamaged, finishClose } from "../sessions/close.js";
import { applyUnderLock, followUp } from "./command-effects.js";
import { cancelRunOfStoppedItem } from "../graph-driver/run-ends.js";
import type { CommandRun } from "./command-effects.js";
import type { CommandInput } from "./command-plan.js";
import { SETTLED, adapterOf, closeOptions, deliveryEvents, dispatchFailed, sameCommand, settle, turnOf, withSlot } from "../sessions/context.js";
import type { ContextNeeds, DispatchContext, HandleResult, Refused, Turn } from "../sessions/context.js";
import type { PasteContext } from "../sessions/delivery.js";
import { inputReceived, refuse, startRefusal } from "../sessions/hook-points.js";
import { boundedInputText } from "../sessions/lifecycle.js";
import { RegistryRecordError, isLive } from "../registry/record.js";
import { spawn } from "./spawn.js";
import { leaveQueue } from "./slots.js";

/**
 * Execution control: a command from a comment (the router chose the work item) or the CLI,
 * applied the same way — planned (command-plan.ts) and carried out by the effects table
 * (command-effects.ts) inside the item's control-record transaction, the slow part after it —
 * and the upkeep of standing commands: pending starts retried, interrupted stops finished.
 */

/**
 * The command the CLI gives (`the-loop sessions start|stop|pause|resume`), applied exactly as the
 * same keyword in a comment would be, minus authorization: shell access to this machine is the
 * authority. The facade runs it in the item's queue; the control lock keeps it from interleaving
 * with a command or a spawn in another process (the daemon). The item's labels and state are
 * read from its tracker. A start with no live session spawns here, with the daemon's own boot
 * prompt, workspace, harness and announcement, from a synthetic event (source `cli`, delivery id
 * `cli-start-<uuid>`). Throws when the item cannot be read, or a record is damaged.
 */
export async function controlRequest(ctx: DispatchContext, ref: string, request: ControlRequest): Promise<ControlOutcome> {
  const state = await commandedItem(ctx, ref, request.command);
  const deliveryId = request.deliveryId ?? `cli-${request.command}-${randomUUID()}`;
  const made = syntheticEvent(ctx, state, { command: request.command, source: request.source, actor: request.actor, deliveryId });
  const event: InboundEvent =
    request.command === "start"
      ? {
          ...made,
          ...(request.bootNote !== undefined ? { bootNote: request.bootNote } : {}),
          ...(request.branch !== undefined ? { checkoutBranch: request.branch } : {}),
        }
      : made;
  await inputReceived(ctx, state.item, event, { kind: "command", text: event.body ?? "", command: request.command });
  return applyCommand(ctx, {
    workItem: state.item,
    command: request.command,
    source: request.source,
    actor: request.actor,
    note: request.note,
    deliveryId,
    graph: request.graph,
    // Only the CLI's start chooses a harness: no comment text ever names one.
    harness: request.source === "cli" ? request.harness : undefined,
    armed: armsSpawn(state.labels, ctx.policy),
    itemClosed: state.state === "closed",
    event,
  });
}

/**
 * The item a CLI command acts on. Only a start needs the tracker's view (its labels and state
 * decide whether it may spawn); a pause, resume or stop of an existing session works from the
 * session's own record, so an operator can hold off a runaway agent while the tracker is down.
 */
async function commandedItem(ctx: ContextNeeds<never, "registry" | "trackers">, ref: string, command: ControlCommand): Promise<WorkItemState> {
  const record = command === "start" ? undefined : ctx.options.registry.get(ref);
  if (record === undefined) return ctx.options.trackers.forRef(ref).getItem(parseWorkItemRef(ref));
  return {
    item: record.workItem as WorkItem,
    title: "",
    body: "",
    author: "",
    // Not consulted: only a start asks whether the item is armed or closed.
    state: "open",
    labels: [],
    createdAt: record.createdAt,
    updatedAt: record.lastEventAt,
    closedAt: null,
  };
}

/**
 * The event a command the-loop gives itself stands in for: a comment carrying the command's
 * keyword by `actor`, with the item's labels and state as its tracker shows them now. Source
 * `cli`: no tracker delivered it, so it gets no reactions.
 */
function syntheticEvent(
  ctx: ContextNeeds<"now" | "routing">,
  state: WorkItemState,
  input: { readonly command: ControlCommand; readonly source: ControlSource; readonly actor: string; readonly deliveryId: string },
): InboundEvent {
  return {
    source: "cli",
    deliveryId: input.deliveryId,
    kind: "commented",
    trackerEvent: `cli:${input.command}`,
    workItems: [state.item],
    actor: input.actor,
    body: ctx.routing.control.keywords[input.command],
    labels: [...state.labels],
    itemState: state.state,
    title: state.title,
    occurredAt: ctx.now().toISOString(),
    excerpt: boundExcerpt({ command: input.command, source: input.source }),
  };
}

/**
 * A control keyword in an authorized person's comment (the router chose the work item). The
 * comment is a command, never harness input (docs/control.md#how-a-keyword-is-recognised): a session it starts boots from the comment
 * with its text replaced by the bare keyword — the same boot event the CLI's start makes — and
 * the agent reads the thread itself, as its boot prompt tells it to.
 */
export async function commandFromComment(ctx: DispatchContext, decision: Decision & { action: "control" }, comment: InboundEvent): Promise<HandleResult> {
  // The router only decides a command for a named actor.
  const actor = comment.actor ?? "ghost";
  const event: InboundEvent = {
    ...comment,
    body: ctx.routing.control.keywords[decision.command],
    excerpt: boundExcerpt({ command: decision.command, source: "comment" }),
  };
  await inputReceived(ctx, decision.workItem, comment, {
    kind: "command",
    text: boundedInputText(comment.body),
    command: decision.command,
  });
  const { armed, itemClosed } = await armingOf(ctx, decision, comment);
  await applyCommand(ctx, {
    workItem: decision.workItem,
    command: decision.command,
    source: "comment",
    actor,
    note: comment.commentUrl,
    deliveryId: comment.deliveryId,
    graph: decision.graph,
    armed,
    itemClosed,
    event,
  });
  // Applied or refused, the comment has been acted on: it is never forwarded, and never retried.
  return SETTLED;
}

/**
 * Whether a start may spawn the item it acts on. The router can only judge by the labels and
 * state the event carries, which are its own entity's: a comment on a pull request that acts on
 * the work item the PR is linked to is judged by that item, as its tracker shows it now — the
 * label that arms is the item's, not the PR's. Only asked when it decides anything: a start
 * with no live session.
 */
async function armingOf(
  ctx: ContextNeeds<"policy", "trackers">,
  decision: Decision & { action: "control" },
  comment: InboundEvent,
): Promise<{ readonly armed: boolean; readonly itemClosed: boolean }> {
  const linked = comment.linkedBy?.[decision.workItem.ref] !== undefined;
  if (!linked || decision.command !== "start" || decision.session !== "none") return decision;
  const state = await ctx.options.trackers.forRef(decision.workItem.ref).getItem(parseWorkItemRef(decision.workItem.ref));
  return { armed: armsSpawn(state.labels, ctx.policy), itemClosed: state.state === "closed" };
}

/**
 * One command on one work item, the same for a comment and the CLI. Under the item's control
 * lock the effects table applies the plan (applyUnderLock) — so a command from another process
 * can never interleave, and a spawn racing it sees either none of it or all of it. Outside the
 * lock, the plan's follow-up: the harness and announcement of a spawn, the close of a stop,
 * telling a resumed harness to re-read the thread. Lock order is always control, then registry.
 */
async function applyCommand(ctx: DispatchContext, input: CommandInput): Promise<ControlOutcome> {
  const ref = input.workItem.ref;
  const { command, event } = input;
  const turn = turnOf(ctx, input.workItem, event);
  const choice = chooseHarness(ctx.routing, { chosen: input.harness, labels: event.labels });
  const harnessName = "refused" in choice ? ctx.routing.defaultHarness : choice.harness;
  // Resolved before the lock: a start that can act but whose harness cannot be had is pending.
  const adapter = command === "start" ? ("refused" in choice ? choice.refused : adapterOrProblem(ctx, harnessName)) : undefined;
  if (adapter !== undefined && typeof adapter !== "string" && ctx.hooks.handles("work_item_start") && wouldSpawn(ctx, input)) {
    // Before the lock and the claim: a hook may take its timeout, and a refused start must
    // leave nothing behind but the refusal.
    const asked = ctx.options.control.get(ref);
    const refusal = await startRefusal(ctx, turn, input.source === "cli" || input.source === "dashboard" ? "cli" : "comment", harnessName);
    if (refusal !== undefined) {
      const refused = await refuse(ctx, turn, "work_item_start", refusal, (current) => sameCommand(current, asked));
      // A session another process started meanwhile: the command is decided below on it, as
      // any start that finds a session running.
      if (refused.kind === "refused") return refusedCommand(turn, input, refused);
    }
  }
  const run: CommandRun = { input, turn, harnessName, adapter };
  const at = ctx.now();
  const decided = await ctx.options.control.transaction(ref, (tx) => applyUnderLock(ctx, run, at, tx));

  if (decided.kind === "rejected") {
    turn.events.emit("control.rejected", { command, command_source: input.source, actor: input.actor, reason: decided.reason });
    ctx.react(event, "failed");
    return { applied: false, reason: decided.reason, message: rejectionMessage(ctx, ref, command, decided.reason) };
  }

  // A stop ends the item's graph run under way (`canceled`), with a session or without one; before
  // the session's close, so a process killed in between leaves a stop that finishStop completes.
  if (command === "stop") await cancelRunOfStoppedItem(ctx, ref, input);
  if (command === "stop") await leaveQueue(ctx, turn, "stopped");
  const finished = await followUp(ctx, run, decided);
  if ("refused" in finished) return refusedCommand(turn, input, finished.refused);
  const { effect, problem, queued } = finished;
  turn.events.emit("control.command", {
    command,
    command_source: input.source,
    actor: input.actor,
    effect,
    ...(problem !== undefined ? { error: problem } : {}),
  });
  const after = ctx.options.registry.get(ref);
  return {
    applied: true,
    effect,
    ...(after !== undefined ? { session: { tmuxTarget: after.tmuxTarget, status: after.status } } : {}),
    ...(problem !== undefined ? { problem } : {}),
    ...(queued === true ? { queued } : {}),
  };
}

/**
 * Whether the command, as things stand, would spawn a session (read without the lock: the
 * transaction decides again). Only then is `work_item_start` asked.
 */
function wouldSpawn(ctx: ContextNeeds<never, "registry">, input: CommandInput): boolean {
  const plan = planControl({
    command: input.command,
    session: sessionStateOf(ctx.options.registry.get(input.workItem.ref)),
    armed: input.armed,
    itemClosed: input.itemClosed,
  });
  return plan.kind === "apply" && plan.action === "spawn";
}

/** A start a lifecycle hook refused: reported as a refused command (the refusal itself is recorded). */
function refusedCommand(turn: Turn, input: CommandInput, refused: Refused): ControlOutcome {
  turn.events.emit("control.rejected", { command: input.command, command_source: input.source, actor: input.actor, reason: "hook-refused" });
  return {
    applied: false,
    reason: "hook-refused",
    message: `the lifecycle hook "${refused.refusal.hook}" refused to start ${input.workItem.ref}: ${refused.refusal.reason}`,
  };
}

/** The harness adapter for a start, or why it cannot be had. */
function adapterOrProblem(ctx: ContextNeeds<"routing">, harnessName: string): HarnessAdapter | string {
  try {
    return adapterOf(ctx, harnessName);
  } catch (error) {
    return messageOf(error);
  }
}

/** Why a command was refused, and how to make it possible. */
function rejectionMessage(ctx: ContextNeeds<"policy">, ref: string, command: ControlCommand, reason: PlanRejection): string {
  const policy = ctx.policy;
  switch (reason) {
    case "not-armed":
      return policy.spawnOnUnmatched === "never"
        ? `${ref} is not armed: routing.spawnOnUnmatched is never, so no work item starts a session; set it to labeled (and add the label "${policy.autoExecuteLabel}") or always`
        : `${ref} is not armed: add the label "${policy.autoExecuteLabel}" first (routing.autoExecuteLabel), or set routing.spawnOnUnmatched: always`;
    case "item-closed":
      return `${ref} is closed, and a closed work item never starts a session: reopen it first`;
    case "nothing-to-resume":
      return `${ref} has no live session to ${command}; use start to start one`;
  }
}

// ---- standing commands ---------------------------------------------------------------------

/**
 * The standing commands retryPendingStarts acts on: starts with no live session, and stops a
 * process was killed in the middle of (a stop writes its record before it closes the session, so
 * a standing stop next to a live session is one whose close never happened).
 */
export function standingCommands(ctx: ContextNeeds<never, "control">): { readonly starts: readonly string[]; readonly stops: readonly string[] } {
  const { records } = ctx.options.control.list();
  return {
    stops: records.filter((record) => record.command === "stop" && controlStateOf(record) === "disarmed").map((record) => record.ref),
    starts: records.filter((record) => controlStateOf(record) === "start-requested").map((record) => record.ref),
  };
}

/** Closes the item's live session if its standing command is a stop (see retryPendingStarts). */
export async function finishStop(
  ctx: PasteContext & ContextNeeds<"hooks", "control" | "graph" | "spawnCwd" | "stateRootTag" | "trackers">,
  ref: string,
): Promise<void> {
  const { registry, control, events } = ctx.options;
  try {
    let live: boolean;
    try {
      live = isLive(registry.get(ref));
    } catch (error) {
      if (!(error instanceof RegistryRecordError)) throw error;
      // A stop stands and the session record does not parse: the stop still ends the session.
      await ctx.heavy.use(() => closeDamaged(closeOptions(ctx), ref, "stopped", error));
      return;
    }
    if (!live) return;
    const finished = await control.transaction(ref, async (tx) => {
      const standing = tx.read();
      if (standing?.command !== "stop" || controlStateOf(standing) !== "disarmed") return undefined;
      const closed = await registry.close(ref, "stopped", ctx.now());
      return closed === undefined ? undefined : { standing, closed };
    });
    if (finished === undefined) return;
    const { standing, closed } = finished;
    await ctx.heavy.use(() => finishClose(closeOptions(ctx), closed, "stopped"));
    await cancelRunOfStoppedItem(ctx, ref, standing);
    // The stop's own control.command was never emitted: its process died before the close.
    events.emit("control.command", {
      work_item: ref,
      command: "stop",
      command_source: standing.source,
      actor: standing.actor,
      effect: "stopped",
      ...(standing.deliveryId !== undefined ? { delivery_id: standing.deliveryId } : {}),
    });
  } catch (error) {
    dispatchFailed(
      deliveryEvents(events, ref, `control-stop-${randomUUID()}`),
      "close",
      `the stop of ${ref} was recorded but its session could not be closed: ${messageOf(error)}`,
    );
  }
}

/**
 * Starts the item if its standing start still holds: no live session, the start still
 * authorized, the item open and armed. Spawned through the same gated path an event takes, from
 * a synthetic event (source `cli`; delivery id `control-retry-<uuid>`; the actor is whoever gave
 * the start). A closed or unarmed item is skipped (item-closed / spawn-policy) and its start left
 * standing. Whether a session was started.
 */
export async function retryStart(
  ctx: ContextNeeds<
    "accepting" | "forget" | "heavy" | "hooks" | "inputSeen" | "now" | "policy" | "react" | "readyAt" | "routing" | "self" | "templates" | "options"
  >,
  ref: string,
): Promise<boolean> {
  const { registry, control, trackers } = ctx.options;
  const deliveryId = `control-retry-${randomUUID()}`;
  const events = deliveryEvents(ctx.options.events, ref, deliveryId);
  const skip = (reason: string): false => {
    events.emit("dispatch.dropped", { reason });
    return false;
  };
  try {
    if (isLive(registry.get(ref))) return false;
    const standing = control.get(ref);
    if (standing === undefined || controlStateOf(standing) !== "start-requested") return false;
    if (standingState(standing, ctx.policy) !== "start-requested") return skip("unauthorized-actor");
    const state = await trackers.forRef(ref).getItem(parseWorkItemRef(ref));
    if (state.state === "closed") return skip("item-closed");
    if (!armsSpawn(state.labels, ctx.policy)) return skip("spawn-policy");
    const event = syntheticEvent(ctx, state, { command: "start", source: standing.source, actor: standing.actor, deliveryId });
    const turn = turnOf(ctx, state.item, event);
    const outcome = await withSlot(ctx, (slot) => spawn(ctx, turn, slot, "retry"));
    if (outcome.kind === "held") settle(turn, outcome.hold);
    return outcome.kind === "started";
  } catch (error) {
    dispatchFailed(events, "spawn", messageOf(error));
    return false;
  }
}
