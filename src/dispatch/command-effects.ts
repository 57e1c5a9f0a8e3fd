import { sessionStateOf } from "../control/plan.js";
import { deliverPendingAssignment } from "../graph-driver/carry-out.js";
import type { ControlTransaction } from "../control/store.js";
import type { CommandEffect, ControlRecord, PlanRejection } from "../control/types.js";
import { messageOf } from "../errors.js";
import type { HarnessAdapter } from "../harness/adapters.js";
import { deliveryKeys } from "../routing/inbound.js";
import { githubItemUrl, parseWorkItemRef } from "../workitem/index.js";
import { finishClose } from "../sessions/close.js";
import { planCommand } from "./command-plan.js";
import type { AppliedPlan, CommandInput, FollowUp, Transition } from "./command-plan.js";
import { closeOptions, dispatchFailed, rememberedCommands, withSlot } from "../sessions/context.js";
import type { ContextNeeds, DispatchContext, Refused, Turn } from "../sessions/context.js";
import type { PasteContext } from "../sessions/delivery.js";
import { paste } from "../sessions/delivery.js";
import { renderResumeNote } from "../sessions/prompts.js";
import { isLive } from "../registry/record.js";
import type { SessionRecord } from "../registry/record.js";
import { claimSession, markStartPending, spawnFailed, startClaimed } from "./spawn.js";
import { announceQueued, claimWithinLimits } from "./slots.js";
import type { Queued } from "./slots.js";
import { capText } from "../routing/limits.js";

/**
 * The effects table: what each step of a CommandPlan (command-plan.ts) does. `applyUnderLock`
 * interprets a plan inside the item's control-record transaction — the record and the registry
 * change, in the plan's order — and `followUp` does the slow part after the lock is released.
 * Neither decides what the command means: planCommand did, and is asked again only when the
 * session changed between the read and the transition.
 */

/** How often a command is decided again when the session changed between the read and the transition. */
const MAX_REPLANS = 3;

/** One command being carried out. */
export interface CommandRun {
  readonly input: CommandInput;
  readonly turn: Turn;
  /** routing.defaultHarness as the command read it, before the lock. */
  readonly harnessName: string;
  /** A start's harness adapter, or why it cannot be had; undefined for the other commands. */
  readonly adapter: HarnessAdapter | string | undefined;
}

/** What the part of a command done under the item's control lock left for the rest to finish. */
export type Decided =
  | { readonly kind: "rejected"; readonly reason: PlanRejection }
  | {
      readonly kind: "applied";
      readonly plan: AppliedPlan;
      /** The plan's effect, as the registry change left it (a lost claim: noop). */
      readonly effect: CommandEffect;
      /** The session the command acted on (or the one it found live), as the transition left it. */
      readonly session?: SessionRecord;
      /** A spawn whose claim this command won: the harness is started outside the lock. */
      readonly claimed?: SessionRecord;
      /** A start a full cap queued (routing.limits). */
      readonly queued?: Queued;
    };
type Applied = Extract<Decided, { readonly kind: "applied" }>;

/** What a registry change did: `vanished`, the session it was for is gone (the command is planned again). */
interface Changed {
  readonly session?: SessionRecord | undefined;
  readonly claimed?: SessionRecord;
  readonly effect?: CommandEffect;
  readonly vanished?: boolean;
  readonly queued?: Queued;
}

/** What the slow part left: the command's outcome, or a hook's refusal of the launch. */
type Finished = { readonly effect: CommandEffect; readonly problem?: string | undefined; readonly queued?: true } | { readonly refused: Refused };

const vanishedUnless = (session: SessionRecord | undefined): Changed => ({ session, vanished: session === undefined });

