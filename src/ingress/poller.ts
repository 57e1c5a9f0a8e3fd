import { performance } from "node:perf_hooks";
import { messageOf } from "../errors.js";
import type { EventSink } from "../events/index.js";
import type { EventHandler } from "../routing/inbound.js";
import { writeJsonAtomic } from "../state/index.js";
import type { DocumentStore } from "../state/index.js";
import { warnLegacyPollState } from "./legacy-poll-state.js";
import type { LegacyLedger } from "./legacy-poll-state.js";
import { trackerPollSource } from "./local-source.js";
import type { TrackerPollSource } from "./local-source.js";
import { MAX_HANDLED_IDS, loadPollState, savePollSources, savePollState } from "./poll-state.js";
import type { PollSourceState, PollState } from "./poll-state.js";
import type { PollSourceRuntime, SourceBatch, SourceItem } from "./source.js";
import { SharedSources } from "./shared-sources.js";
import type { SourceClaims, SourcePlace } from "./shared-sources.js";

export { localPollSources, trackerPollSource } from "./local-source.js";
export type { TrackerPollSource } from "./local-source.js";
export type { PollSourceRuntime, SourceBatch, SourceItem } from "./source.js";
export type { SourceClaims, SourcePlace } from "./shared-sources.js";
export type { EventHandler, HandleResult } from "../routing/inbound.js";

/**
 * Pull ingress: reads each source's change feed, hands every new change to the handler (the
 * dispatcher) and remembers what is settled. A change is settled when the handler says so, or
 * when it has failed `maxAttempts` times (one the handler holds waits instead: see `maxHeldMs`);
 * the cursor moves past a batch only once all of it is settled, and each settled change is on
 * disk as soon as it settles, so neither a failure nor a `kill -9` at any instant loses a change
 * or hands out a settled one again.
 */

export interface PollerOptions {
  /** A tracker-bound source (`{key, tracker, scope}`) is read through its change feed. */
  readonly sources: readonly (PollSourceRuntime | TrackerPollSource)[];
  readonly stateFile: string;
  /** Where the state is kept instead of `stateFile`'s file: the database's document (state/backend.ts). */
  readonly stateDocument?: DocumentStore;
  /**
   * The sources' locks when several daemons share the state (with `stateDocument`): a source is
   * read only while this process holds its lock, and only its own sources' state is written.
   */
  readonly claims?: SourceClaims;
  /**
   * Set when `stateFile` is the pre-state-root file kept in use because the new default does not
   * exist yet: the poller then says once, naming `newFile`, that the file should move.
   */
  readonly legacyState?: { readonly newFile: string };
  /** Told about problems worth a person's attention (stderr in the daemon). */
  readonly warn?: (message: string) => void;
  /** Heartbeat, rewritten after every cycle. */
  readonly statusFile: string;
  readonly handler: EventHandler;
  readonly events: EventSink;
  /** Pause between the end of one cycle and the start of the next. */
  readonly intervalMs: number;
  /** Failures after which a change is given up (default 3). */
  readonly maxAttempts?: number;
  /**
   * How long a change the handler holds (HandleResult.held: an adopted item's start waits in the
   * start queue) is handed out again each cycle without counting as a failure, from when it was
   * first held; past it, it is given up (default DEFAULT_MAX_HELD_MS). The bound keeps a source's
   * cursor from staying behind it for good: the cursor moves only past settled changes.
   */
  readonly maxHeldMs?: number;
  readonly now?: () => Date;
}

export interface CycleSummary {
  /** New changes read (those settled in an earlier cycle are not counted). */
  readonly changes: number;
  /** Changes handed to the handler. */
  readonly dispatched: number;
  /** Tracker reads that failed, handler failures, and state that could not be saved. */
  readonly errors: number;
  readonly durationMs: number;
  /** An abort stopped the cycle before it handed out everything. */
  readonly interrupted: boolean;
}

