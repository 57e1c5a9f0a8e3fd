import { promises as fs } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import type { EventFields, EventType } from "../../src/events/index.js";
import { Poller, PollStateError, localPollSources } from "../../src/ingress/index.js";
import type { EventHandler, HandleResult, PollerOptions, PollState } from "../../src/ingress/index.js";
import { trackerPollSource } from "../../src/ingress/poller.js";
import type { PollSourceRuntime, SourceBatch } from "../../src/ingress/poller.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import type { LocalTracker } from "../../src/trackers/local/index.js";
import type { ChangeBatch, SelfLogin, Tracker, TrackerChangeFeed, TrackerScope } from "../../src/trackers/tracker.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { makeTracker, ref } from "../trackers/local/helpers.js";

interface Call {
  readonly event: InboundEvent;
  readonly resolve: (result: HandleResult) => void;
  readonly reject: (error: unknown) => void;
}

/** What the fake answers for an event: a result, an error to reject with, or nothing (the test settles it by hand). */
type Respond = (event: InboundEvent, call: number) => HandleResult | Error | undefined;

class FakeHandler implements EventHandler {
  readonly calls: Call[] = [];
  constructor(private readonly respond: Respond = () => ({ settled: true })) {}

  handle(event: InboundEvent): Promise<HandleResult> {
    return new Promise((resolve, reject) => {
      this.calls.push({ event, resolve, reject });
      const answer = this.respond(event, this.calls.length);
      if (answer instanceof Error) reject(answer);
      else if (answer) resolve(answer);
    });
  }

  get deliveries(): string[] {
    return this.calls.map((call) => call.event.deliveryId);
  }

  call(deliveryId: string): Call {
    const found = this.calls.find((call) => call.event.deliveryId === deliveryId);
    if (!found) throw new Error(`${deliveryId} was not handed out; got ${this.deliveries.join(", ")}`);
    return found;
  }
}

/** The baseline cursor for a tracker whose `demo` journal ends at `seq`. */
function cursorAt(seq: number): string {
  return JSON.stringify({ v: 1, projects: { demo: seq } });
}

interface Setup {
  readonly dir: string;
  readonly tracker: LocalTracker;
  readonly events: MemoryEventSink;
  readonly stateFile: string;
  readonly statusFile: string;
  /** A poller over `local:*` on this setup's files. */
  poller(handler: EventHandler, options?: Partial<PollerOptions>): Poller;
  readState(): Promise<PollState>;
}

async function setup(): Promise<Setup> {
  const dir = await tempDir();
  const { tracker } = makeTracker(join(dir, "tracker"));
  const events = new MemoryEventSink();
  const stateFile = join(dir, "sessions", "poll-state.json");
  const statusFile = join(dir, "sessions", "poll-status.json");
  return {
    dir,
    tracker,
    events,
    stateFile,
    statusFile,
    poller: (handler, options = {}) =>
      new Poller({ sources: [{ key: "local:*", tracker, scope: {} }], stateFile, statusFile, handler, events, intervalMs: 1000, ...options }),
    readState: async () => JSON.parse(await fs.readFile(stateFile, "utf8")) as PollState,
  };
}

function emitted<T extends EventType>(events: MemoryEventSink, type: T): EventFields<T>[] {
  return events.events.filter((event) => event.type === type).map((event) => event.fields as EventFields<T>);
}

/** Opens local:demo#1 and #2 (journal seq 1 and 2). */
async function twoItems(tracker: LocalTracker): Promise<void> {
  await tracker.openItem({ project: "demo", title: "first", body: "old body", actor: "alice" });
  await tracker.openItem({ project: "demo", title: "second", actor: "alice" });
}

