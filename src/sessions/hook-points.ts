import type { ControlCommand } from "../config/schema.js";
import type { ControlRecord } from "../control/types.js";
import { messageOf } from "../errors.js";
import type { HookRefusal } from "../hooks/types.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { LifecyclePointName } from "../sdk/hooks/catalog.js";
import { redactKnownSecrets } from "../secrets.js";
import type { WorkItem } from "../workitem/index.js";
import { parseWorkItemRef } from "../workitem/index.js";
import { announcementText, refusalText } from "./announce.js";
import { finishClose } from "./close.js";
import { SESSION_CLOSED, closeOptions, rememberedCommands, sameLiveSession, settle } from "./context.js";
import type { Closed, ContextNeeds, Occupied, Refused, StartTrigger, Turn } from "./context.js";
import type { PoolSlot } from "./keyed-queue.js";
import { boundedReason, workItemEntity } from "./lifecycle.js";
import type { InputKind } from "./lifecycle.js";
import { isLive } from "../registry/record.js";
import type { SessionRecord } from "../registry/record.js";

/**
 * The lifecycle points the dispatcher runs (work_item_start, session_spawn, session_spawned,
 * input_received, work_item_complete) and what a `proceed: false` at one of them does. Each
 * function builds its point's context from the turn and hands it to the chain; none decides
 * anything the chain did not.
 */

/** Why a claimed session closed without a harness: a lifecycle hook refused its launch. */
const HOOK_REFUSED = "hook-refused";

/**
 * Runs a point's chain from inside heavy work. A hook may take its whole timeout (a local one,
 * longer): while it decides, the slot goes to the spawns and closes of other items waiting for
 * it, and is taken back after, so a slow hook holds up its own work item and nothing else
 * (docs/hooks.md#when-a-hook-fails). With no executor at the point nothing is let go, so a dispatch without hooks takes
 * the pool exactly as it always has.
 */
export async function atPoint<T>(ctx: ContextNeeds<"hooks">, slot: PoolSlot, point: LifecyclePointName, run: () => Promise<T>): Promise<T> {
  if (!ctx.hooks.handles(point)) return run();
  return slot.without(run);
}

/**
 * `work_item_start`, for a start about to claim a session: the refusal when the chain ended on
 * `proceed: false`. Nothing exists yet — no claim, no checkout — so a refusal undoes nothing.
 */
export async function startRefusal(ctx: ContextNeeds<"hooks">, turn: Turn, trigger: StartTrigger, harnessName: string): Promise<HookRefusal | undefined> {
  const { workItem, event } = turn;
  const outcome = await ctx.hooks.run(
    "work_item_start",
    {
      workItem: workItemEntity(workItem),
      actor: event.actor ?? "",
      trigger,
      harness: harnessName,
      deliveryId: event.deliveryId,
      proceed: true,
      reason: "",
    },
    { workItem: workItem.ref },
  );
  return outcome.refusal;
}

/** `session_spawn`, for a claimed session about to get its harness: the prompt it boots with, or the refusal. */
export async function launchPoint(
  ctx: ContextNeeds<"hooks">,
  turn: Turn,
  slot: PoolSlot,
  claimed: SessionRecord,
  cwd: string,
  bootPrompt: string,
): Promise<{ readonly prompt: string; readonly refusal?: HookRefusal }> {
  const { workItem, event } = turn;
  const launch = await atPoint(ctx, slot, "session_spawn", () =>
    ctx.hooks.run(
      "session_spawn",
      {
        workItem: workItemEntity(workItem),
        actor: event.actor ?? "",
        harness: claimed.harness,
        tmuxTarget: claimed.tmuxTarget,
        cwd,
        harnessSessionId: claimed.harnessSessionId,
        pullRequest: event.pullRequest?.ref ?? "",
        deliveryId: event.deliveryId,
        proceed: true,
        reason: "",
        prompt: bootPrompt,
      },
      { workItem: workItem.ref },
    ),
  );
  return launch.refusal === undefined ? { prompt: launch.context.prompt } : { prompt: launch.context.prompt, refusal: launch.refusal };
}

