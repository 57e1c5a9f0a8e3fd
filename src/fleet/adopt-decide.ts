import type { LeaseRow } from "../state/postgres/leases.js";

/**
 * The decisions of fencing and adoption when daemons share one database (docs/scale.md, "Losing a
 * host"): what a session's watchdog does after each look at its owner's lease, how long it may
 * take to end the harness, whether the adoption grace outlasts it, and which items a daemon
 * adopts. Plain functions over rows and clocks; src/adoption/ carries them out.
 */

/** How often a watchdog reads its owner's lease. */
export const WATCHDOG_CHECK_MS = 2_000;
/** How long one read of the lease may take before it counts as failed (connect and query). */
export const WATCHDOG_QUERY_MS = 2_000;
/** After SIGKILL the pane dies at once; the runner waits at most this long for it (TmuxRunner's KILL_SETTLE_MS). */
const KILL_SETTLE_MS = 2_000;

/**
 * The longest a watchdog takes, after its owner's lease lapsed, to have ended the harness: the
 * look under way when the lease lapsed (a check interval, its read bounded by WATCHDOG_QUERY_MS),
 * then SIGTERM, the harness's grace (routing.tmux.harnessKillGraceSeconds), SIGKILL and its settle.
 */
export function watchdogReactionMs(killGraceMs: number): number {
  return WATCHDOG_CHECK_MS + WATCHDOG_QUERY_MS + killGraceMs + KILL_SETTLE_MS;
}

/** Why the adoption grace cannot work with this kill grace, or undefined: another daemon must adopt only once the watchdog has surely ended the old harness. */
export function adoptGraceProblem(adoptGraceSeconds: number, killGraceSeconds: number): string | undefined {
  const reactionMs = watchdogReactionMs(Math.round(killGraceSeconds * 1000));
  if (adoptGraceSeconds * 1000 > reactionMs) return undefined;
  return (
    `state.adoptGraceSeconds (${adoptGraceSeconds}) is not longer than a session watchdog's reaction time (${reactionMs / 1000} s with routing.tmux.harnessKillGraceSeconds ${killGraceSeconds}): ` +
    `another daemon could adopt an item while its old harness still runs; raise state.adoptGraceSeconds above ${Math.ceil(reactionMs / 1000)} or lower the kill grace`
  );
}

/** One look of a watchdog at its item's lease: who owns it and how long it still runs (by the database's clock), or that the read failed. */
export type LeaseLook = { readonly owner: string; readonly remainingMs: number } | { readonly owner: undefined } | { readonly failed: string };

export type WatchdogVerdict = { readonly keep: true; readonly deadlineMs: number } | { readonly end: string };

/**
 * What a watchdog does after a look taken at `startedMs` (its own monotonic clock): while its
 * owner holds the lease, it keeps the harness and pushes its deadline to the lease's end as of
 * the look's start (never later than the lease really ends); a lease another daemon holds, or
 * none, ends the harness at once; a failed read keeps it only until the deadline of the last
 * good look — a watchdog that cannot reach the database fences as if the lease lapsed.
 */
export function watchdogVerdict(look: LeaseLook, owner: string, deadlineMs: number, startedMs: number, nowMs: number): WatchdogVerdict {
  if ("failed" in look) {
    return nowMs < deadlineMs ? { keep: true, deadlineMs } : { end: `the lease could not be read (${look.failed}) and its last known end passed` };
  }
  if (look.owner === undefined) return { end: "the item has no lease" };
  if (look.owner !== owner) return { end: `the daemon "${look.owner}" owns the item now` };
  const deadline = startedMs + Math.max(0, look.remainingMs);
  if (nowMs >= deadline) return { end: `the lease of "${owner}" lapsed` };
  return { keep: true, deadlineMs: Math.max(deadlineMs, deadline) };
}

/** What a daemon does with an item whose lease is another daemon's. */
export type AdoptionDecision = "adopt" | "wait" | "leave" | "paused";

/**
 * Whether `self` adopts an item: only one whose lease another daemon held and let lapse more than
 * the grace ago (the lease bound plus a grace longer than the watchdog's reaction, so the old
 * harness is surely ended), and only one with an active session. A paused session stays paused
 * (`paused`: not adopted into running); an item without a live session is nobody's to adopt.
 */
export function adoptionDecision(
  lease: Pick<LeaseRow, "owner" | "expiresAt"> | undefined,
  session: "active" | "paused" | undefined,
  self: string,
  now: Date,
  graceMs: number,
): AdoptionDecision {
  if (lease === undefined || lease.owner === self || session === undefined) return "leave";
  if (now.getTime() < lease.expiresAt.getTime() + graceMs) return "wait";
  return session === "paused" ? "paused" : "adopt";
}