/** A tracker that fails its feed while `failing` is set and otherwise reads the real one. */
class FlakyTracker implements Tracker, TrackerChangeFeed {
  readonly kind = "local" as const;
  failing = false;
  constructor(private readonly inner: LocalTracker) {}
  changesSince(scope: TrackerScope, cursor: string | undefined): Promise<ChangeBatch> {
    if (this.failing) return Promise.reject(new Error("tracker unreachable"));
    return this.inner.changesSince(scope, cursor);
  }
  getItem = (): never => {
    throw new Error("not used");
  };
  postComment = (): never => {
    throw new Error("not used");
  };
  addLabel = (): never => {
    throw new Error("not used");
  };
  removeLabel = (): never => {
    throw new Error("not used");
  };
  selfLogin = (): Promise<SelfLogin> => this.inner.selfLogin();
}

describe("Poller", () => {
  it("takes existing history as read on first sight", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    await s.tracker.addComment(ref("demo", 1), "an old request", "alice");
    const handler = new FakeHandler();
    const poller = s.poller(handler);

    const first = await poller.runOnce();
    expect(first).toMatchObject({ changes: 0, dispatched: 0, errors: 0, interrupted: false });
    expect(handler.calls).toEqual([]);
    expect(emitted(s.events, "poll.baseline")).toEqual([{ poll_source: "local:*" }]);
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(3), handled: [], attempts: {} });

    await poller.runOnce();
    expect(handler.calls).toEqual([]);
    expect(emitted(s.events, "poll.baseline")).toHaveLength(1);
  });

  it("hands out new changes in feed order as inbound events and advances the cursor", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    const handler = new FakeHandler();
    const poller = s.poller(handler);
    await poller.runOnce();

    const comment = await s.tracker.addComment(ref("demo", 1), "please fix", "bob");
    await s.tracker.changeLabels(ref("demo", 2), { add: ["agent"] }, "carol");
    await s.tracker.setState(ref("demo", 1), "closed", "dave");
    s.events.events.length = 0;

    const summary = await poller.runOnce();
    expect(summary).toMatchObject({ changes: 3, dispatched: 3, errors: 0, interrupted: false });
    expect(handler.calls.map(({ event }) => [event.deliveryId, event.kind, event.workItems[0]?.ref, event.actor])).toEqual([
      ["poll-demo:3", "commented", "local:demo#1", "bob"],
      ["poll-demo:4", "labeled", "local:demo#2", "carol"],
      ["poll-demo:5", "closed", "local:demo#1", "dave"],
    ]);
    expect(handler.call("poll-demo:3").event).toMatchObject({ source: "poll", body: "please fix", commentId: comment.id });
    expect(handler.call("poll-demo:4").event).toMatchObject({ label: "agent", labels: ["agent"], body: null });
    expect(handler.call("poll-demo:5").event).toMatchObject({ itemState: "closed" });
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(5), handled: [], attempts: {} });
    expect(s.events.events.filter((event) => event.type.startsWith("poll."))).toEqual([
      {
        type: "poll.cycle",
        fields: { changes: 3, dispatched: 3, errors: 0, duration_ms: summary.durationMs, interrupted: false },
      },
    ]);

    expect(await poller.runOnce()).toMatchObject({ changes: 0, dispatched: 0 });
    expect(handler.calls).toHaveLength(3);
  });

  it("hands out a whole batch without waiting, persists each settled change, and moves the cursor once all are settled", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    const handler = new FakeHandler(() => undefined);
    const poller = s.poller(handler);
    await poller.runOnce();
    await s.tracker.addComment(ref("demo", 1), "A", "bob");
    await s.tracker.addComment(ref("demo", 2), "B", "bob");

    let finished = false;
    const cycle = poller.runOnce().finally(() => {
      finished = true;
    });
    // Both are handed out before either is settled: different items run in parallel.
    await waitFor("both changes handed out", () => (handler.calls.length === 2 ? true : undefined));
    expect(handler.deliveries).toEqual(["poll-demo:3", "poll-demo:4"]);

    handler.call("poll-demo:4").resolve({ settled: true });
    const afterB = await waitFor("B on disk", async () => {
      const state = (await s.readState()).sources["local:*"];
      return state?.handled.includes("demo:4") ? state : undefined;
    });
    expect(afterB).toMatchObject({ cursor: cursorAt(2), handled: ["demo:4"] });
    expect(finished).toBe(false);

    handler.call("poll-demo:3").resolve({ settled: true });
    expect(await cycle).toMatchObject({ changes: 2, dispatched: 2, errors: 0 });
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(4), handled: [], attempts: {} });
  });

  it("retries a change that did not settle, and gives it up after maxAttempts", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    const handler = new FakeHandler((event) => ({ settled: event.deliveryId !== "poll-demo:3" }));
    const poller = s.poller(handler, { maxAttempts: 3 });
    await poller.runOnce();
    await s.tracker.addComment(ref("demo", 1), "fails", "bob");
    await s.tracker.addComment(ref("demo", 2), "works", "bob");

    expect(await poller.runOnce()).toMatchObject({ changes: 2, dispatched: 2, errors: 1 });
    expect(handler.deliveries).toEqual(["poll-demo:3", "poll-demo:4"]);
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(2), handled: ["demo:4"], attempts: { "demo:3": 1 } });

    expect(await poller.runOnce()).toMatchObject({ changes: 1, dispatched: 1, errors: 1 });
    expect(handler.deliveries.slice(2)).toEqual(["poll-demo:3"]);
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(2), attempts: { "demo:3": 2 } });

    // The third failure gives it up: the source must not stall behind one change for ever.
    expect(await poller.runOnce()).toMatchObject({ changes: 1, dispatched: 1, errors: 1 });
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(4), handled: [], attempts: {} });

    expect(await poller.runOnce()).toMatchObject({ changes: 0, dispatched: 0, errors: 0 });
    expect(handler.deliveries).toEqual(["poll-demo:3", "poll-demo:4", "poll-demo:3", "poll-demo:3"]);
  });

  it("does not count a held change as a failed attempt: it is handed out every cycle, past maxAttempts, until the handler settles it", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    let waiting = true;
    const handler = new FakeHandler((event) => (event.deliveryId === "poll-demo:3" && waiting ? { settled: false, held: true } : { settled: true }));
    const poller = s.poller(handler, { maxAttempts: 2 });
    await poller.runOnce();
    await s.tracker.addComment(ref("demo", 1), "for the adopted agent", "bob");
    await s.tracker.addComment(ref("demo", 2), "works", "bob");

    for (let cycle = 0; cycle < 4; cycle++) {
      expect(await poller.runOnce()).toMatchObject({ dispatched: cycle === 0 ? 2 : 1, errors: 0 });
      expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(2), attempts: {}, held: { "demo:3": expect.any(String) } });
    }
    expect(handler.deliveries.filter((id) => id === "poll-demo:3")).toHaveLength(4);

    waiting = false;
    expect(await poller.runOnce()).toMatchObject({ dispatched: 1, errors: 0 });
    const settled = (await s.readState()).sources["local:*"];
    expect(settled).toMatchObject({ cursor: cursorAt(4), handled: [], attempts: {} });
    expect(settled?.held).toBeUndefined();
    expect(emitted(s.events, "poll.provider_error")).toEqual([]);
  });

  it("gives a held change up once it was held longer than maxHeldMs, from when it was first held, across a restart", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    let clock = new Date("2026-12-03T12:00:00Z");
    const now = (): Date => clock;
    const held = new FakeHandler(() => ({ settled: false, held: true }));
    const first = s.poller(held, { maxHeldMs: 60 * 60_000, now });
    await first.runOnce();
    await s.tracker.addComment(ref("demo", 1), "for the adopted agent", "bob");
    await first.runOnce();
    expect((await s.readState()).sources["local:*"]?.held).toEqual({ "demo:3": "2026-12-03T12:00:00.000Z" });

    // Restarted 59 minutes on: still within the bound, still held, its first hold kept.
    clock = new Date("2026-12-03T12:59:00Z");
    const restarted = s.poller(held, { maxHeldMs: 60 * 60_000, now });
    expect(await restarted.runOnce()).toMatchObject({ dispatched: 1, errors: 0 });
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(2), held: { "demo:3": "2026-12-03T12:00:00.000Z" } });

    clock = new Date("2026-12-03T13:00:00Z");
    expect(await restarted.runOnce()).toMatchObject({ dispatched: 1, errors: 1 });
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(3), handled: [], attempts: {} });
    expect(emitted(s.events, "poll.provider_error")).toEqual([
      { poll_source: "local:*", error: expect.stringMatching(/^change demo:3 was held 60 min .*the poller's bound is 60 min\): given up/) },
    ]);
    expect(await restarted.runOnce()).toMatchObject({ changes: 0, dispatched: 0 });
  });

  it("counts a rejected handle as a failed attempt, reports it, and settles the change on a later success", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    const handler = new FakeHandler((_event, call) => (call === 1 ? new Error("dispatcher bug") : { settled: true }));
    const poller = s.poller(handler);
    await poller.runOnce();
    await s.tracker.addComment(ref("demo", 1), "hello", "bob");

    expect(await poller.runOnce()).toMatchObject({ dispatched: 1, errors: 1 });
    expect(emitted(s.events, "poll.provider_error")).toEqual([{ poll_source: "local:*", error: "handling change demo:3 failed: dispatcher bug" }]);
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(2), attempts: { "demo:3": 1 } });

    expect(await poller.runOnce()).toMatchObject({ dispatched: 1, errors: 0 });
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(3), handled: [], attempts: {} });
  });

  it("reports a tracker that fails, keeps its state, and recovers next cycle", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    const flaky = new FlakyTracker(s.tracker);
    const handler = new FakeHandler();
    const poller = s.poller(handler, { sources: [{ key: "local:demo", tracker: flaky, scope: { repositories: ["demo"] } }] });

    flaky.failing = true;
    expect(await poller.runOnce()).toMatchObject({ changes: 0, errors: 1 });
    expect(emitted(s.events, "poll.provider_error")).toEqual([{ poll_source: "local:demo", error: "tracker unreachable" }]);
    expect(emitted(s.events, "poll.baseline")).toEqual([]);
    await expect(fs.stat(s.stateFile)).rejects.toThrow(/ENOENT/);

    flaky.failing = false;
    await poller.runOnce();
    expect(emitted(s.events, "poll.baseline")).toEqual([{ poll_source: "local:demo" }]);
    await s.tracker.addComment(ref("demo", 1), "while down", "bob");
    const before = await fs.readFile(s.stateFile, "utf8");

    flaky.failing = true;
    expect(await poller.runOnce()).toMatchObject({ changes: 0, dispatched: 0, errors: 1 });
    expect(emitted(s.events, "poll.provider_error")).toHaveLength(2);
    expect(await fs.readFile(s.stateFile, "utf8")).toBe(before);

    flaky.failing = false;
    expect(await poller.runOnce()).toMatchObject({ changes: 1, dispatched: 1, errors: 0 });
    expect(handler.deliveries).toEqual(["poll-demo:3"]);
  });

  it("after a crash mid-cycle, a new poller hands out only the change that was not settled", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    await s.poller(new FakeHandler()).runOnce();
    await s.tracker.addComment(ref("demo", 1), "settles", "bob");
    await s.tracker.addComment(ref("demo", 2), "never answered", "bob");

    // The first poller's handler settles demo:3 and never answers demo:4; the poller is then
    // abandoned mid-cycle, as a kill -9 would leave it.
    const crashed = new FakeHandler((event) => (event.deliveryId === "poll-demo:3" ? { settled: true } : undefined));
    void s.poller(crashed).runOnce();
    await waitFor("demo:3 on disk", async () => ((await s.readState()).sources["local:*"]?.handled.includes("demo:3") ? true : undefined));
    expect(crashed.deliveries).toEqual(["poll-demo:3", "poll-demo:4"]);

    const handler = new FakeHandler();
    const restarted = s.poller(handler);
    expect(await restarted.runOnce()).toMatchObject({ changes: 1, dispatched: 1, errors: 0 });
    expect(handler.deliveries).toEqual(["poll-demo:4"]);
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(4), handled: [], attempts: {} });
  });

  it("after a restart between cycles, a new poller hands out only the pending change, with its attempts", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    const first = s.poller(new FakeHandler((event) => ({ settled: event.deliveryId === "poll-demo:3" })), { maxAttempts: 2 });
    await first.runOnce();
    await s.tracker.addComment(ref("demo", 1), "settles", "bob");
    await s.tracker.addComment(ref("demo", 2), "fails once", "bob");
    await first.runOnce();

    const handler = new FakeHandler(() => ({ settled: false }));
    const restarted = s.poller(handler, { maxAttempts: 2 });
    expect(await restarted.runOnce()).toMatchObject({ changes: 1, dispatched: 1, errors: 1 });
    expect(handler.deliveries).toEqual(["poll-demo:4"]);
    // The attempt before the restart counted: the second failure gave the change up.
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(4), handled: [], attempts: {} });
  });

  it("stops handing out on abort, waits for what it handed out, and marks the cycle interrupted", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    const controller = new AbortController();
    const handler = new FakeHandler((_event, call) => {
      if (call === 1) controller.abort();
      return { settled: true };
    });
    const poller = s.poller(handler);
    await poller.runOnce();
    await s.tracker.addComment(ref("demo", 1), "one", "bob");
    await s.tracker.addComment(ref("demo", 2), "two", "bob");
    await s.tracker.addComment(ref("demo", 1), "three", "bob");

    const summary = await poller.runOnce(controller.signal);
    expect(summary).toMatchObject({ changes: 3, dispatched: 1, errors: 0, interrupted: true });
    expect(handler.deliveries).toEqual(["poll-demo:3"]);
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(2), handled: ["demo:3"] });
    expect(emitted(s.events, "poll.cycle").at(-1)).toMatchObject({ dispatched: 1, interrupted: true });

    expect(await poller.runOnce()).toMatchObject({ changes: 2, dispatched: 2, interrupted: false });
    expect(handler.deliveries).toEqual(["poll-demo:3", "poll-demo:4", "poll-demo:5"]);
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(5), handled: [] });
  });

  it("does not count a failure reported during shutdown as an attempt", async () => {
    const s = await setup();
    await twoItems(s.tracker);
    const controller = new AbortController();
    const handler = new FakeHandler(() => {
      // A dispatcher that is shutting down refuses new work with settled: false.
      controller.abort();
      return { settled: false };
    });
    const poller = s.poller(handler, { maxAttempts: 1 });
    await poller.runOnce();
    await s.tracker.addComment(ref("demo", 1), "one", "bob");

    expect(await poller.runOnce(controller.signal)).toMatchObject({ dispatched: 1, errors: 1, interrupted: false });
    expect((await s.readState()).sources["local:*"]).toMatchObject({ cursor: cursorAt(2), handled: [], attempts: {} });
  });

  it("skips every source once aborted before the cycle starts", async () => {
    const s = await setup();
    const handler = new FakeHandler();
    const summary = await s.poller(handler).runOnce(AbortSignal.abort());
    expect(summary).toMatchObject({ changes: 0, dispatched: 0, interrupted: true });
    expect(emitted(s.events, "poll.baseline")).toEqual([]);
  });

  it("writes a heartbeat after every cycle", async () => {
    const s = await setup();
    let clock = Date.parse("2025-03-01T10:00:00.000Z");
    const poller = s.poller(new FakeHandler(), { intervalMs: 1500, now: () => new Date((clock += 1000)) });
    const summary = await poller.runOnce();
    expect(poller.lastCycle).toEqual(summary);
    const status = JSON.parse(await fs.readFile(s.statusFile, "utf8")) as Record<string, unknown>;
    expect(status).toEqual({
      startedAt: "2025-03-01T10:00:01.000Z",
      lastCycleAt: expect.any(String),
      intervalSeconds: 1.5,
      lastCycle: { changes: 0, dispatched: 0, errors: 0, durationMs: summary.durationMs, interrupted: false },
    });
    expect(Date.parse(status.lastCycleAt as string)).toBeGreaterThan(Date.parse("2025-03-01T10:00:01.000Z"));

    const before = status.lastCycleAt;
    await poller.runOnce();
    const next = JSON.parse(await fs.readFile(s.statusFile, "utf8")) as Record<string, unknown>;
    expect(next.startedAt).toBe(status.startedAt);
    expect(Date.parse(next.lastCycleAt as string)).toBeGreaterThan(Date.parse(before as string));
  });

  it("refuses a corrupt state file, naming it and the remedy", async () => {
    const s = await setup();
    await fs.mkdir(join(s.dir, "sessions"), { recursive: true });
    await fs.writeFile(s.stateFile, '{"version":1,"sources":{"local:*":{"cursor":');
    const poller = s.poller(new FakeHandler());
    await expect(poller.load()).rejects.toBeInstanceOf(PollStateError);
    const error = await poller.runOnce().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PollStateError);
    expect((error as Error).message).toContain(s.stateFile);
    expect((error as Error).message).toContain("move it aside to start from now");
    // The daemon loop fails up front rather than reporting the same problem every cycle.
    await expect(poller.run(new AbortController().signal)).rejects.toBeInstanceOf(PollStateError);
    expect(emitted(s.events, "poll.cycle")).toEqual([]);
  });

  it("keeps each source's state apart", async () => {
    const s = await setup();
    await s.tracker.openItem({ project: "demo", title: "d", actor: "alice" });
    await s.tracker.openItem({ project: "other", title: "o", actor: "alice" });
    const handler = new FakeHandler();
    const sources = localPollSources(
      [
        { provider: "local", projects: ["demo"] },
        { provider: "local", projects: ["other"] },
      ],
      s.tracker,
    );
    const poller = s.poller(handler, { sources });
    await poller.runOnce();
    expect(emitted(s.events, "poll.baseline")).toEqual([{ poll_source: "local:demo" }, { poll_source: "local:other" }]);

    await s.tracker.addComment(ref("other", 1), "to other", "bob");
    await s.tracker.addComment(ref("demo", 1), "to demo", "bob");
    await poller.runOnce();
    expect(handler.deliveries).toEqual(["poll-demo:2", "poll-other:2"]);
    const state = await s.readState();
    expect(Object.keys(state.sources).sort()).toEqual(["local:demo", "local:other"]);
    expect(JSON.parse(state.sources["local:demo"]!.cursor)).toEqual({ v: 1, projects: { demo: 2 } });
    expect(JSON.parse(state.sources["local:other"]!.cursor)).toEqual({ v: 1, projects: { other: 2 } });
  });

  it("refuses two sources with one key", async () => {
    const s = await setup();
    const source = { key: "local:*", tracker: s.tracker, scope: {} };
    expect(() => s.poller(new FakeHandler(), { sources: [source, source] })).toThrow(/share the key "local:\*"/);
  });

  describe("run", () => {
    it("polls every interval until aborted", async () => {
      const s = await setup();
      await twoItems(s.tracker);
      const handler = new FakeHandler();
      const poller = s.poller(handler, { intervalMs: 5 });
      const controller = new AbortController();
      const running = poller.run(controller.signal);

      await waitFor("a baseline and an idle cycle", () => (emitted(s.events, "poll.cycle").length >= 2 ? true : undefined));
      await s.tracker.addComment(ref("demo", 2), "picked up by the loop", "bob");
      await waitFor("the comment handed out", () => (handler.calls.length === 1 ? true : undefined));
      controller.abort();
      await running;
      expect(handler.deliveries).toEqual(["poll-demo:3"]);
      await waitFor("the cursor on disk", async () => ((await s.readState()).sources["local:*"]?.cursor === cursorAt(3) ? true : undefined));
    });

    it("wakes from its pause at once when aborted", async () => {
      const s = await setup();
      // A pause longer than the test timeout: returning at all shows the abort ended it.
      const poller = s.poller(new FakeHandler(), { intervalMs: 10 * 60_000 });
      const controller = new AbortController();
      const running = poller.run(controller.signal);
      await waitFor("the first cycle", () => poller.lastCycle);
      controller.abort();
      await running;
      expect(emitted(s.events, "poll.cycle")).toHaveLength(1);
    });

    it("counts and reports a failure inside a cycle, then carries on", async () => {
      const s = await setup();
      await twoItems(s.tracker);
      let broken = false;
      const local = trackerPollSource("local:*", s.tracker, {});
      // A batch without an item list: nothing the poller checks for, so it fails deep inside the cycle.
      const source: PollSourceRuntime = {
        key: "local:*",
        read: (cursor) => (broken ? Promise.resolve({ items: null, cursor: "" } as unknown as SourceBatch) : local.read(cursor)),
      };
      const handler = new FakeHandler();
      const poller = s.poller(handler, { intervalMs: 5, sources: [source] });
      await poller.runOnce();

      broken = true;
      expect(await poller.runOnce()).toMatchObject({ errors: 1 });
      expect(emitted(s.events, "poll.provider_error")).toEqual([{ poll_source: "*", error: expect.stringMatching(/null/) }]);
      expect(emitted(s.events, "poll.cycle").at(-1)).toMatchObject({ errors: 1 });

      broken = false;
      await s.tracker.addComment(ref("demo", 1), "after the failure", "bob");
      const controller = new AbortController();
      const running = poller.run(controller.signal);
      await waitFor("the comment handed out", () => (handler.calls.length === 1 ? true : undefined));
      controller.abort();
      await running;
      expect(handler.deliveries).toEqual(["poll-demo:3"]);
    });

    it("reports an unexpected failure of a cycle and carries on", async () => {
      const s = await setup();
      let failed = false;
      const events = new (class extends MemoryEventSink {
        override emit<T extends EventType>(type: T, fields: EventFields<T>): void {
          if (type === "poll.cycle" && !failed) {
            failed = true;
            throw new Error("sink broke");
          }
          super.emit(type, fields);
        }
      })();
      const poller = s.poller(new FakeHandler(), { intervalMs: 5, events });
      const controller = new AbortController();
      const running = poller.run(controller.signal);
      await waitFor("a cycle after the failure", () => (emitted(events, "poll.cycle").length >= 1 ? true : undefined));
      controller.abort();
      await running;
      expect(emitted(events, "poll.provider_error")).toEqual([{ poll_source: "*", error: "sink broke" }]);
    });
  });
});

describe("localPollSources", () => {
  it("keys local sources by their sorted projects and skips duplicates", async () => {
    const { tracker } = makeTracker(await tempDir());
    const sources = localPollSources(
      [{ provider: "local" }, { provider: "local", projects: ["other", "demo"] }, { provider: "local", projects: ["demo", "other", "demo"] }],
      tracker,
    );
    expect(sources.map(({ key, scope }) => ({ key, scope }))).toEqual([
      { key: "local:*", scope: {} },
      { key: "local:demo,other", scope: { repositories: ["demo", "other"] } },
    ]);
    expect(sources.every((source) => source.tracker === tracker)).toBe(true);
  });
});