/** The registry change of each Transition, made under the control lock. */
const TRANSITIONS: {
  readonly [T in Transition]: (ctx: DispatchContext, run: CommandRun, at: Date, live: SessionRecord | undefined) => Promise<Changed>;
} = {
  claim: async (ctx, run) => {
    const { workItem, event } = run.input;
    const claim = await claimWithinLimits(
      ctx,
      workItem.ref,
      run.harnessName,
      { labels: event.labels, bootNote: event.bootNote, branch: event.checkoutBranch },
      () => claimSession(ctx, workItem, event, run.harnessName),
    );
    // A full cap: the start stands, pending, in the queue (its place is announced after the lock).
    if ("queued" in claim) return { effect: "start-pending", queued: claim.queued };
    // Lost to a process that started one without this lock: the start confirms that session.
    return claim.claimed ? { session: claim.record, claimed: claim.record } : { session: claim.record, effect: "noop" };
  },
  pause: async (ctx, run, at) => vanishedUnless(await ctx.options.registry.setStatus(run.input.workItem.ref, ["active"], "paused", at)),
  resume: async (ctx, run, at) => vanishedUnless(await ctx.options.registry.setStatus(run.input.workItem.ref, ["paused"], "active", at)),
  close: async (ctx, run, at) => vanishedUnless(await ctx.options.registry.close(run.input.workItem.ref, "stopped", at)),
  none: async (_ctx, _run, _at, live) => ({ session: live }),
};

/**
 * The part of a command done under the item's control lock: read the live session, plan, and
 * apply the plan's record and transition in its order. A transition that finds the session
 * changed since it was read (closed by a process that took no control lock: a failed spawn's own
 * close, or an older the-loop) is planned again on what is there now.
 *
 * What a `kill -9` between the two writes leaves must be something a restart completes (see
 * RecordTiming): a start recorded without its claim is a pending start (retryPendingStarts spawns
 * it, and marks it start-pending if that spawn fails), a stop recorded while the session is still
 * live is finished by retryPendingStarts too. If the change fails in a live process, the record is
 * put back as it was, so the command's retry is not taken for a redelivery of a command already
 * applied.
 */
export async function applyUnderLock(ctx: DispatchContext, run: CommandRun, at: Date, tx: ControlTransaction): Promise<Decided> {
  const { input } = run;
  const ref = input.workItem.ref;
  const registry = ctx.options.registry;
  const recordOf = (effect: CommandEffect): ControlRecord => ({
    version: 1,
    ref,
    command: input.command,
    source: input.source,
    actor: input.actor,
    requestedAt: at.toISOString(),
    effect,
    ...(input.note !== undefined ? { note: input.note } : {}),
    ...(input.command === "start" && input.graph !== undefined ? { graph: input.graph } : {}),
    ...(input.command === "start" && input.harness !== undefined ? { harness: input.harness } : {}),
    ...(input.command === "pause" || input.command === "resume" ? keptChoices(ctx, ref, before) : {}),
    deliveryId: input.deliveryId,
    recentDeliveries: rememberedCommands(tx.read(), input.event),
  });
  // A damaged control record stops the command here, before anything changes.
  const before = tx.read();
  /** Puts the record back as the command found it (after a record-first write). */
  let wrote = false;
  const restore = async (): Promise<void> => {
    if (wrote) await (before === undefined ? tx.remove() : tx.write(before));
  };
  const harnessProblem = typeof run.adapter === "string" ? run.adapter : run.adapter === undefined ? "no harness to start" : undefined;
  for (let attempt = 1; ; attempt += 1) {
    const current = registry.get(ref);
    const live = current !== undefined && isLive(current) ? current : undefined;
    const plan = planCommand({
      command: input.command,
      session: sessionStateOf(live),
      armed: input.armed,
      itemClosed: input.itemClosed,
      harnessProblem,
      queued: input.command === "resume" && live === undefined && isQueued(ctx, ref),
    });
    if (plan.kind === "reject") {
      await restore();
      return { kind: "rejected", reason: plan.reason };
    }
    if (plan.record === "first") {
      await tx.write(recordOf(plan.effect));
      wrote = true;
    }
    let changed: Changed;
    try {
      changed = await TRANSITIONS[plan.transition](ctx, run, at, live);
    } catch (failure) {
      // The failure is what is reported. A record that cannot be put back either stays as the
      // intent it is: a pending start, or a stop that retryPendingStarts finishes.
      await restore().catch(() => undefined);
      throw failure;
    }
    if (changed.vanished) {
      if (attempt < MAX_REPLANS) continue;
      await restore();
      throw new Error(`the session of ${ref} kept changing while ${input.command} was being applied; try again`);
    }
    const effect = changed.effect ?? plan.effect;
    if (plan.record === "after" || (plan.record === "first" && effect !== plan.effect)) await tx.write(recordOf(effect));
    const { session, claimed } = changed;
    // The session remembers the command's delivery id, so a redelivery after a restart is
    // dropped. The command has acted by now: failing to note it must not report it as failed.
    if (claimed === undefined && session !== undefined && isLive(session)) {
      await registry.touch(ref, deliveryKeys(input.event), at).catch((failure: unknown) => {
        dispatchFailed(run.turn.events, "control", `the ${input.command} applied, but the session could not note its delivery: ${messageOf(failure)}`);
      });
    }
    return {
      kind: "applied",
      plan,
      effect,
      ...(session !== undefined ? { session } : {}),
      ...(claimed !== undefined ? { claimed } : {}),
      ...(changed.queued !== undefined ? { queued: changed.queued } : {}),
    };
  }
}

