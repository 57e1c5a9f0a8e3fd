import type { EventSink } from "../events/log.js";

/**
 * The record of every hook call, as `hooks.ran` events (docs/hooks.md#observing-hooks). A call
 * that did anything but apply its answer is worth reading alone, so each one is its own event. A
 * call that applied is the routine case and the one a busy hook repeats: per hook and point, the
 * first APPLIED_SHOWN of each minute are their own events, and the rest of that minute become one
 * event with their count, their longest and their median duration. A hook called a thousand
 * times a second writes at most APPLIED_SHOWN + 1 applied events a minute, while a quiet one keeps
 * every call visible on its own.
 */

/** agh's outcome names for one call (docs/hooks.md#observing-hooks says which call gets which). */
export const HOOK_OUTCOMES = ["applied", "denied", "failed", "skipped", "dropped", "rejected"] as const;
export type HookOutcome = (typeof HOOK_OUTCOMES)[number];

/** Applied calls recorded one by one per hook, point and minute before the rest are aggregated. */
export const APPLIED_SHOWN = 5;
export const RUN_WINDOW_MS = 60_000;
/** Durations kept per window for the median: a uniform sample past this, so a flood holds bounded memory. */
const MEDIAN_SAMPLE = 1_000;

/** One call: which hook, at which point, how long, about what. Built once per call, with no copies: the record is on every hook's path. */
export interface HookCall {
  readonly hook: string;
  readonly point: string;
  readonly durationMs: number;
  readonly workItem?: string | undefined;
  readonly loopRunId?: string | undefined;
}

/** What a call that did not simply apply says: its error or denial reason, or the decisions it changed. */
export interface HookCallDetail {
  readonly error?: string | undefined;
  /** Applied at a lifecycle point: the decisions it changed. */
  readonly changed?: readonly string[] | undefined;
}

export interface HookRunRecorderOptions {
  /** The clock windows are read from, in epoch milliseconds (default Date.now). */
  readonly now?: () => number;
  /** Whether a closing window is flushed by a timer (default true; tests flush by hand). */
  readonly timers?: boolean;
}

interface Aggregate {
  readonly count: number;
  readonly median_ms: number;
  readonly since: string;
}

interface Window {
  readonly start: number;
  shown: number;
  /** Applied calls past the shown ones. */
  count: number;
  max: number;
  readonly sample: number[];
  timer?: NodeJS.Timeout;
}

export class HookRunRecorder {
  private readonly windows = new Map<string, Window>();
  private readonly now: () => number;

  constructor(
    private readonly events: EventSink,
    private readonly options: HookRunRecorderOptions = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Records one call. Never throws: a record is not part of running the hook. */
  record(call: HookCall, outcome: HookOutcome, detail?: HookCallDetail): void {
    try {
      if (outcome !== "applied") {
        this.emit(call, outcome, detail, undefined);
        return;
      }
      const key = `${call.hook}\u0000${call.point}`;
      const start = Math.floor(this.now() / RUN_WINDOW_MS) * RUN_WINDOW_MS;
      let window = this.windows.get(key);
      if (window !== undefined && window.start !== start) {
        this.flushKey(key, window);
        window = undefined;
      }
      if (window === undefined) {
        window = { start, shown: 0, count: 0, max: 0, sample: [] };
        this.windows.set(key, window);
      }
      if (window.shown < APPLIED_SHOWN) {
        window.shown += 1;
        this.emit(call, outcome, detail, undefined);
        return;
      }
      this.aggregate(key, window, call.durationMs);
    } catch {
      // A sink that throws must not turn a hook's record into the-loop's failure.
    }
  }

  /** Writes every aggregate still open (at close, or when a test ends a minute). */
  flush(): void {
    for (const [key, window] of [...this.windows]) this.flushKey(key, window);
  }

  private aggregate(key: string, window: Window, durationMs: number): void {
    window.count += 1;
    window.max = Math.max(window.max, durationMs);
    if (window.sample.length < MEDIAN_SAMPLE) window.sample.push(durationMs);
    else {
      // Reservoir sampling: every call of the window has the same chance to be in the sample.
      const slot = Math.floor(Math.random() * window.count);
      if (slot < MEDIAN_SAMPLE) window.sample[slot] = durationMs;
    }
    if (window.timer === undefined && this.options.timers !== false) {
      window.timer = setTimeout(() => this.flushKey(key, window), Math.max(0, window.start + RUN_WINDOW_MS - this.now()));
      // A daemon draining to exit must not wait a minute for a count.
      window.timer.unref();
    }
  }

  private flushKey(key: string, window: Window): void {
    if (this.windows.get(key) === window) this.windows.delete(key);
    if (window.timer !== undefined) clearTimeout(window.timer);
    if (window.count === 0) return;
    const [hook = "", point = ""] = key.split("\u0000");
    try {
      this.emit({ hook, point, durationMs: window.max }, "applied", undefined, {
        count: window.count,
        median_ms: median(window.sample),
        since: new Date(window.start).toISOString(),
      });
    } catch {
      // As in record().
    }
  }

  private emit(call: HookCall, outcome: HookOutcome, detail: HookCallDetail | undefined, aggregate: Aggregate | undefined): void {
    // Keys without a value are left undefined (the log writes no such key), not spread in.
    const changed = detail?.changed;
    this.events.emit("hooks.ran", {
      hook: call.hook,
      point: call.point,
      outcome,
      duration_ms: call.durationMs > 0 ? Math.round(call.durationMs) : 0,
      work_item: call.workItem,
      loop_run_id: call.loopRunId,
      error: detail?.error,
      changed: changed !== undefined && changed.length > 0 ? [...changed] : undefined,
      count: aggregate?.count,
      median_ms: aggregate?.median_ms,
      since: aggregate?.since,
    });
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  const middle = Math.floor(sorted.length / 2);
  const value = sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
  return Math.round(value);
}