/** The heartbeat file's content. */
export interface PollerStatus {
  readonly startedAt: string;
  readonly lastCycleAt: string;
  readonly intervalSeconds: number;
  readonly lastCycle: CycleSummary;
  /** With shared locks: where each source is polled, here or by which daemon. */
  readonly sources?: Readonly<Record<string, SourcePlace>>;
}

export const DEFAULT_MAX_ATTEMPTS = 3;
/** An hour: a queued adoption's start waits for a slot, and the change is on the item whatever becomes of it. */
export const DEFAULT_MAX_HELD_MS = 60 * 60_000;

/**
 * The run loop never pauses less than this when it wakes early for a deferred source, so a
 * deferral that ends "now" cannot turn the loop into a busy one.
 */
const MIN_PAUSE_MS = 10;

/** The deferral reason of a source that asked to be read less often (X-Poll-Interval). */
const POLL_INTERVAL = "poll-interval";

/** What one cycle counts as it goes. */
interface Tally {
  changes: number;
  dispatched: number;
  errors: number;
  interrupted: boolean;
}

export class Poller {
  private readonly sources: readonly PollSourceRuntime[];
  /** Per source key: not read again before `until` (rate limits, X-Poll-Interval). Memory only. */
  private readonly deferred = new Map<string, { until: Date; reason: string }>();
  /** Sources whose answers carry a poll interval: reported when it starts, not with every answer. */
  private readonly pacedSources = new Set<string>();
  private readonly maxAttempts: number;
  private readonly maxHeldMs: number;
  private readonly now: () => Date;
  private readonly startedAt: string;
  /** The sources' locks, when the state is shared. */
  private readonly shared: SharedSources | undefined;
  private state: PollState | undefined;
  private cycling = false;
  /** A wake came since the current (or last) cycle began: the next one follows after the shortest pause. */
  private wakeWanted = false;
  /** Ends the pause under way, if any. */
  private endPause: (() => void) | undefined;
  private last: CycleSummary | undefined;
  // Saves are serialized: one write in flight, later requests coalesced into the next write.
  private saving: Promise<void> | undefined;
  private saveWanted = false;

