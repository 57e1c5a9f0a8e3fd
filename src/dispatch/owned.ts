import type { ControlOutcome, ControlRequest } from "../control/types.js";
import type { EventSink } from "../events/log.js";
import { OwnedElsewhereError } from "../fleet/ownership.js";
import type { Ownership, TakenLease } from "../fleet/ownership.js";
import type { InboundEvent } from "../routing/inbound.js";
import { isLive } from "../registry/record.js";
import type { Decision } from "../routing/router.js";
import { HELD } from "../sessions/context.js";
import type { ContextNeeds, HandleResult } from "../sessions/context.js";

/** Hands an event refused here to the item's owner; whether it was handed on. */
export type ForwardEvent = (refusal: OwnedElsewhereError) => Promise<boolean>;
/** The dispatcher's forwarding of an event (src/forwarding/'s Forwarder.sendEvent). */
export type EventForward = (event: InboundEvent, refusal: OwnedElsewhereError) => Promise<boolean>;

/** What a job whose item is owned elsewhere answers instead, and whether its event is handed on. */
export interface Otherwise<T> {
  readonly value: T;
  readonly work?: "event";
  readonly forward?: ForwardEvent;
  /** What the work answers when an adoption its turn ran left the new session waiting in the start queue: try again later (an event). */
  readonly held?: () => T;
}

/**
 * The event's forward to its owner, if the dispatcher has one. Once handed on, the event is
 * forgotten by this daemon's dedupe: should the item come to this daemon later, the inbox row runs
 * here too rather than being dropped as a duplicate; a second copy here goes to the same row.
 */
export function forwardingOf(forward: EventForward | undefined, event: InboundEvent, forget: (event: InboundEvent) => void): { forward?: ForwardEvent } {
  if (forward === undefined) return {};
  return {
    forward: async (refusal) => {
      const sent = await forward(event, refusal);
      if (sent) forget(event);
      return sent;
    },
  };
}

/**
 * An event's answer while an adoption's start waits in the start queue: forgotten by the dedupe, so
 * it is tried again later, and held rather than failed (a poller does not count it as an attempt).
 */
export function heldEvent(event: InboundEvent, forget: (event: InboundEvent) => void): () => HandleResult {
  return () => {
    forget(event);
    return HELD;
  };
}

/**
 * Decisions that would carry news to the item's agent if it ran: with no live session and the
 * item's adoption queued, they wait for the session the queued start makes. A close, a command
 * and the final guards act on the item as it is; a paused or stopped item waits for no one.
 */
const WAITING_DROPS: ReadonlySet<string> = new Set(["spawn-policy", "awaiting-start", "no-session"]);

/**
 * The event's answer in a later turn while the adoption its first turn ran still waits in the
 * start queue (an entry with a boot note, which only an adoption gives, and no live session):
 * held again, its lease given up as a queued start's is, so whichever daemon has room starts it.
 * Once the start is carried out the event reaches that session (here, or forwarded to its owner);
 * once the item is no longer queued it is decided as any event. Undefined when it does not wait.
 */
export async function heldForAdoption(
  ctx: ContextNeeds<"forget" | "ownership", "registry" | "startQueue">,
  event: InboundEvent,
  decision: Decision,
): Promise<HandleResult | undefined> {
  const ref = decision.workItem?.ref;
  // Only a daemon sharing its state adopts: on files nothing is ever queued for an adoption, and no event pays for the look.
  if (ctx.ownership?.shared !== true || ref === undefined || event.kind === "closed") return undefined;
  if (decision.action !== "spawn" && !(decision.action === "drop" && WAITING_DROPS.has(decision.reason))) return undefined;
  const { registry, startQueue } = ctx.options;
  let queued: boolean;
  try {
    queued = !isLive(registry.get(ref)) && (startQueue?.read().some((entry) => entry.ref === ref && entry.bootNote !== undefined) ?? false);
  } catch {
    // A damaged record or queue: the event is decided as it stands, where the damage is reported.
    return undefined;
  }
  if (!queued) return undefined;
  await ctx.ownership?.release?.(ref);
  return heldEvent(event, ctx.forget)();
}