/**
 * `session_spawn` refused the launch of a claimed session: the claim is closed (its checkout
 * released; no harness ever ran) and the refusal applied as at work_item_start. Only this claim
 * is closed: one closed meanwhile (a stop, `the-loop sessions close`) has been dealt with by
 * whoever closed it, and a session claimed since then is another process's to run.
 */
export async function refuseLaunch(
  ctx: ContextNeeds<"now" | "react" | "routing", "control" | "events" | "registry" | "runner" | "stateRootTag" | "trackers" | "workspaces">,
  turn: Turn,
  claimed: SessionRecord,
  refusal: HookRefusal,
  unchanged: (current: ControlRecord | undefined) => boolean,
): Promise<Refused | Occupied | Closed> {
  let closing = false;
  const closed = await ctx.options.registry.update(turn.workItem.ref, (current) => {
    if (!sameLiveSession(current, claimed) || current.harnessSessionId !== claimed.harnessSessionId) return undefined;
    closing = true;
    const { awaitingInput: _never, ...rest } = current;
    return { ...rest, status: "closed", closedAt: ctx.now().toISOString(), closeReason: HOOK_REFUSED };
  });
  if (!closing || closed === undefined) {
    settle(turn, SESSION_CLOSED);
    return { kind: "closed" };
  }
  // No harness of this session's own ever ran, so nothing is left running for killHarnessOnClose
  // to spare, nor a checkout to keep for one: anything in its pane started after the claim for
  // it (as in endIfClosed), and ends with it.
  const options = closeOptions(ctx);
  await finishClose({ ...options, tmux: { ...options.tmux, killHarnessOnClose: true } }, closed, HOOK_REFUSED);
  return refuse(ctx, turn, "session_spawn", refusal, unchanged);
}

/**
 * Applies a hook's `proceed: false` (docs/hooks.md#the-chain): the item is disarmed by a control record in the
 * hook's name (no event or pending start starts it again; a new start command does), one
 * marked comment names the hook and its reason, and the event is settled. For a pull request's
 * own session, the event goes to the live session of a work item it names instead.
 *
 * The hook may have taken its time, and another process may have acted on the item meanwhile.
 * A session it started makes the refusal moot: nothing is refused, and the caller treats that
 * session as one found running (`occupied`). A command it recorded (`unchanged` says the
 * record is no longer the one this start went by) is the item's newer state and is kept: the
 * refusal is still commented and recorded, but disarms nothing.
 */
export async function refuse(
  ctx: ContextNeeds<"now" | "react" | "routing", "control" | "events" | "registry" | "trackers">,
  turn: Turn,
  point: string,
  refusal: HookRefusal,
  unchanged: (current: ControlRecord | undefined) => boolean,
): Promise<Refused | Occupied> {
  const { workItem, event } = turn;
  const { registry, control, trackers, events } = ctx.options;
  const ref = workItem.ref;
  // Redacted before it is cut, so no part of a secret is left at the cut: it goes to the control
  // record, hooks.refused, the comment and the caller's outcome alike.
  const reason = boundedReason(redactKnownSecrets(refusal.reason));
  const applied = await control.transaction(ref, async (tx): Promise<{ readonly occupant: SessionRecord } | { readonly disarmed: boolean }> => {
    const live = registry.get(ref);
    if (live !== undefined && isLive(live)) return { occupant: live };
    const current = tx.read();
    if (!unchanged(current)) {
      // The newer command stands, and remembers this start too, so a redelivery of it is not taken again.
      if (current !== undefined) await tx.write({ ...current, recentDeliveries: rememberedCommands(current, event) });
      return { disarmed: false };
    }
    await tx.write({
      version: 1,
      ref,
      command: "stop",
      source: "hook",
      actor: refusal.hook,
      requestedAt: ctx.now().toISOString(),
      effect: "refused",
      note: reason,
      deliveryId: event.deliveryId,
      recentDeliveries: rememberedCommands(current, event),
    });
    return { disarmed: true };
  });
  if ("occupant" in applied) return { kind: "occupied", occupant: applied.occupant };
  let posted = false;
  try {
    await trackers.forRef(ref).postComment(
      parseWorkItemRef(ref),
      refusalText({
        ref,
        point,
        hook: refusal.hook,
        reason,
        startKeyword: ctx.routing.control.keywords.start,
        disarmed: applied.disarmed,
      }),
    );
    posted = true;
  } catch (error) {
    events.emit("session.announce_failed", { work_item: ref, error: `the refusal could not be posted: ${messageOf(error)}` });
  }
  turn.events.emit("hooks.refused", { point, hook: refusal.hook, reason, comment_posted: posted });
  ctx.react(event, "failed");
  const redirect =
    point === "session_spawn" && workItem.kind === "pull_request"
      ? event.workItems
          .filter((item) => item.ref !== ref)
          .map((item) => registry.get(item.ref))
          .find((record) => record !== undefined && isLive(record))
      : undefined;
  return { kind: "refused", refusal: { ...refusal, reason }, ...(redirect !== undefined ? { redirect } : {}) };
}

