/**
 * Supervision of the sessions' harnesses (routing.supervision, docs/fleet.md#supervision) as
 * plain functions over data: what to do about a session whose pane the daemon found not live —
 * nothing, wait out the backoff, start the harness again (which restart in a row it is), or give
 * the session up as failed to start. The daemon's check (dispatch/supervise.ts) reads the facts
 * and carries the decision out.
 */

export interface SupervisionSettings {
  readonly enabled: boolean;
  readonly maxRestarts: number;
  readonly backoffSeconds: number;
}

/** A harness that ran this long before it died was healthy: its restarts in a row count from 0 again. */
export const STABLE_RUN_MS = 10 * 60_000;
/** The longest wait between two restarts, however many came before. */
export const BACKOFF_MAX_MS = 5 * 60_000;

/** What the check knows of one session when it decides. */
export interface SupervisionFacts {
  readonly status: "active" | "paused" | "closed" | "failed";
  /** The pane, as the runner probed it. */
  readonly pane: "live" | "dead" | "absent";
  /** When the harness was last started (ms since the epoch); undefined: not started yet (its claimer is still starting it). */
  readonly harnessStartedAt: number | undefined;
  /**
   * The last start was made by another process that still runs, within the bound a start may
   * take: that process is starting the harness now, and a pane not live yet is its to bring up.
   */
  readonly startingElsewhere: boolean;
  /** Restarts in a row so far (the record's `restarts`). */
  readonly restarts: number;
  /** The item's standing control command is a stop or a pause: whatever ended the harness, it stays ended. */
  readonly held: boolean;
  /** The item's graph run ended before this session's harness died (the end of its run). */
  readonly runEnded: boolean;
  readonly now: number;
}

export type SupervisionDecision =
  | { readonly kind: "none"; readonly why: "disabled" | "not-active" | "not-started" | "live" | "starting-elsewhere" | "held" | "run-ended" }
  /** The backoff before restart `attempt` has not passed yet: it is due at `dueAt`. */
  | { readonly kind: "wait"; readonly attempt: number; readonly dueAt: number }
  | { readonly kind: "restart"; readonly attempt: number }
  /** Every restart allowed was spent: the session failed to start. */
  | { readonly kind: "fail"; readonly restarts: number };

/** The wait before restart `attempt` (1-based) in a row, from the last start: none for the first, then backoffSeconds doubling. */
export function backoffMs(attempt: number, backoffSeconds: number): number {
  if (attempt <= 1) return 0;
  return Math.min(backoffSeconds * 1000 * 2 ** (attempt - 2), BACKOFF_MAX_MS);
}

export function planSupervision(settings: SupervisionSettings, facts: SupervisionFacts): SupervisionDecision {
  if (!settings.enabled) return { kind: "none", why: "disabled" };
  // A paused session's harness is started again by the delivery its resume lets through; a closed or failed one never.
  if (facts.status !== "active") return { kind: "none", why: "not-active" };
  if (facts.harnessStartedAt === undefined) return { kind: "none", why: "not-started" };
  if (facts.pane === "live") return { kind: "none", why: "live" };
  if (facts.startingElsewhere) return { kind: "none", why: "starting-elsewhere" };
  if (facts.held) return { kind: "none", why: "held" };
  if (facts.runEnded) return { kind: "none", why: "run-ended" };
  const ran = facts.now - facts.harnessStartedAt;
  const before = ran >= STABLE_RUN_MS ? 0 : facts.restarts;
  if (before >= settings.maxRestarts) return { kind: "fail", restarts: before };
  const attempt = before + 1;
  const dueAt = facts.harnessStartedAt + backoffMs(attempt, settings.backoffSeconds);
  if (facts.now < dueAt) return { kind: "wait", attempt, dueAt };
  return { kind: "restart", attempt };
}

/** How a dead pane's harness ended, as tmux tells it (`pane_dead_status`, `pane_dead_signal`). */
export interface HarnessExit {
  readonly status?: number | undefined;
  readonly signal?: number | undefined;
}

/** The exit in words: `exited with status 1`, `was killed by signal 15`, or that its pane is gone. */
export function exitText(pane: "dead" | "absent", exit: HarnessExit | undefined): string {
  if (pane === "absent") return "its tmux session is gone";
  if (exit?.signal !== undefined) return `was killed by signal ${exit.signal}`;
  if (exit?.status !== undefined) return `exited with status ${exit.status}`;
  return "exited";
}

/** Why a session failed to start, as its record, its event, its comment and `status` say it. */
export function failureText(harness: string, how: string, restarts: number, maxRestarts: number): string {
  const tried = restarts === 0 ? "it was not started again" : `after ${restarts} restart${restarts === 1 ? "" : "s"} in a row`;
  return `its harness (${harness}) ${how}, ${tried} (routing.supervision.maxRestarts: ${maxRestarts})`;
}