/** What a turn's own work does to an item whose lease the turn took from a lost daemon: closes it (the item closed) or stops it. */
export type TurnIntent = "close" | "stop";
/** A turn's intent for each item whose lease it takes (see turnIntent). */
export type IntentOf = (item: string) => TurnIntent | undefined;

/**
 * The intent of a turn whose work is the router's `decision` on `item`: a close of the item's own
 * session, or a stop command for it. Anything else (a comment, a pause, a start) is undefined:
 * the takeover adopts the item into a new session first.
 */
export function turnIntent(decision: Decision | undefined, item: string): TurnIntent | undefined {
  if (decision?.workItem?.ref !== item) return undefined;
  if (decision.action === "close") return "close";
  return decision.action === "control" && decision.command === "stop" ? "stop" : undefined;
}

/**
 * Work on work items runs only where their owner is (docs/scale.md, "Many daemons, one
 * database"): before a job of an item's queue runs, this daemon takes or renews the lease of each
 * item it names. Work for an item another live daemon owns is not run here: an event or a
 * command says so (`lease.refused`; a command's caller gets the error, naming the owner's host),
 * and the periodic looks (the start queue, the stall check) pass it by quietly with `otherwise`.
 * An event with a `forward` is handed to the owner instead (src/forwarding/: the inbox), and
 * refused here only when it could not be.
 * On the file store the lease is a no-op, and the job runs as it always has.
 * With `takenOver`, each lease the take took from a lost daemon is handed to it first.
 */
export async function whereOwned<T>(
  ownership: Ownership,
  events: EventSink,
  keys: readonly string[],
  job: () => Promise<T>,
  otherwise?: Otherwise<T>,
  takenOver?: OnLeaseTaken,
): Promise<T> {
  let taken: readonly TakenLease[];
  try {
    taken = await ownership.acquire(keys);
  } catch (error) {
    if (!(error instanceof OwnedElsewhereError)) throw error;
    if (otherwise?.forward !== undefined && (await otherwise.forward(error))) return otherwise.value;
    if (otherwise === undefined || otherwise.work !== undefined) {
      events.emit("lease.refused", {
        work_item: error.item,
        daemon: ownership.name,
        owner: error.owner,
        ...(error.host !== undefined ? { host: error.host } : {}),
        work: otherwise?.work ?? "command",
      });
    }
    if (otherwise === undefined) throw error;
    return otherwise.value;
  }
  // A lease taken from a lost daemon: what it ran is adopted first, in this same turn, so the
  // job (an event, a command) acts on the adopted session, never on the lost host's record.
  if (takenOver !== undefined && taken.length > 0) {
    let queued = false;
    for (const lease of taken) if ((await takenOver(lease)) === "queued") queued = true;
    // The adopted start waits in the start queue, its lease given up to whichever daemon has room:
    // an event waits for that session (tried again later); other work looks again at who owns the item.
    if (queued && otherwise?.held !== undefined) return otherwise.held();
    return whereOwned(ownership, events, keys, job, otherwise, takenOver);
  }
  return job();
}

/** What runs, in the item's turn, for a lease taken from a lost daemon (the adoption, src/adoption/). */
export type OnLeaseTaken = (taken: TakenLease) => Promise<TakeoverOutcome>;

/** What a takeover did: adopted into a session here, adopted into the start queue, or nothing (no active session to adopt). */
export type TakeoverOutcome = "adopted" | "queued" | "none";

/**
 * Adopts an item whose lease a turn took from a lost daemon; `start` applies a start within that
 * turn; `intent`, what the turn's own work then does to the item (no new agent for a close or a stop).
 */
export type Takeover = (taken: TakenLease, start: (request: ControlRequest) => Promise<ControlOutcome>, intent?: TurnIntent) => Promise<TakeoverOutcome>;
