import { messageOf } from "../errors.js";
import { admit, capText, hasLimits, placeInQueue, startable } from "../routing/limits.js";
import type { FullCap, LiveSlot, QueuedStart } from "../routing/limits.js";
import type { QueueEntry } from "../registry/start-queue.js";
import { hasLabel, markSelfAuthored, parseWorkItemRef } from "../workitem/index.js";
import { dispatchFailed } from "../sessions/context.js";
import type { ContextNeeds, Turn } from "../sessions/context.js";
import type { ClaimResult } from "../registry/registry.js";

/**
 * The concurrency caps at the claim (routing.limits, docs/fleet.md). A start is admitted or
 * queued under the start queue's lock, with the live sessions counted inside it, so of two
 * processes racing for the last slot one claims and the other queues. The queue's order decides
 * who goes first (routing/limits.ts); the claim itself still guarantees one session per item.
 */

/** A start the caps held: its place in the queue, and whether this start is what put it there. */
export interface Queued {
  readonly position: number;
  readonly ahead: number;
  readonly cap: FullCap;
  /** False when the item was already queued (a second event, a retry): nothing more is announced. */
  readonly fresh: boolean;
}

export type LimitedClaim = ClaimResult | { readonly queued: Queued };

/** The live sessions as the caps count them: each with its harness, and whether it runs on this daemon (its lease is this daemon's). */
export function liveSlots(ctx: ContextNeeds<"ownership", "registry">, records = ctx.options.registry.list({ status: "live" }).records): LiveSlot[] {
  const ownership = ctx.ownership;
  return records.map((record) => ({ ref: record.workItem.ref, harness: record.harness, here: ownership?.holds(record.workItem.ref) ?? true }));
}

/** Whether the item's standing command is a pause: its queued start keeps its place and takes no slot (docs/fleet.md). */
export function isPausedInQueue(ctx: ContextNeeds<never, "control">, ref: string): boolean {
  try {
    const standing = ctx.options.control.get(ref);
    return standing !== undefined && standing.clearedAt === undefined && standing.command === "pause";
  } catch {
    // A damaged control record: not a pause the queue can honour; the dequeue's own check reads it again and reports it.
    return false;
  }
}

/** The queue as the caps weigh it: each entry with whether its item is paused. */
export function weighedQueue(ctx: ContextNeeds<never, "control">, entries: readonly QueueEntry[]): QueuedStart[] {
  return entries.map((entry) => ({ ...entry, paused: isPausedInQueue(ctx, entry.ref) }));
}

/**
 * The claim, when the caps let the start through; else its place in the queue. Called under the
 * item's control lock (the lock order is control, queue, session record). Without caps and with
 * nothing queued, it is the claim alone. `labels`: the item's, as the start saw them — with
 * routing.limits.priorityLabel among them, a start joining the queue goes ahead of every start
 * without it (its place is decided once, when it joins).
 */