/**
 * The graph and harness a queued start chose, kept on the pause and the resume that follow it
 * (docs/fleet.md): the start keeps its place through them, and its choices with it. Nothing for
 * an item whose start is not queued (a live session's run and harness are already decided).
 */
function keptChoices(ctx: DispatchContext, ref: string, before: ControlRecord | undefined): Pick<ControlRecord, "graph" | "harness"> {
  if (before === undefined || before.clearedAt !== undefined || isLive(ctx.options.registry.get(ref)) || !isQueued(ctx, ref)) return {};
  return { ...(before.graph !== undefined ? { graph: before.graph } : {}), ...(before.harness !== undefined ? { harness: before.harness } : {}) };
}

/** Whether the item's start waits in the start queue; a queue that cannot be read holds nothing a resume could release. */
function isQueued(ctx: DispatchContext, ref: string): boolean {
  try {
    return ctx.options.startQueue?.positionOf(ref) !== undefined;
  } catch {
    // A damaged queue file: reported by the queue's own watch (dequeue.ts), and the resume is refused as for any item with no session.
    return false;
  }
}

/** The slow part of an applied command, after the lock: the plan's follow-up. */
export function followUp(ctx: DispatchContext, run: CommandRun, decided: Applied): Promise<Finished> {
  return FOLLOW_UPS[decided.plan.followUp](ctx, run, decided);
}

/** Nothing slow to do: the command is done. */
async function done(ctx: ContextNeeds<"react">, run: CommandRun, decided: Applied): Promise<Finished> {
  ctx.react(run.turn.event, "completed");
  return { effect: decided.effect };
}

