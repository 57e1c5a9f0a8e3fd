import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import type { PollSource } from "../config/schema.js";
import { messageOf } from "../errors.js";
import type { EventSink } from "../events/index.js";
import type { InboundEvent } from "../routing/inbound.js";
import { writeJsonAtomic } from "../state/index.js";
import type { Tracker, TrackerChange, TrackerScope } from "../trackers/tracker.js";
import { inboundFromChange } from "./local-source.js";
import { MAX_HANDLED_IDS, loadPollState, savePollState } from "./poll-state.js";
import type { PollSourceState, PollState } from "./poll-state.js";

/**
 * Pull ingress: reads each source's change feed, hands every new change to the handler (the
 * dispatcher) and remembers what is settled. A change is settled when the handler says so, or
 * when it has failed `maxAttempts` times; the cursor moves past a batch only once all of it is
 * settled, and each settled change is on disk as soon as it settles, so neither a failure nor a
 * `kill -9` at any instant loses a change or hands out a settled one again.
 */

export interface HandleResult {
  /** False: handling failed and the change should be handed out again next cycle. */
  readonly settled: boolean;
}

export interface EventHandler {
  /**
   * Must queue the event before returning (synchronously, in call order): calling handle(a) then
   * handle(b) keeps a before b for the same work item. Resolves once the event is dealt with.
   */
  handle(event: InboundEvent): Promise<HandleResult>;
}

export interface PollSourceRuntime {
  /** Names the source in the poll state and in events, e.g. `local:*` or `local:demo,other`. */
  readonly key: string;
  readonly tracker: Tracker;
  readonly scope: TrackerScope;
}

export interface PollerOptions {
  readonly sources: readonly PollSourceRuntime[];
  readonly stateFile: string;
  /** Heartbeat, rewritten after every cycle. */
  readonly statusFile: string;
  readonly handler: EventHandler;
  readonly events: EventSink;
  /** Pause between the end of one cycle and the start of the next. */
  readonly intervalMs: number;
  /** Failures after which a change is given up (default 3). */
  readonly maxAttempts?: number;
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
}

export const DEFAULT_MAX_ATTEMPTS = 3;

/** What one cycle counts as it goes. */
interface Tally {
  changes: number;
  dispatched: number;
  errors: number;
  interrupted: boolean;
}

export class Poller {
  private readonly sources: readonly PollSourceRuntime[];
  private readonly maxAttempts: number;
  private readonly now: () => Date;
  private readonly startedAt: string;
  private state: PollState | undefined;
  private cycling = false;
  private last: CycleSummary | undefined;
  // Saves are serialized: one write in flight, later requests coalesced into the next write.
  private saving: Promise<void> | undefined;
  private saveWanted = false;

