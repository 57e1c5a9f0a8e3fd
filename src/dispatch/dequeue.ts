import { randomUUID } from "node:crypto";
import { spawnHold } from "../control/plan.js";
import { messageOf } from "../errors.js";
import { lookEvery } from "../supervision/index.js";
import { boundExcerpt } from "../routing/inbound.js";
import type { InboundEvent } from "../routing/inbound.js";
import { armsSpawn, standingState } from "../routing/router.js";
import { parseWorkItemRef } from "../workitem/index.js";
import { deliveryEvents, dispatchFailed, settle, turnOf, withSlot } from "../sessions/context.js";
import type { ContextNeeds, DeliveryEvents } from "../sessions/context.js";
import { isLive } from "../registry/record.js";
import { spawn } from "./spawn.js";

/**
 * A queued start whose slot has freed (docs/fleet.md). Before it spawns, the item is checked
 * again — no live session, not stopped, still authorized, open and armed — and one that no longer
 * is leaves the queue with `session.dequeued` saying why. A paused one stays where it is, unstarted. The spawn itself goes the
 * gated path every start takes, where the caps are weighed again under the queue's lock: if
 * another start took the slot meanwhile, the item keeps its place. Whether a session started.
 */
export async function dequeueStart(
  ctx: ContextNeeds<
    "accepting" | "forget" | "heavy" | "hooks" | "inputSeen" | "now" | "policy" | "react" | "readyAt" | "routing" | "self" | "templates" | "options"
  >,
  ref: string,
): Promise<boolean> {
  const { registry, control, trackers, startQueue } = ctx.options;
  if (startQueue === undefined) return false;
  const deliveryId = `queue-start-${randomUUID()}`;
  const events = deliveryEvents(ctx.options.events, ref, deliveryId);
  const leave = async (reason: string): Promise<false> => {
    if (await startQueue.remove(ref)) events.emit("session.dequeued", { reason });
    return false;
  };
  try {
    if (isLive(registry.get(ref))) return await leave("live");
    const standing = control.get(ref);
    const hold = spawnHold(standingState(standing, ctx.policy), ctx.policy.control);
    // A paused item keeps its place, and is not started while paused: its resume releases it in turn.
    if (hold === "execution-stopped" && standing?.command === "pause") return false;
    if (hold !== undefined) return await leave(hold === "execution-stopped" ? "stopped" : hold);
    const state = await trackers.forRef(ref).getItem(parseWorkItemRef(ref));
    if (state.state === "closed") return await leave("item-closed");
    if (!armsSpawn(state.labels, ctx.policy)) return await leave("spawn-policy");
    const queued = startQueue.read().find((entry) => entry.ref === ref);
    const bootNote = queued?.bootNote;
    const branch = queued?.branch;
    const event: InboundEvent = {
      source: "cli",
      deliveryId,
      kind: "commented",
      trackerEvent: "cli:start",
      workItems: [state.item],
      actor: standing?.actor ?? "the-loop",
      body: ctx.routing.control.keywords.start,
      labels: [...state.labels],
      itemState: state.state,
      title: state.title,
      occurredAt: ctx.now().toISOString(),
      excerpt: boundExcerpt({ command: "start", source: "queue" }),
      ...(bootNote !== undefined ? { bootNote } : {}),
      ...(branch !== undefined ? { checkoutBranch: branch } : {}),
    };
    const turn = turnOf(ctx, state.item, event);
    const outcome = await withSlot(ctx, (slot) => spawn(ctx, turn, slot, "retry"));
    if (outcome.kind === "held") {
      // Queued still (another start took the slot first): it keeps its place, and says nothing.
      if (outcome.hold !== "queued") settle(turn, outcome.hold);
      return false;
    }
    emitLeft(events);
    return outcome.kind === "started";
  } catch (error) {
    dispatchFailed(events, "spawn", `the queued start of ${ref} could not be carried out: ${messageOf(error)}`);
    return false;
  }
}

/** The item left the queue by taking its slot (its claim removed it). */
function emitLeft(events: DeliveryEvents): void {
  events.emit("session.dequeued", { reason: "slot-free" });
}

/** How often the daemon looks for a freed slot: a session closed anywhere starts the next queued item within a second. */
export const QUEUE_CHECK_MS = 500;

/**
 * The daemon's look for freed slots, every QUEUE_CHECK_MS until `signal` aborts (and its look for
 * freed places at graph nodes, routing.limits.perNode, on the same beat; `failed` says which). A look that
 * fails (a damaged queue file) is reported once until one succeeds again, not twice a second.
 */
export function watchStartQueue(
  startQueued: () => Promise<number>,
  signal: AbortSignal,
  warn: (message: string) => void,
  failed = "could not start the queued sessions",
): Promise<void> {
  return lookEvery(QUEUE_CHECK_MS, startQueued, signal, warn, failed);
}