  constructor(private readonly options: PollerOptions) {
    const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be a positive integer, got ${maxAttempts}`);
    }
    const maxHeldMs = options.maxHeldMs ?? DEFAULT_MAX_HELD_MS;
    if (!Number.isFinite(maxHeldMs) || maxHeldMs < 0) throw new RangeError(`maxHeldMs must be a non-negative number of milliseconds, got ${maxHeldMs}`);
    this.maxHeldMs = maxHeldMs;
    const keys = options.sources.map((source) => source.key);
    const duplicate = keys.find((key, index) => keys.indexOf(key) !== index);
    // Two sources with one key would overwrite each other's cursor.
    if (duplicate !== undefined) throw new RangeError(`two poll sources share the key "${duplicate}"`);
    this.sources = options.sources.map((source) => ("read" in source ? source : trackerPollSource(source.key, source.tracker, source.scope)));
    this.maxAttempts = maxAttempts;
    this.now = options.now ?? (() => new Date());
    this.startedAt = this.now().toISOString();
    this.shared = options.claims === undefined ? undefined : new SharedSources(options.claims, options.events, this.now);
  }

  get lastCycle(): CycleSummary | undefined {
    return this.last;
  }

  /**
   * Loops cycle → pause until the signal aborts; the pause ends at once on abort, and on a wake
   * (`wake()`, or a source that watches for its own news). A corrupt state file rejects before
   * the first cycle (a person must move it aside); anything that goes wrong inside a cycle is
   * reported and the loop goes on.
   */
  async run(signal: AbortSignal): Promise<void> {
    await this.loadState();
    const unwatch = this.watchSources();
    try {
      while (!signal.aborted) {
        try {
          await this.runOnce(signal);
        } catch (error) {
          this.options.events.emit("poll.provider_error", { poll_source: "*", error: messageOf(error) });
        }
        if (signal.aborted) break;
        await this.pause(this.pauseMs(), signal);
      }
    } finally {
      for (const stop of unwatch) stop();
      await this.close();
    }
  }

  /** Lets go of the sources' locks, if any (run() does at its end), so another daemon polls them. */
  async close(): Promise<void> {
    await this.shared?.close();
  }

  /**
   * Asks for a cycle now: the pause under way ends, or, while a cycle runs, the next one follows it
   * without a pause (the running cycle may have read its sources before the news). Never a second
   * cycle alongside one, and a burst of wakes costs at most one extra cycle.
   */
  wake(): void {
    this.wakeWanted = true;
    this.endPause?.();
  }

  /** One pass over every source. Rejects only when the state file cannot be loaded. */
  async runOnce(signal?: AbortSignal): Promise<CycleSummary> {
    if (this.cycling) throw new Error("a poll cycle is already running");
    this.cycling = true;
    // What woke it is read by this cycle; a wake from here on asks for another.
    this.wakeWanted = false;
    try {
      const started = performance.now();
      const state = await this.loadState();
      const tally: Tally = { changes: 0, dispatched: 0, errors: 0, interrupted: false };
      try {
        for (const source of this.sources) {
          if (signal?.aborted) {
            tally.interrupted = true;
            break;
          }
          await this.pollSource(state, source, tally, signal);
        }
      } catch (error) {
        tally.errors++;
        this.options.events.emit("poll.provider_error", { poll_source: "*", error: messageOf(error) });
      }
      const summary: CycleSummary = { ...tally, durationMs: Math.round(performance.now() - started) };
      this.last = summary;
      await this.writeStatus(summary);
      this.options.events.emit("poll.cycle", {
        changes: summary.changes,
        dispatched: summary.dispatched,
        errors: summary.errors,
        duration_ms: summary.durationMs,
        interrupted: summary.interrupted,
      });
      return summary;
    } finally {
      this.cycling = false;
    }
  }

  /**
   * Reads the state file now rather than at the first cycle, so a caller can refuse to start
   * (PollStateError) before it reports itself ready.
   */
  async load(): Promise<void> {
    await this.loadState();
  }

  /**
   * The pause after a cycle: the interval, cut short when a rate limit on some source resets
   * sooner, so a limited source is read again soon after GitHub allows it rather than up to a
   * whole interval later. Waking early also polls the other sources early (once per limit); for
   * GitHub those reads are conditional and cost nothing when idle. A poll interval never wakes the
   * loop: it only ever asks for fewer reads than the configured pace.
   */
  private pauseMs(): number {
    const now = this.now().getTime();
    let pause = this.options.intervalMs;
    for (const { until, reason } of this.deferred.values()) {
      const wait = until.getTime() - now;
      if (wait > 0 && reason !== POLL_INTERVAL) pause = Math.min(pause, Math.max(wait, MIN_PAUSE_MS));
    }
    return pause;
  }

  /** Waits `ms`, or less: an abort or a wake ends it. */
  private pause(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    // Woken while the cycle ran: the shortest pause, so that wakes can never spin the loop.
    const wait = this.wakeWanted ? Math.min(ms, MIN_PAUSE_MS) : ms;
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.endPause = undefined;
        resolve();
      };
      const timer = setTimeout(done, wait);
      signal.addEventListener("abort", done, { once: true });
      this.endPause = done;
    });
  }

  /**
   * Each source that can tell when it has news wakes the loop with it; one that cannot watch
   * says so once and is read at the interval.
   */
  private watchSources(): (() => void)[] {
    const interval = this.options.intervalMs / 1000;
    const stops: (() => void)[] = [];
    for (const source of this.sources) {
      if (!source.watch) continue;
      const unwatchable = (problem: string): void => {
        this.options.warn?.(`${problem}; changes from the poll source ${source.key} are read every ${interval}s instead`);
      };
      try {
        stops.push(source.watch(() => this.wake(), unwatchable));
      } catch (error) {
        unwatchable(`cannot watch the poll source ${source.key}: ${messageOf(error)}`);
      }
    }
    return stops;
  }

  private async loadState(): Promise<PollState> {
    // Loaded once: this poller is the file's only writer, so memory stays ahead of the disk.
    if (this.state) return this.state;
    const { stateFile, legacyState } = this.options;
    if (legacyState) {
      warnLegacyPollState({ legacyFile: stateFile, newFile: legacyState.newFile, events: this.options.events, warn: this.options.warn });
    }
    this.state = await loadPollState(this.options.stateDocument ?? stateFile, (ledger) => this.adoptLegacy(ledger));
    return this.state;
  }

  /** Each source's starting cursor from an older per-item ledger; a source it does not cover baselines. */
  private adoptLegacy(ledger: LegacyLedger): Record<string, PollSourceState> {
    const sources: Record<string, PollSourceState> = {};
    for (const source of this.sources) {
      const cursor = source.adoptLegacy?.(ledger);
      if (cursor !== undefined) sources[source.key] = { cursor, handled: [], attempts: {}, updatedAt: this.stamp() };
    }
    return sources;
  }

  /** Keeps `key` from being read before `until`, and says so. */
  private defer(key: string, until: Date, reason: string): void {
    this.deferred.set(key, { until, reason });
    // X-Poll-Interval comes with every answer while it applies: one event when it starts, not
    // one per read. A rate limit is news every time.
    const paced = reason === POLL_INTERVAL;
    if (paced && this.pacedSources.has(key)) return;
    if (paced) this.pacedSources.add(key);
    this.options.events.emit("poll.rate_limited", { poll_source: key, resume_at: until.toISOString(), reason });
  }

  private async pollSource(state: PollState, source: PollSourceRuntime, tally: Tally, signal: AbortSignal | undefined): Promise<void> {
    const deferred = this.deferred.get(source.key);
    if (deferred !== undefined && deferred.until.getTime() > this.now().getTime()) return;
    this.deferred.delete(source.key);
    if (this.shared !== undefined && !(await this.takeTurn(state, source.key))) return;

    const known = state.sources[source.key];
    let batch: SourceBatch;
    try {
      batch = await source.read(known?.cursor, signal);
    } catch (error) {
      const limit = rateLimitOf(error);
      // Nothing is lost: the cursor has not moved, so the read after the reset sees the same changes.
      if (limit) this.defer(source.key, limit.resetAt, limit.secondary ? "secondary-limit" : "rate-limit");
      else {
        tally.errors++;
        this.options.events.emit("poll.provider_error", { poll_source: source.key, error: messageOf(error) });
      }
      return;
    }
    for (const problem of batch.errors ?? []) {
      tally.errors++;
      this.options.events.emit("poll.provider_error", { poll_source: source.key, error: problem });
    }
    const reason = batch.notBefore === undefined ? undefined : (batch.notBeforeReason ?? POLL_INTERVAL);
    if (reason !== POLL_INTERVAL) this.pacedSources.delete(source.key);
    if (batch.notBefore !== undefined && reason !== undefined) this.defer(source.key, batch.notBefore, reason);

    if (!known) {
      // First sight: what is already there is history, not news; the feed's cursor marks now.
      state.sources[source.key] = { cursor: batch.cursor, handled: [], attempts: {}, updatedAt: this.stamp() };
      await this.saveReporting(source.key, tally);
      this.options.events.emit("poll.baseline", { poll_source: source.key });
      return;
    }

    const inBatch = new Set(batch.items.map((item) => item.id));
    // Ids no longer in a whole batch cannot come back from this cursor; dropping them keeps the
    // lists short. A partial batch says nothing about the part it did not read.
    const partial = batch.partial === true || (batch.errors?.length ?? 0) > 0;
    const kept = (id: string): boolean => partial || inBatch.has(id);
    const handled = new Set(known.handled.filter(kept));
    const attempts: Record<string, number> = Object.fromEntries(Object.entries(known.attempts).filter(([id]) => kept(id)));
    const held: Record<string, string> = Object.fromEntries(Object.entries(known.held ?? {}).filter(([id]) => kept(id)));
    const entry: PollSourceState = { cursor: known.cursor, handled: [...handled], attempts, held, updatedAt: known.updatedAt };
    state.sources[source.key] = entry;
    // An idle source is not rewritten every cycle.
    let dirty =
      entry.handled.length !== known.handled.length ||
      Object.keys(attempts).length !== Object.keys(known.attempts).length ||
      Object.keys(held).length !== Object.keys(known.held ?? {}).length;

    const settle = (id: string): void => {
      if (handled.has(id)) return;
      dirty = true;
      handled.add(id);
      entry.handled.push(id);
      if (entry.handled.length > MAX_HANDLED_IDS) entry.handled.splice(0, entry.handled.length - MAX_HANDLED_IDS);
      delete entry.attempts[id];
      delete held[id];
      entry.updatedAt = this.stamp();
    };
    // Held, not failed: handed out again next cycle, given up only once held longer than maxHeldMs.
    const hold = (id: string): void => {
      if (signal?.aborted) return;
      const since = Date.parse(held[id] ?? "");
      if (Number.isNaN(since)) {
        dirty = true;
        held[id] = entry.updatedAt = this.stamp();
        return;
      }
      const waited = this.now().getTime() - since;
      if (waited < this.maxHeldMs) return;
      tally.errors++;
      this.options.events.emit("poll.provider_error", {
        poll_source: source.key,
        error:
          `change ${id} was held ${Math.round(waited / 60_000)} min for an adopted item's start that waits in the start queue (the poller's bound is ` +
          `${Math.round(this.maxHeldMs / 60_000)} min): given up; the change stays on the item, which the agent's boot prompt tells it to read`,
      });
      settle(id);
    };
    const fail = (id: string): void => {
      tally.errors++;
      dirty = true;
      // A failure reported while shutting down (the dispatcher refuses new work then) says
      // nothing about the change; counting it would give changes up over a few restarts.
      if (signal?.aborted) return;
      const count = (entry.attempts[id] ?? 0) + 1;
      // Given up: the handler has reported the failure; holding the cursor would stall the source.
      if (count >= this.maxAttempts) settle(id);
      else {
        entry.attempts[id] = count;
        entry.updatedAt = this.stamp();
      }
    };

    const pending = batch.items.filter((item) => !handled.has(item.id));
    tally.changes += pending.length;
    const outcomes: Promise<void>[] = [];
    for (const item of pending) {
      if (signal?.aborted) {
        tally.interrupted = true;
        break;
      }
      if ((entry.attempts[item.id] ?? 0) >= this.maxAttempts) {
        // Only after maxAttempts was lowered across a restart: those failures already count.
        settle(item.id);
        continue;
      }
      tally.dispatched++;
      // Not awaited: the handler queues per work item, so a slow item never holds up another.
      outcomes.push(
        this.handOut(source.key, item).then((outcome) => {
          if (outcome === "settled") settle(item.id);
          else if (outcome === "held") hold(item.id);
          else fail(item.id);
          return this.saveQuietly();
        }),
      );
    }
    await Promise.all(outcomes);

    if (batch.items.every((item) => handled.has(item.id)) && (dirty || batch.cursor !== entry.cursor)) {
      // Past a partial batch, the part it did not read is still behind the new cursor, and so are
      // its changes settled earlier.
      const unread = (id: string): boolean => partial && !inBatch.has(id);
      state.sources[source.key] = {
        cursor: batch.cursor,
        handled: entry.handled.filter(unread),
        attempts: Object.fromEntries(Object.entries(entry.attempts).filter(([id]) => unread(id))),
        held: Object.fromEntries(Object.entries(held).filter(([id]) => unread(id))),
        updatedAt: this.stamp(),
      };
      dirty = true;
    }
    // Also the durability point of every settled change above whose own save failed.
    if (dirty) await this.saveReporting(source.key, tally);
  }

  /**
   * With shared locks, whether this process reads the source now. A source just taken has its state
   * read again from the store: its last holder moved its cursor (and its ETags) there.
   */
  private async takeTurn(state: PollState, key: string): Promise<boolean> {
    const shared = this.shared;
    if (shared === undefined) return true;
    const turn = await shared.turn(key);
    if (!turn.read) return false;
    if (!turn.taken) return true;
    try {
      const stored = (await loadPollState(this.options.stateDocument ?? this.options.stateFile)).sources[key];
      if (stored !== undefined) state.sources[key] = stored;
      else delete state.sources[key];
      return true;
    } catch (error) {
      // Read again at the next cycle: reading from a cursor this process does not know might repeat what was settled.
      shared.forget(key);
      this.options.events.emit("poll.provider_error", { poll_source: key, error: `cannot read the poll state of a source taken over: ${messageOf(error)}` });
      return false;
    }
  }

  /**
   * What the handler made of the change: settled, held (it waits, no failure), or failed; a
   * rejection is reported and counts as a failure. Never rejects. `handle` is called before the
   * first await, so call order is queue order.
   */
  private async handOut(key: string, item: SourceItem): Promise<"settled" | "held" | "failed"> {
    try {
      const result = await this.options.handler.handle(item.event);
      return result.settled ? "settled" : result.held === true ? "held" : "failed";
    } catch (error) {
      this.options.events.emit("poll.provider_error", { poll_source: key, error: `handling change ${item.id} failed: ${messageOf(error)}` });
      return "failed";
    }
  }

  /** Saves, or reports why it could not: the state stays in memory and the next save carries it. */
  private async saveReporting(key: string, tally: Tally): Promise<void> {
    try {
      await this.save();
    } catch (error) {
      tally.errors++;
      this.options.events.emit("poll.provider_error", {
        poll_source: key,
        error: `cannot save the poll state ${this.options.stateDocument?.where ?? this.options.stateFile}: ${messageOf(error)}`,
      });
    }
  }

  private async saveQuietly(): Promise<void> {
    try {
      await this.save();
    } catch {
      // The end of the source's batch saves again and reports a failure once.
    }
  }

  /**
   * Resolves once a write that started after this call has finished, so whatever the caller
   * changed before calling is on disk. Concurrent callers share writes.
   */
  private save(): Promise<void> {
    this.saveWanted = true;
    this.saving ??= this.drainSaves();
    return this.saving;
  }

  private async drainSaves(): Promise<void> {
    // Nothing before this await: `saving` is assigned before the writer can stand down.
    await Promise.resolve();
    try {
      while (this.saveWanted) {
        this.saveWanted = false;
        const target = this.options.stateDocument ?? this.options.stateFile;
        // Shared: only the sources this process holds, into the stored state under its lock.
        if (this.state && this.shared !== undefined) await savePollSources(target, this.state, this.shared.heldKeys());
        else if (this.state) await savePollState(target, this.state);
      }
    } finally {
      // In the same turn as the last look at saveWanted: a save asked for any later starts a
      // write of its own instead of joining one that has already ended without it.
      this.saving = undefined;
    }
  }

  private async writeStatus(summary: CycleSummary): Promise<void> {
    const status: PollerStatus = {
      startedAt: this.startedAt,
      lastCycleAt: this.stamp(),
      intervalSeconds: this.options.intervalMs / 1000,
      lastCycle: summary,
      ...(this.shared !== undefined ? { sources: this.shared.placesNow() } : {}),
    };
    try {
      await writeJsonAtomic(this.options.statusFile, status);
    } catch (error) {
      this.options.events.emit("poll.provider_error", {
        poll_source: "*",
        error: `cannot write the poll status file ${this.options.statusFile}: ${messageOf(error)}`,
      });
    }
  }

  private stamp(): string {
    return this.now().toISOString();
  }
}

/**
 * A rate-limit error, recognised by its shape (a `resetAt` date) so the poller stays independent of
 * any one tracker's error classes.
 */
function rateLimitOf(error: unknown): { resetAt: Date; secondary: boolean } | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { resetAt, secondary } = error as { resetAt?: unknown; secondary?: unknown };
  if (!(resetAt instanceof Date) || Number.isNaN(resetAt.getTime())) return undefined;
  return { resetAt, secondary: secondary === true };
}
