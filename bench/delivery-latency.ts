/**
 * Figure: delivery latency — from a comment added on the local tracker to that comment's text in
 * the harness's transcript, through the real pieces the daemon runs (the poller, the dispatcher,
 * the session registry, tmux and a harness: test/support/fake-harness.mjs), in one process, as
 * medians over runs. No budget exists yet; the poll interval is the floor every figure sits on:
 * a change waits on average half a poll period (interval + cycle) before anything reads it, so
 * the figure is also printed from the moment the poll cycle picked the change up.
 *
 * Each run starts at a random phase of the poll period: started right after the previous
 * delivery, every run would land at the same point of the cycle and wait about one whole interval.
 *
 * The session starts the way it does for an operator on the default config: the item is opened
 * with the auto-execute label (which only arms it), then an authorized person comments the start
 * keyword (`routing.control.requireStartCommand` stays on, docs/control.md). Turning that setting
 * off would measure a path the defaults do not take, so the bench comments the keyword instead.
 *
 * BENCH_RUNS overrides the number of runs; BENCH_POLL_SECONDS the poll interval (schema minimum
 * 0.1); BENCH_QUICK=1 makes 3 runs after one warm-up.
 */
import { execFile } from "node:child_process";
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { configSchema } from "../src/config/schema.js";
import { composeRuntime, pollerFor } from "../src/daemon/runtime.js";
import type { Runtime } from "../src/daemon/runtime.js";
import { EventLog } from "../src/events/index.js";
import type { EventFields, EventSink, EventType } from "../src/events/index.js";
import type { Dispatcher } from "../src/dispatch/dispatcher.js";
import { isLive } from "../src/registry/record.js";
import { deriveStatePaths } from "../src/state/layout.js";
import { parseWorkItemRef } from "../src/workitem/index.js";
import { median, percentile, printFigure, printHeading, runsFromEnv, scaled } from "./lib.js";

const runs = runsFromEnv(30, 3);
const POLL_SECONDS = Number(process.env.BENCH_POLL_SECONDS ?? "0.1");
const FAKE_HARNESS = fileURLToPath(new URL("../test/support/fake-harness.mjs", import.meta.url));
const LABEL = "the-loop: auto-execute";
const TRANSCRIPT_POLL_MS = 2;
const SESSION_TIMEOUT_MS = 30_000;
const DELIVERY_TIMEOUT_MS = 15_000;
const WARMUP_RUNS = scaled(2, 1);
const IDLE_CYCLES = scaled(12, 3);
const TMUX_CALLS = scaled(21, 3);

interface Seen {
  readonly type: EventType;
  readonly at: number;
  readonly fields: Record<string, unknown>;
}

/**
 * The daemon's event log (written to the temp project, so its synchronous appends cost what they
 * cost in the daemon), with the moment of each event kept in memory: it is how the figures below
 * tell the poll wait from the rest.
 */
class TimedSink implements EventSink {
  readonly seen: Seen[] = [];
  constructor(private readonly log: EventLog) {}
  emit<T extends EventType>(type: T, fields: EventFields<T>): void {
    this.seen.push({ type, at: performance.now(), fields: { ...fields } });
    this.log.emit(type, fields);
  }
  /** The first event of `type` at or after index `from` that matches. */
  find(type: EventType, from: number, match: (fields: Record<string, unknown>) => boolean = () => true): Seen | undefined {
    const index = this.indexOf(type, from, match);
    return index === -1 ? undefined : this.seen[index];
  }
  indexOf(type: EventType, from: number, match: (fields: Record<string, unknown>) => boolean = () => true): number {
    for (let i = from; i < this.seen.length; i++) {
      const event = this.seen[i] as Seen;
      if (event.type === type && match(event.fields)) return i;
    }
    return -1;
  }
}

async function waitUntil<T>(what: string, timeoutMs: number, intervalMs: number, check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(intervalMs);
  }
}

/** Reads only what was appended to the transcript since the last call. */
class TranscriptTail {
  private offset = 0;
  private text = "";
  constructor(private readonly path: string) {}
  /** Everything read so far (from the offset the caller last cleared at). */
  poll(): string {
    let size: number;
    try {
      size = statSync(this.path).size;
    } catch {
      return this.text;
    }
    if (size > this.offset) {
      const buffer = Buffer.alloc(size - this.offset);
      const fd = openSync(this.path, "r");
      try {
        this.offset += readSync(fd, buffer, 0, buffer.length, this.offset);
      } finally {
        closeSync(fd);
      }
      this.text += buffer.toString("utf8");
    }
    return this.text;
  }
  clear(): void {
    this.text = "";
  }
}