  constructor(private readonly options: PollerOptions) {
    const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be a positive integer, got ${maxAttempts}`);
    }
    const keys = options.sources.map((source) => source.key);
    const duplicate = keys.find((key, index) => keys.indexOf(key) !== index);
    // Two sources with one key would overwrite each other's cursor.
    if (duplicate !== undefined) throw new RangeError(`two poll sources share the key "${duplicate}"`);
    this.sources = options.sources;
    this.maxAttempts = maxAttempts;
    this.now = options.now ?? (() => new Date());
    this.startedAt = this.now().toISOString();
  }

  get lastCycle(): CycleSummary | undefined {
    return this.last;
  }

  /**
   * Loops cycle → pause until the signal aborts; the pause ends at once on abort. A corrupt state
   * file rejects before the first cycle (a person must move it aside); anything that goes wrong
   * inside a cycle is reported and the loop goes on.
   */
  async run(signal: AbortSignal): Promise<void> {
    await this.loadState();
    while (!signal.aborted) {
      try {
        await this.runOnce(signal);
      } catch (error) {
        this.options.events.emit("poll.provider_error", { poll_source: "*", error: messageOf(error) });
      }
      if (signal.aborted) break;
      try {
        await delay(this.options.intervalMs, undefined, { signal });
      } catch {
        // Aborted: the loop condition ends it.
      }
    }
  }

  /** One pass over every source. Rejects only when the state file cannot be loaded. */
  async runOnce(signal?: AbortSignal): Promise<CycleSummary> {
    if (this.cycling) throw new Error("a poll cycle is already running");
    this.cycling = true;
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

  private async loadState(): Promise<PollState> {
    // Loaded once: this poller is the file's only writer, so memory stays ahead of the disk.
    this.state ??= await loadPollState(this.options.stateFile);
    return this.state;
  }

  private async pollSource(state: PollState, source: PollSourceRuntime, tally: Tally, signal: AbortSignal | undefined): Promise<void> {
    const known = state.sources[source.key];
    let batch;
    try {
      batch = await source.tracker.changesSince(source.scope, known?.cursor);
    } catch (error) {
      tally.errors++;
      this.options.events.emit("poll.provider_error", { poll_source: source.key, error: messageOf(error) });
      return;
    }

    if (!known) {
      // First sight: what is already there is history, not news; the feed's cursor marks now.
      state.sources[source.key] = { cursor: batch.cursor, handled: [], attempts: {}, updatedAt: this.stamp() };
      await this.saveReporting(source.key, tally);
      this.options.events.emit("poll.baseline", { poll_source: source.key });
      return;
    }

    const inBatch = new Set(batch.changes.map((change) => change.id));
    // Ids no longer in the batch cannot come back from this cursor; dropping them keeps the lists short.
    const handled = new Set(known.handled.filter((id) => inBatch.has(id)));
    const attempts: Record<string, number> = Object.fromEntries(Object.entries(known.attempts).filter(([id]) => inBatch.has(id)));
    const entry: PollSourceState = { cursor: known.cursor, handled: [...handled], attempts, updatedAt: known.updatedAt };
    state.sources[source.key] = entry;
    // An idle source is not rewritten every cycle.
    let dirty = entry.handled.length !== known.handled.length || Object.keys(attempts).length !== Object.keys(known.attempts).length;

    const settle = (id: string): void => {
      if (handled.has(id)) return;
      dirty = true;
      handled.add(id);
      entry.handled.push(id);
      if (entry.handled.length > MAX_HANDLED_IDS) entry.handled.splice(0, entry.handled.length - MAX_HANDLED_IDS);
      delete entry.attempts[id];
      entry.updatedAt = this.stamp();
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

    const pending = batch.changes.filter((change) => !handled.has(change.id));
    tally.changes += pending.length;
    const outcomes: Promise<void>[] = [];
    for (const change of pending) {
      if (signal?.aborted) {
        tally.interrupted = true;
        break;
      }
      if ((entry.attempts[change.id] ?? 0) >= this.maxAttempts) {
        // Only after maxAttempts was lowered across a restart: those failures already count.
        settle(change.id);
        continue;
      }
      tally.dispatched++;
      // Not awaited: the handler queues per work item, so a slow item never holds up another.
      outcomes.push(
        this.handOut(source.key, change).then((settled) => {
          if (settled) settle(change.id);
          else fail(change.id);
          return this.saveQuietly();
        }),
      );
    }
    await Promise.all(outcomes);

    if (batch.changes.every((change) => handled.has(change.id)) && (dirty || batch.cursor !== entry.cursor)) {
      state.sources[source.key] = { cursor: batch.cursor, handled: [], attempts: {}, updatedAt: this.stamp() };
      dirty = true;
    }
    // Also the durability point of every settled change above whose own save failed.
    if (dirty) await this.saveReporting(source.key, tally);
  }

  /**
   * True when the handler settled the change; a rejection is reported and counts as a failure.
   * Never rejects. `handle` is called before the first await, so call order is queue order.
   */
  private async handOut(key: string, change: TrackerChange): Promise<boolean> {
    try {
      return (await this.options.handler.handle(inboundFromChange(change))).settled;
    } catch (error) {
      this.options.events.emit("poll.provider_error", { poll_source: key, error: `handling change ${change.id} failed: ${messageOf(error)}` });
      return false;
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
        error: `cannot save the poll state ${this.options.stateFile}: ${messageOf(error)}`,
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
    this.saving ??= this.drainSaves().finally(() => {
      this.saving = undefined;
    });
    return this.saving;
  }

  private async drainSaves(): Promise<void> {
    while (this.saveWanted) {
      this.saveWanted = false;
      if (this.state) await savePollState(this.options.stateFile, this.state);
    }
  }

  private async writeStatus(summary: CycleSummary): Promise<void> {
    const status: PollerStatus = {
      startedAt: this.startedAt,
      lastCycleAt: this.stamp(),
      intervalSeconds: this.options.intervalMs / 1000,
      lastCycle: summary,
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
 * The runtime sources for the configured local ones (other providers are skipped). The key is
 * the sorted project list, so reordering the config keeps the cursor; changing the list starts
 * a new source from now.
 */
export function localPollSources(sources: readonly PollSource[], tracker: Tracker): PollSourceRuntime[] {
  const runtimes = new Map<string, PollSourceRuntime>();
  for (const source of sources) {
    if (source.provider !== "local") continue;
    const projects = source.projects === undefined ? undefined : [...new Set(source.projects)].sort();
    const key = `local:${projects === undefined ? "*" : projects.join(",")}`;
    if (!runtimes.has(key)) runtimes.set(key, { key, tracker, scope: projects === undefined ? {} : { repositories: projects } });
  }
  return [...runtimes.values()];
}
