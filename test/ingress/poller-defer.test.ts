import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import type { EventFields, EventType } from "../../src/events/index.js";
import { Poller } from "../../src/ingress/poller.js";
import type { EventHandler, HandleResult, PollSourceRuntime, PollerOptions, SourceBatch } from "../../src/ingress/poller.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

/**
 * The poller's side of slowing down: a source that throws a rate limit (an error with a
 * `resetAt`) or answers a batch with `notBefore` is not read again before then, and nothing it
 * would have handed out is lost.
 */

class RecordingHandler implements EventHandler {
  readonly deliveries: string[] = [];
  handle(event: InboundEvent): Promise<HandleResult> {
    this.deliveries.push(event.deliveryId);
    return Promise.resolve({ settled: true });
  }
}

function eventOf(id: string): InboundEvent {
  return {
    source: "poll",
    deliveryId: `poll-${id}`,
    kind: "commented",
    trackerEvent: "test",
    workItems: [],
    actor: "alice",
    body: id,
    labels: [],
    itemState: "open",
    occurredAt: "2026-01-01T00:00:00Z",
    excerpt: {},
  };
}

/** A source answering from a script: each read takes the next answer (a batch or an error). */
class ScriptedSource implements PollSourceRuntime {
  readonly reads: (string | undefined)[] = [];
  constructor(
    readonly key: string,
    private readonly answer: (cursor: string | undefined, read: number) => SourceBatch | Error,
  ) {}
  read(cursor: string | undefined): Promise<SourceBatch> {
    this.reads.push(cursor);
    const answer = this.answer(cursor, this.reads.length);
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  }
}

function rateLimit(resetAt: Date, secondary = false): Error {
  return Object.assign(new Error("GitHub rate limit reached"), { resetAt, secondary });
}

function batch(cursor: string, ids: string[] = [], extra: Partial<SourceBatch> = {}): SourceBatch {
  return { cursor, items: ids.map((id) => ({ id, event: eventOf(id) })), ...extra };
}

function emitted<T extends EventType>(events: MemoryEventSink, type: T): EventFields<T>[] {
  return events.events.filter((event) => event.type === type).map((event) => event.fields as EventFields<T>);
}

async function poller(sources: PollSourceRuntime[], options: Partial<PollerOptions> = {}) {
  const dir = await tempDir();
  const events = new MemoryEventSink();
  const handler = new RecordingHandler();
  const instance = new Poller({
    sources,
    stateFile: join(dir, "poll-state.json"),
    statusFile: join(dir, "poll-status.json"),
    handler,
    events,
    intervalMs: 1000,
    ...options,
  });
  return { poller: instance, events, handler };
}