/** Each FollowUp, with the session it needs; without one (never the case once applied), only done. */
const FOLLOW_UPS: { readonly [F in FollowUp]: (ctx: DispatchContext, run: CommandRun, decided: Applied) => Promise<Finished> } = {
  "start-pending": async (ctx, run, decided) => {
    // The start stands (recorded as pending); the harness configuration is what failed.
    const problem = decided.plan.problem ?? "no harness to start";
    spawnFailed(ctx, run.turn, run.harnessName, problem);
    return { effect: decided.effect, problem };
  },

  "start-harness": async (ctx, run, decided) => {
    const { claimed } = decided;
    const adapter = run.adapter;
    if (decided.queued !== undefined) {
      await announceQueued(ctx, run.turn, run.harnessName, decided.queued);
      return { effect: decided.effect, problem: `queued at position ${decided.queued.position}: ${capText(decided.queued.cap)} is reached`, queued: true };
    }
    // A claim lost to a live session: the start confirms it, and is done.
    if (claimed === undefined || adapter === undefined || typeof adapter === "string") return done(ctx, run, decided);
    const { input, turn } = run;
    ctx.react(turn.event, "started");
    // The record this command wrote is its own: a newer command replaces it, with another delivery id.
    const own = (current: ControlRecord | undefined): boolean => current?.deliveryId === input.deliveryId;
    const started = await withSlot(ctx, (slot) => startClaimed(ctx, turn, adapter, claimed, slot, own));
    switch (started.kind) {
      case "refused":
        return { refused: started };
      case "occupied":
        return {
          effect: decided.effect,
          problem: `the lifecycle hook refused this launch, and the session another process started meanwhile runs (${started.occupant.tmuxTarget})`,
        };
      case "failed":
        await markStartPending(ctx, input.workItem.ref, input.deliveryId);
        return { effect: "start-pending", problem: started.error };
      case "closed":
        return { effect: decided.effect, problem: "the session was closed by another process while it was starting" };
      case "started":
      case "held":
        return { effect: decided.effect };
    }
  },

  "finish-close": async (ctx, run, decided) => {
    const closed = decided.session;
    if (closed === undefined) return done(ctx, run, decided);
    try {
      await ctx.heavy.use(() => finishClose(closeOptions(ctx), closed, "stopped"));
      ctx.react(run.turn.event, "completed");
      return { effect: decided.effect };
    } catch (error) {
      // The stop stands (recorded, the session closed): trying the command again would be taken
      // for a redelivery of it, so the failure to end its harness is reported with it instead.
      ctx.react(run.turn.event, "failed");
      return { effect: decided.effect, problem: `the session is closed, but ending its harness failed: ${messageOf(error)}` };
    }
  },

  "announce-paused": async (ctx, run, decided) => {
    const session = decided.session;
    if (session === undefined) return done(ctx, run, decided);
    ctx.options.events.emit("session.paused", {
      work_item: run.input.workItem.ref,
      tmux_target: session.tmuxTarget,
      command_source: run.input.source,
      actor: run.input.actor,
    });
    return done(ctx, run, decided);
  },

  "notify-resumed": async (ctx, run, decided) => {
    const session = decided.session;
    if (session === undefined) return done(ctx, run, decided);
    const { input } = run;
    const error = await notifyResumed(ctx, session, input);
    // An assignment the graph gave while the session was paused is its to take now.
    if (error === undefined) await deliverPendingAssignment(ctx, input.workItem.ref);
    ctx.options.events.emit("session.resumed", {
      work_item: input.workItem.ref,
      tmux_target: session.tmuxTarget,
      command_source: input.source,
      actor: input.actor,
      notified: error === undefined,
      ...(error !== undefined ? { error } : {}),
    });
    ctx.react(run.turn.event, "completed");
    return {
      effect: decided.effect,
      ...(error !== undefined ? { problem: `resumed, but the harness could not be told to re-read the thread: ${error}` } : {}),
    };
  },

  none: done,
};

/**
 * Tells a resumed harness that events were dropped while it was paused (docs/control.md#the-keywords: they are not
 * replayed), through the path deliveries take — a dead pane is started again with the note as
 * its prompt. Undefined when told; otherwise why not (the resume stands either way).
 */
async function notifyResumed(ctx: PasteContext, session: SessionRecord, input: CommandInput): Promise<string | undefined> {
  const pullRequests = (session.pullRequests ?? []).map((link) => ({ ref: link.ref, url: pullRequestUrl(link.ref) }));
  const text = renderResumeNote({ workItem: input.workItem, actor: input.actor, source: input.source, pullRequests });
  try {
    const pasted = await paste(ctx, session, text);
    if (pasted === "closed" || pasted === "spawn-failed") return "the session was closed meanwhile";
    if (pasted === "interrupted") return "the-loop stopped while the session's harness was still being started";
    // Paused again since: the next resume tells it.
    return pasted === "paused" ? "the session was paused again meanwhile" : undefined;
  } catch (error) {
    return messageOf(error);
  }
}

/** Where a person (or the agent) reads a pull request named by its ref; undefined when the ref alone must do. */
function pullRequestUrl(ref: string): string | undefined {
  try {
    const parsed = parseWorkItemRef(ref);
    return parsed.tracker === "github" ? githubItemUrl(parsed, "pull_request") : undefined;
  } catch {
    return undefined;
  }
}
