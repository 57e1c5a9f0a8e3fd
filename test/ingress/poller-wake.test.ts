import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import { Poller } from "../../src/ingress/index.js";
import type { EventHandler, HandleResult, PollerOptions } from "../../src/ingress/index.js";
import type { PollSourceRuntime, SourceBatch } from "../../src/ingress/poller.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { makeTracker, ref } from "../trackers/local/helpers.js";

/** Longer than any test's timeout: a cycle that happens anyway was woken. */
const NEVER_MS = 10 * 60_000;

const settled: EventHandler = { handle: (): Promise<HandleResult> => Promise.resolve({ settled: true }) };

/** A source whose reads the test lets through one at a time, counting how many run at once. */
class GatedSource implements PollSourceRuntime {
  readonly key = "gated";
  reads = 0;
  inFlight = 0;
  mostInFlight = 0;
  gated = false;
  private opens: (() => void)[] = [];

  async read(): Promise<SourceBatch> {
    this.reads++;
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    try {
      if (this.gated) await new Promise<void>((resolve) => this.opens.push(resolve));
      return { items: [], cursor: "c" };
    } finally {
      this.inFlight--;
    }
  }

  /** Lets every waiting read finish. */
  open(): void {
    for (const open of this.opens.splice(0)) open();
  }

  get waiting(): number {
    return this.opens.length;
  }
}

const running: { controller: AbortController; run: Promise<void> }[] = [];

afterEach(async () => {
  for (const { controller, run } of running.splice(0)) {
    controller.abort();
    await run;
  }
});

async function poller(sources: PollerOptions["sources"], options: Partial<PollerOptions> = {}): Promise<{ poller: Poller; events: MemoryEventSink }> {
  const dir = await tempDir();
  const events = new MemoryEventSink();
  const made = new Poller({
    sources,
    stateFile: join(dir, "poll-state.json"),
    statusFile: join(dir, "poll-status.json"),
    handler: settled,
    events,
    intervalMs: NEVER_MS,
    ...options,
  });
  return { poller: made, events };
}

function start(target: Poller): void {
  const controller = new AbortController();
  running.push({ controller, run: target.run(controller.signal) });
}

const cycles = (events: MemoryEventSink): number => events.events.filter((event) => event.type === "poll.cycle").length;

describe("Poller.wake", () => {
  it("cuts the pause short", async () => {
    const source = new GatedSource();
    const { poller: p, events } = await poller([source]);
    start(p);
    await waitFor("the first cycle", () => (cycles(events) === 1 ? true : undefined));
    p.wake();
    await waitFor("a second cycle long before the interval", () => (cycles(events) === 2 ? true : undefined));
    expect(source.reads).toBe(2);
  });

  it("never starts a cycle while one runs: wakes during a cycle ask for one cycle after it", async () => {
    const source = new GatedSource();
    source.gated = true;
    const { poller: p, events } = await poller([source]);
    start(p);
    await waitFor("the first read under way", () => (source.waiting === 1 ? true : undefined));
    p.wake();
    p.wake();
    p.wake();
    expect(source.reads).toBe(1);
    source.open();
    await waitFor("the second read under way", () => (source.waiting === 1 ? true : undefined));
    expect(cycles(events)).toBe(1);
    source.gated = false;
    source.open();
    await waitFor("the second cycle", () => (cycles(events) === 2 ? true : undefined));
    expect(source.mostInFlight).toBe(1);
    expect(source.reads).toBe(2);
  });

  it("reads a source that watches for its own news as soon as it tells, and stops watching on abort", async () => {
    let tell: (() => void) | undefined;
    let stopped = 0;
    const reads: (string | undefined)[] = [];
    const source: PollSourceRuntime = {
      key: "watched",
      read: (cursor) => {
        reads.push(cursor);
        return Promise.resolve({ items: [], cursor: "c" });
      },
      watch: (onChange) => {
        tell = onChange;
        return () => stopped++;
      },
    };
    const { poller: p, events } = await poller([source]);
    const controller = new AbortController();
    const run = p.run(controller.signal);
    await waitFor("the first cycle", () => (cycles(events) === 1 ? true : undefined));
    tell?.();
    await waitFor("the cycle it woke", () => (cycles(events) === 2 ? true : undefined));
    controller.abort();
    await run;
    expect(reads).toEqual([undefined, "c"]);
    expect(stopped).toBe(1);
  });

  it("says once when a source cannot watch, naming the source and the interval it falls back to", async () => {
    const warnings: string[] = [];
    const source: PollSourceRuntime = {
      key: "local:*",
      read: () => Promise.resolve({ items: [], cursor: "c" }),
      watch: (_onChange, onUnwatchable) => {
        onUnwatchable("cannot watch /x for changes: ENOSPC");
        return () => undefined;
      },
    };
    const { poller: p, events } = await poller([source], { intervalMs: 30_000, warn: (message) => warnings.push(message) });
    start(p);
    await waitFor("the first cycle", () => (cycles(events) === 1 ? true : undefined));
    expect(warnings).toEqual(["cannot watch /x for changes: ENOSPC; changes from the poll source local:* are read every 30s instead"]);
  });

  it("hands out a local change at once, whatever the interval", async () => {
    const dir = await tempDir();
    // No tracker folder yet, as in a fresh project: the first item makes it.
    const { tracker } = makeTracker(join(dir, "tracker"));
    const handled: string[] = [];
    const handler: EventHandler = {
      handle: (event) => {
        handled.push(event.deliveryId);
        return Promise.resolve({ settled: true });
      },
    };
    const { poller: p, events } = await poller([{ key: "local:*", tracker, scope: {} }], { handler });
    start(p);
    await waitFor("the baseline", () => (events.events.some((event) => event.type === "poll.baseline") ? true : undefined));
    await tracker.openItem({ project: "demo", title: "first", actor: "alice" });
    await waitFor("the new item handed out", () => (handled.length === 1 ? true : undefined));
    await tracker.addComment(ref("demo", 1), "and a comment", "bob");
    await waitFor("the comment handed out", () => (handled.length === 2 ? true : undefined));
    expect(handled).toEqual(["poll-demo:1", "poll-demo:2"]);
  });
});