/**
 * `session_spawned`, then the announcement unless the chain's `announce` says not to.
 * `announce`: routing.announce.enabled as the start read it.
 */
export async function announceSpawned(
  ctx: ContextNeeds<"hooks" | "routing", "events" | "trackers">,
  turn: Turn,
  session: SessionRecord,
  slot: PoolSlot,
  announce: boolean,
): Promise<void> {
  const { workItem, event } = turn;
  const outcome = await atPoint(ctx, slot, "session_spawned", () =>
    ctx.hooks.run(
      "session_spawned",
      {
        workItem: workItemEntity(workItem),
        harness: session.harness,
        tmuxTarget: session.tmuxTarget,
        cwd: session.cwd,
        harnessSessionId: session.harnessSessionId,
        deliveryId: event.deliveryId,
        announce,
      },
      { workItem: workItem.ref },
    ),
  );
  if (outcome.context.announce) await postAnnouncement(ctx, workItem.ref, session.tmuxTarget, session.harness);
}

async function postAnnouncement(ctx: ContextNeeds<"routing", "events" | "trackers">, ref: string, target: string, harness: string): Promise<void> {
  const { trackers, events } = ctx.options;
  try {
    const comment = await trackers
      .forRef(ref)
      .postComment(parseWorkItemRef(ref), announcementText({ ref, tmuxTarget: target, harness, socketName: ctx.routing.tmux.socketName }));
    events.emit("session.announced", { work_item: ref, comment_id: comment.id });
  } catch (error) {
    events.emit("session.announce_failed", { work_item: ref, error: messageOf(error) });
  }
}

/** `input_received`: a person's input is about to be delivered or run. Observation only. */
export async function inputReceived(
  ctx: ContextNeeds<"hooks" | "inputSeen">,
  workItem: WorkItem,
  event: InboundEvent,
  input: { readonly kind: InputKind; readonly text: string; readonly command?: ControlCommand },
): Promise<void> {
  if (ctx.inputSeen.has(event)) return;
  ctx.inputSeen.add(event);
  await ctx.hooks.run(
    "input_received",
    {
      workItem: workItemEntity(workItem),
      actor: event.actor ?? "",
      inputKind: input.kind,
      text: input.text,
      command: input.command ?? "",
      inputSource: event.source,
      url: event.commentUrl ?? "",
      deliveryId: event.deliveryId,
    },
    { workItem: workItem.ref },
  );
}

/**
 * `work_item_complete`, once an item's closing closed its session. The closure has no
 * announcement of its own yet (it goes to channels, which the-loop does not have): the chain runs
 * for its observers, and `announce` is read by nothing.
 */
export async function workItemComplete(ctx: ContextNeeds<"hooks">, turn: Turn, slot: PoolSlot, closed: SessionRecord): Promise<void> {
  await atPoint(ctx, slot, "work_item_complete", () =>
    ctx.hooks.run(
      "work_item_complete",
      {
        workItem: workItemEntity(closed.workItem as WorkItem),
        actor: turn.event.actor ?? "",
        harness: closed.harness,
        tmuxTarget: closed.tmuxTarget,
        announce: true,
      },
      { workItem: turn.workItem.ref },
    ),
  );
}