interface RunTimes {
  /** t0 → token in the transcript. */
  readonly total: number;
  /** t0 → addComment resolved (lock, journal append, snapshot and meta writes). */
  readonly commit: number;
  /** addComment resolved → the poll cycle routed the change. */
  readonly pollWait: number;
  /** Routed → token in the transcript: everything but the tracker write and the poll wait. */
  readonly afterPickup: number;
  /** Routed → dispatch.succeeded (the paste, and the registry update after it). */
  readonly dispatch: number;
  /** The whole poll cycle that carried the change: the next change waits for it to end. */
  readonly busyCycle: number;
}

const tmuxClient = promisify(execFile);

const abort = new AbortController();
let runtime: Runtime | undefined;
let dispatcher: Dispatcher | undefined;
let polling: Promise<void> | undefined;
const dir = await realpath(await mkdtemp(join(tmpdir(), "the-loop-bench-")));

try {
  const transcriptFile = join(dir, "transcript.jsonl");
  const socketName = `loop-bench-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const config = configSchema.parse({
    state: { root: join(dir, ".the-loop") },
    routing: {
      authorizedUsers: ["alice"],
      defaultHarness: "fake",
      harnesses: { fake: { command: [process.execPath, FAKE_HARNESS, transcriptFile, "{prompt}"] } },
      tmux: { socketName, harnessKillGraceSeconds: 1 },
    },
    polling: { enabled: true, intervalSeconds: POLL_SECONDS, sources: [{ provider: "local" }] },
  });
  const intervalMs = Math.round(config.polling.intervalSeconds * 1000);
  const paths = deriveStatePaths(config, dir);
  const events = new TimedSink(new EventLog({ path: paths.eventLog, source: "daemon" }));

  runtime = composeRuntime({ config, paths, baseDir: dir, events });
  dispatcher = await runtime.dispatcher();
  const poller = pollerFor({ config, paths, baseDir: dir, events }, runtime, dispatcher);
  await poller.load();
  polling = poller.run(abort.signal);
  // The first cycle takes what is there as history: the item must come after it to be news.
  await waitUntil("the poller's baseline", SESSION_TIMEOUT_MS, 5, () => events.find("poll.baseline", 0));

  const tracker = runtime.trackers.local;
  const opened = await tracker.openItem({
    project: config.integrations.local.project,
    title: "Delivery latency bench",
    body: "Each comment on this item is timed until it reaches the session.",
    labels: [LABEL],
    actor: "alice",
  });
  const ref = opened.item.ref;
  const itemRef = parseWorkItemRef(ref);
  // The label armed the item; the start keyword from an authorized person starts it.
  const startAt = performance.now();
  await tracker.addComment(itemRef, config.routing.control.keywords.start, "alice");
  const registry = runtime.registry;
  const record = await waitUntil(`a live session for ${ref}`, SESSION_TIMEOUT_MS, 10, () => {
    const current = registry.get(ref);
    return isLive(current) ? current : undefined;
  });
  const transcript = new TranscriptTail(transcriptFile);
  await waitUntil("the harness's boot line", SESSION_TIMEOUT_MS, 10, () => (transcript.poll().includes(`"type":"boot"`) ? true : undefined));
  // Bracketed paste is on once tmux has shown the line the fake prints after asking for it.
  const runner = runtime.runner;
  await waitUntil("the harness's ready line", SESSION_TIMEOUT_MS, 20, async () =>
    (await runner.capture(record.tmuxTarget)).includes("fake-harness: ready") ? true : undefined,
  );
  const sessionAt = events.find("session.spawned", 0)?.at;

  // The poll period as it really is when nothing happens: the interval, plus an idle cycle's own
  // work, plus timer slack — the end of one idle cycle to the end of the next.
  const idleFrom = events.seen.length;
  const idleCycles = await waitUntil("idle poll cycles", SESSION_TIMEOUT_MS, 20, () => {
    const cycles = events.seen.slice(idleFrom).filter((event) => event.type === "poll.cycle");
    return cycles.length > IDLE_CYCLES ? cycles : undefined;
  });
  const idlePeriods: number[] = [];
  const idleDurations: number[] = [];
  for (let i = 1; i < idleCycles.length; i++) {
    const [previous, current] = [idleCycles[i - 1] as Seen, idleCycles[i] as Seen];
    if (previous.fields.changes !== 0 || current.fields.changes !== 0) continue;
    idleDurations.push(Number(current.fields.duration_ms));
    idlePeriods.push(current.at - previous.at);
  }
  if (idlePeriods.length === 0) throw new Error("no two idle poll cycles in a row: the poll period is unknown");
  const period = median(idlePeriods);

  const timeOne = async (run: number): Promise<RunTimes> => {
    // A random phase of the poll period (see the header); the previous run's cycle has ended.
    await delay(Math.random() * period);
    const token = `bench-${process.pid}-${run}-${Math.random().toString(36).slice(2, 10)}`;
    transcript.clear();
    const mark = events.seen.length;
    const t0 = performance.now();
    await tracker.addComment(itemRef, `Please look at ${token} next.`, "alice");
    const committed = performance.now();
    const t1 = await waitUntil(`${token} in the transcript`, DELIVERY_TIMEOUT_MS, TRANSCRIPT_POLL_MS, () =>
      transcript.poll().includes(token) ? performance.now() : undefined,
    );
    const routed = events.find("routing.routed", mark, (fields) => fields.work_item === ref && fields.kind === "commented");
    if (!routed) throw new Error(`${token} reached the transcript without a routing.routed event`);
    const delivery = routed.fields.delivery_id;
    const succeeded = await waitUntil("dispatch.succeeded", DELIVERY_TIMEOUT_MS, 1, () => {
      const index = events.indexOf("dispatch.succeeded", mark, (fields) => fields.delivery_id === delivery);
      return index === -1 ? undefined : index;
    });
    // Each run measures a change arriving at an idle daemon: the cycle that carried this one
    // (which goes on saving after the paste) ends before the next run starts.
    const cycleEnd = await waitUntil("the end of the poll cycle", DELIVERY_TIMEOUT_MS, 1, () => events.find("poll.cycle", succeeded));
    return {
      total: t1 - t0,
      commit: committed - t0,
      pollWait: routed.at - committed,
      afterPickup: t1 - routed.at,
      dispatch: (events.seen[succeeded] as Seen).at - routed.at,
      busyCycle: Number(cycleEnd.fields.duration_ms),
    };
  };

  for (let i = 0; i < WARMUP_RUNS; i++) await timeOne(-1 - i);
  const times: RunTimes[] = [];
  for (let run = 0; run < runs; run++) times.push(await timeOne(run));

  // One tmux client round trip, for scale: a delivery makes two (probe, then load+paste).
  const tmuxCalls: number[] = [];
  for (let i = 0; i < TMUX_CALLS; i++) {
    const started = performance.now();
    await tmuxClient("tmux", ["-L", socketName, "list-panes", "-s", "-t", `=${record.tmuxTarget}:`, "-F", "#{pane_dead}"]);
    tmuxCalls.push(performance.now() - started);
  }

  const pick = (key: keyof RunTimes): number[] => times.map((time) => time[key]);
  const line = (label: string, key: keyof RunTimes, note?: string): void => {
    const values = pick(key);
    printFigure({ label, value: median(values), unit: "ms", note: [`p90 ${percentile(values, 90).toFixed(1)} ms`, note].filter(Boolean).join(", ") });
  };
  printHeading(
    `Delivery latency: tracker comment → harness transcript (median of ${runs} runs; poll interval ${intervalMs} ms, ` +
      `transcript checked every ${TRANSCRIPT_POLL_MS} ms)`,
  );
  line("comment → transcript (end to end)", "total", `${(median(pick("total")) - period / 2).toFixed(1)} ms less the expected poll wait`);
  line("  addComment (tracker write)", "commit");
  line("  waiting for the poll cycle", "pollWait", `expected ≈ period / 2 = ${(period / 2).toFixed(1)} ms`);
  line("pickup → transcript (poll wait removed)", "afterPickup");
  line("  pickup → dispatch.succeeded", "dispatch", "includes the registry update after the paste");
  line("poll cycle carrying one delivery", "busyCycle", "a change arriving meanwhile waits for its end");
  printFigure({ label: "poll period (interval + idle cycle + timers)", value: period, unit: "ms", note: `idle cycle ${median(idleDurations)} ms` });
  printFigure({
    label: "one tmux client call (list-panes), for scale",
    value: median(tmuxCalls),
    unit: "ms",
    note: `p90 ${percentile(tmuxCalls, 90).toFixed(1)} ms`,
  });
  if (sessionAt !== undefined) printFigure({ label: "(once) start comment → session.spawned", value: sessionAt - startAt, unit: "ms" });
} finally {
  abort.abort();
  await polling?.catch((error: unknown) => console.error(`the poller failed: ${String(error)}`));
  await dispatcher?.drain().catch(() => undefined);
  await runtime?.runner.killServer().catch((error: unknown) => console.error(`could not kill the tmux server: ${String(error)}`));
  await rm(dir, { recursive: true, force: true });
}