describe("Poller deferrals", () => {
  it("backs a rate-limited source off until its reset, then reads from the same cursor", async () => {
    let clock = Date.parse("2026-01-01T00:00:00Z");
    const resetAt = new Date(clock + 60_000);
    const source = new ScriptedSource("github:a", (cursor, read) => {
      if (cursor === undefined) return batch("c0");
      return read === 2 ? rateLimit(resetAt) : batch("c1", ["x"]);
    });
    const other = new ScriptedSource("github:b", (cursor) => batch(cursor === undefined ? "b0" : "b1"));
    const p = await poller([source, other], { now: () => new Date(clock) });
    await p.poller.runOnce();

    expect(await p.poller.runOnce()).toMatchObject({ changes: 0, errors: 0 });
    expect(emitted(p.events, "poll.rate_limited")).toEqual([{ poll_source: "github:a", resume_at: resetAt.toISOString(), reason: "rate-limit" }]);
    expect(emitted(p.events, "poll.provider_error")).toEqual([]);

    clock += 59_000;
    await p.poller.runOnce();
    expect(source.reads).toHaveLength(2);
    // Only that source waits.
    expect(other.reads).toHaveLength(3);

    clock += 1_000;
    expect(await p.poller.runOnce()).toMatchObject({ changes: 1, dispatched: 1 });
    expect(source.reads).toEqual([undefined, "c0", "c0"]);
    expect(p.handler.deliveries).toEqual(["poll-x"]);
  });

  it("names a secondary limit", async () => {
    const source = new ScriptedSource("github:a", (cursor) => (cursor === undefined ? batch("c0") : rateLimit(new Date(Date.now() + 5_000), true)));
    const p = await poller([source]);
    await p.poller.runOnce();
    await p.poller.runOnce();
    expect(emitted(p.events, "poll.rate_limited")).toEqual([{ poll_source: "github:a", resume_at: expect.any(String), reason: "secondary-limit" }]);
  });

  it("hands out a batch that asks for a pause, then pauses; a steady interval is reported once", async () => {
    let clock = Date.parse("2026-01-01T00:00:00Z");
    const source = new ScriptedSource("github:a", (cursor, read) =>
      batch(`c${read}`, cursor === undefined ? [] : [`item-${read}`], { notBefore: new Date(clock + 30_000), notBeforeReason: "poll-interval" }),
    );
    const p = await poller([source], { now: () => new Date(clock) });
    await p.poller.runOnce();
    clock += 30_000;
    expect(await p.poller.runOnce()).toMatchObject({ dispatched: 1 });
    await p.poller.runOnce();
    expect(source.reads).toHaveLength(2);
    clock += 30_000;
    await p.poller.runOnce();
    expect(p.handler.deliveries).toEqual(["poll-item-2", "poll-item-3"]);
    expect(emitted(p.events, "poll.rate_limited")).toHaveLength(1);
    expect(emitted(p.events, "poll.rate_limited")[0]).toMatchObject({ reason: "poll-interval" });
  });

  it("reports each part of a source that failed while the rest progressed", async () => {
    const source = new ScriptedSource("github:a,b", (cursor) =>
      cursor === undefined ? batch("c0") : batch("c1", ["y"], { errors: ["octo/b: GitHub GET /repos/octo/b/issues: 502"] }),
    );
    const p = await poller([source]);
    await p.poller.runOnce();
    expect(await p.poller.runOnce()).toMatchObject({ dispatched: 1, errors: 1 });
    expect(emitted(p.events, "poll.provider_error")).toEqual([{ poll_source: "github:a,b", error: "octo/b: GitHub GET /repos/octo/b/issues: 502" }]);
    expect(p.handler.deliveries).toEqual(["poll-y"]);
  });

  it("never hands out again what was settled of a part a partial batch did not read", async () => {
    // Two parts (repositories a and b): a's change settles, b's fails; then a cannot be read.
    const source = new ScriptedSource("github:a,b", (cursor, read) => {
      if (cursor === undefined) return batch("a0 b0");
      if (cursor === "a0 b0" && read === 2) return batch("a1 b1", ["a-1", "b-1"]);
      if (cursor === "a0 b0") return batch("a0 b1", ["b-1"], { errors: ["a: unreachable"] });
      if (cursor === "a0 b1") return batch("a1 b1", ["a-1"]);
      return batch(cursor);
    });
    let failedOnce = false;
    const handler: EventHandler & { deliveries: string[] } = {
      deliveries: [],
      handle(event) {
        this.deliveries.push(event.deliveryId);
        const settled = event.deliveryId !== "poll-b-1" || failedOnce;
        failedOnce ||= event.deliveryId === "poll-b-1";
        return Promise.resolve({ settled });
      },
    };
    const p = await poller([source], { handler });
    await p.poller.runOnce();
    await p.poller.runOnce();
    expect(await p.poller.runOnce()).toMatchObject({ dispatched: 1, errors: 1 });
    expect(await p.poller.runOnce()).toMatchObject({ changes: 0, dispatched: 0 });
    expect(source.reads).toEqual([undefined, "a0 b0", "a0 b0", "a0 b1"]);
    expect(handler.deliveries).toEqual(["poll-a-1", "poll-b-1", "poll-b-1"]);
    expect(await p.poller.runOnce()).toMatchObject({ changes: 0 });
    expect(source.reads.at(-1)).toBe("a1 b1");
  });

  it("treats what a first read hands out as history", async () => {
    const source = new ScriptedSource("github:a", (cursor) => batch(cursor === undefined ? "c0" : "c0", ["old"]));
    const p = await poller([source]);
    await p.poller.runOnce();
    expect(p.handler.deliveries).toEqual([]);
    expect(emitted(p.events, "poll.baseline")).toEqual([{ poll_source: "github:a" }]);
  });

  it("wakes from a long pause when a deferred source may be read again", async () => {
    // The reset is set when the limited read happens, not when the test starts: on a loaded
    // machine a reset fixed in advance can pass before that read, and a limit that has already
    // reset rightly leaves the loop on its (here, ten-minute) interval.
    let resetAt: Date | undefined;
    const source = new ScriptedSource("github:a", (cursor, read) => {
      if (cursor === undefined) return batch("c0");
      if (read !== 2) return batch("c1", ["after-reset"]);
      resetAt = new Date(Date.now() + 300);
      return rateLimit(resetAt);
    });
    // An interval far past the test's timeout: the delivery shows the loop woke for the reset.
    const p = await poller([source], { intervalMs: 10 * 60_000 });
    const controller = new AbortController();
    const firstCycle = p.poller.runOnce();
    await firstCycle;
    const running = p.poller.run(controller.signal);
    try {
      await waitFor("the delivery after the reset", () => (p.handler.deliveries.length > 0 ? true : undefined), { timeoutMs: 5_000 });
      expect(Date.now()).toBeGreaterThanOrEqual(resetAt?.getTime() ?? Number.POSITIVE_INFINITY);
      expect(p.handler.deliveries).toEqual(["poll-after-reset"]);
    } finally {
      controller.abort();
      await running;
    }
  });
});
