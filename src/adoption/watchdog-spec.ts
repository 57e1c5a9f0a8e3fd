/**
 * What a session's watchdog is told at its start (watchdog.ts starts it, watchdog-main.ts is the
 * program): one JSON line on its stdin, which it reads once and closes. The database's URL is in
 * it, so it is never in the watchdog's argv or environment, which any process of the user can read.
 */
export interface WatchdogSpec {
  /** postgresql://… — a secret. */
  readonly url: string;
  /** The canonical work item ref whose lease the watchdog reads. */
  readonly item: string;
  /** The daemon that must own the lease for the harness to keep running. */
  readonly owner: string;
  /** The session's tmux target, and the tmux server it runs on (`tmux -L`; the default server when absent). */
  readonly target: string;
  readonly socketName?: string;
  /** Between SIGTERM and SIGKILL when it ends the harness (routing.tmux.harnessKillGraceSeconds). */
  readonly killGraceMs: number;
  /** How long the lease runs from the watchdog's start, until its first look (the owner just took or renewed it). */
  readonly leaseMs: number;
  /** Where it writes one line when it ends a harness, and why. */
  readonly logFile?: string;
  /**
   * How long the session may take to appear: the watchdog is started before the harness, so a
   * daemon killed in between leaves no harness unwatched. Until it is first seen live (or this
   * passes), an absent session does not end the watch. 0 when absent.
   */
  readonly appearWithinMs?: number;
}

/** The spec read from the watchdog's stdin, or why it does not read. */
export function parseWatchdogSpec(text: string): WatchdogSpec | { readonly problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: "its spec on stdin is not JSON" };
  }
  if (typeof value !== "object" || value === null) return { problem: "its spec on stdin is not an object" };
  const spec = value as Record<string, unknown>;
  for (const key of ["url", "item", "owner", "target"] as const) {
    if (typeof spec[key] !== "string" || spec[key] === "") return { problem: `its spec has no ${key}` };
  }
  for (const key of ["killGraceMs", "leaseMs"] as const) {
    if (typeof spec[key] !== "number" || !Number.isFinite(spec[key]) || spec[key] < 0) return { problem: `its spec has no ${key}` };
  }
  if (spec.appearWithinMs !== undefined && (typeof spec.appearWithinMs !== "number" || !Number.isFinite(spec.appearWithinMs) || spec.appearWithinMs < 0)) {
    return { problem: "its spec's appearWithinMs is not a number of milliseconds" };
  }
  if (spec.socketName !== undefined && typeof spec.socketName !== "string") return { problem: "its spec's socketName is not a string" };
  if (spec.logFile !== undefined && typeof spec.logFile !== "string") return { problem: "its spec's logFile is not a string" };
  return spec as unknown as WatchdogSpec;
}