export async function claimWithinLimits(
  ctx: ContextNeeds<"now" | "routing" | "ownership", "control" | "registry" | "startQueue">,
  ref: string,
  harness: string,
  start: { readonly labels: readonly string[]; readonly bootNote?: string | undefined; readonly branch?: string | undefined },
  claim: () => Promise<ClaimResult>,
): Promise<LimitedClaim> {
  const queue = ctx.options.startQueue;
  const limits = ctx.routing.limits;
  if (queue === undefined || (!hasLimits(limits) && queue.read().length === 0)) return claim();
  const priority = limits.priorityLabel !== undefined && hasLabel(start.labels, limits.priorityLabel);
  let running = false;
  const decided = await queue.transaction<LimitedClaim>(async (entries) => {
    const weighed = weighedQueue(ctx, entries);
    // Counted from the store, under the queue's lock: every daemon's sessions, each claim before this one's included.
    const live = liveSlots(ctx, (await ctx.options.registry.listNow({ status: "live" })).records);
    running = live.some((slot) => slot.ref === ref);
    const admission = admit(limits, live, weighed, { ref, harness, priority });
    if (admission.kind === "start") {
      const claimed = await claim();
      // Claimed, or another process's session runs for it: either way it waits no more.
      return { entries: entries.filter((entry) => entry.ref !== ref), result: claimed };
    }
    const index = entries.findIndex((entry) => entry.ref === ref);
    if (index !== -1) return { result: { queued: { position: index + 1, ahead: admission.ahead, cap: admission.cap, fresh: false } } };
    const place = placeInQueue(weighed, priority);
    const entry: QueueEntry = {
      ref,
      harness,
      queuedAt: ctx.now().toISOString(),
      ...(priority ? { priority: true as const } : {}),
      ...(start.bootNote !== undefined ? { bootNote: start.bootNote } : {}),
      ...(start.branch !== undefined ? { branch: start.branch } : {}),
    };
    return {
      entries: [...entries.slice(0, place), entry, ...entries.slice(place)],
      result: { queued: { position: place + 1, ahead: admission.ahead, cap: admission.cap, fresh: true } },
    };
  });
  // A queued start holds no lease: whichever daemon has room when a slot frees takes it from the shared queue.
  if ("queued" in decided && !running) await ctx.ownership?.release?.(ref);
  return decided;
}

/** The comment a queued start leaves on its item. */
export function queuedText(ref: string, queued: Queued): string {
  return markSelfAuthored(
    [
      `⏳ **the-loop queued \`${ref}\`**: position ${queued.position} in the start queue (${queued.ahead} ahead), because ${capText(queued.cap)} is reached.`,
      "",
      `Its session starts by itself when a slot frees. \`the-loop sessions stop --work-item ${ref}\` takes it out of the queue; \`the-loop why --work-item ${ref}\` shows where it stands.`,
    ].join("\n"),
  );
}

/**
 * What a fresh place in the queue tells: `session.queued`, and the marked comment with the
 * position. A comment that cannot be posted is reported; the item stays queued.
 */
export async function announceQueued(ctx: ContextNeeds<never, "trackers">, turn: Turn, harness: string, queued: Queued): Promise<void> {
  if (!queued.fresh) return;
  turn.events.emit("session.queued", { harness, position: queued.position, cap: capText(queued.cap) });
  try {
    await ctx.options.trackers.forRef(turn.workItem.ref).postComment(parseWorkItemRef(turn.workItem.ref), queuedText(turn.workItem.ref, queued));
  } catch (error) {
    dispatchFailed(turn.events, "spawn", `the start is queued, but its comment could not be posted: ${messageOf(error)}`);
  }
}

/** The queued starts a free slot lets through now, in the queue's order, a paused one passed over (a damaged queue: none, reported by its reader). */
export function queuedToStart(ctx: ContextNeeds<"routing" | "ownership", "control" | "registry" | "startQueue">): string[] {
  const queue = ctx.options.startQueue;
  if (queue === undefined) return [];
  const entries = queue.read();
  if (entries.length === 0) return [];
  return startable(ctx.routing.limits, liveSlots(ctx), weighedQueue(ctx, entries)).map((entry) => entry.ref);
}

/** A stop takes its item out of the queue (`session.dequeued`, reason stopped); the stop itself is recorded as any stop. */
export async function leaveQueue(ctx: ContextNeeds<never, "startQueue">, turn: Turn, reason: string): Promise<void> {
  const queue = ctx.options.startQueue;
  if (queue === undefined) return;
  try {
    if (await queue.remove(turn.workItem.ref)) turn.events.emit("session.dequeued", { reason });
  } catch (error) {
    // The stop stands: a queued start of a stopped item is dropped at its dequeue anyway (dequeue.ts).
    dispatchFailed(turn.events, "control", `the stop is recorded, but the item could not be taken out of the start queue: ${messageOf(error)}`);
  }
}
