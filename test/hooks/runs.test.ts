import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { HookChain } from "../../src/hooks/chain.js";
import { APPLIED_SHOWN, HookRunRecorder, RUN_WINDOW_MS } from "../../src/hooks/runs.js";
import type { HookExecutor } from "../../src/hooks/types.js";
import { TEST_POINT, runsOf, scripted, startContext, testContext } from "./support/fixtures.js";
import { gatePre, started } from "./support/loop-fixtures.js";

function clock(start = Date.UTC(2026, 6, 27, 12, 0, 0)): { now: () => number; advance: (ms: number) => void } {
  let at = start;
  return { now: () => at, advance: (ms) => (at += ms) };
}

function thrower(name: string, points: string[]): HookExecutor {
  return scripted(name, points, () => {
    throw new Error("boom");
  });
}

describe("hooks.ran: one record per hook call", () => {
  it("records applied, denied, failed and rejected calls at a lifecycle point with the work item", async () => {
    const sink = new MemoryEventSink();
    const chain = new HookChain(
      [
        scripted("pass", ["work_item_start"], () => undefined),
        thrower("broken", ["work_item_start"]),
        scripted("wrong", ["work_item_start"], () => ({ proceed: "no" })),
        scripted("veto", ["work_item_start"], () => ({ proceed: false, reason: "not today" })),
      ],
      sink,
      { timers: false },
    );
    await chain.run("work_item_start", startContext(), { workItem: "local:demo#1" });
    expect(runsOf(sink)).toEqual([
      { hook: "pass", point: "work_item_start", outcome: "applied", work_item: "local:demo#1" },
      { hook: "broken", point: "work_item_start", outcome: "failed", work_item: "local:demo#1", error: "boom" },
      { hook: "wrong", point: "work_item_start", outcome: "rejected", work_item: "local:demo#1", error: expect.stringContaining('decision "proceed"') },
      { hook: "veto", point: "work_item_start", outcome: "denied", work_item: "local:demo#1", changed: ["proceed", "reason"] },
    ]);
  });

  it("records a loop denial with its reason, and the hooks after it as skipped, with the loop run", async () => {
    const sink = new MemoryEventSink();
    const chain = new HookChain(
      [scripted("budget", ["loop.gate.pre"], () => ({ denied: true, deny_reason: "over budget" })), scripted("after", ["loop.gate.pre"], () => undefined)],
      sink,
      { timers: false },
    );
    const payload = gatePre();
    await chain.runLoop("loop.gate.pre", payload, { workItem: "local:demo#1" });
    const run = { point: "loop.gate.pre", work_item: "local:demo#1", loop_run_id: payload.loop_run_id };
    expect(runsOf(sink)).toEqual([
      { hook: "budget", ...run, outcome: "denied", error: "over budget" },
      { hook: "after", ...run, outcome: "skipped" },
    ]);
  });

  it("records an observe-only answer with labels as applied, and a failing hook as failed", async () => {
    const sink = new MemoryEventSink();
    const chain = new HookChain([scripted("tag", ["loop.started"], () => ({ labels: { team: "a" } })), thrower("broken", ["loop.started"])], sink, {
      timers: false,
    });
    await chain.runLoop("loop.started", started());
    expect(runsOf(sink).map((run) => [run["hook"], run["outcome"], run["changed"]])).toEqual([
      ["tag", "applied", ["labels"]],
      ["broken", "failed", undefined],
    ]);
  });

  it("keeps a busy hook's applied calls bounded: the first of each minute alone, the rest one aggregate", async () => {
    const sink = new MemoryEventSink();
    const time = clock();
    const chain = new HookChain([scripted("busy", ["test_point"], () => undefined)], sink, { now: time.now, timers: false });
    for (let call = 0; call < 1_000; call += 1) await chain.runPoint(TEST_POINT, testContext());
    // Still in the minute: only the calls shown one by one are written yet.
    expect(runsOf(sink)).toHaveLength(APPLIED_SHOWN);
    time.advance(RUN_WINDOW_MS);
    await chain.runPoint(TEST_POINT, testContext());
    const runs = runsOf(sink);
    expect(runs).toHaveLength(APPLIED_SHOWN + 2);
    expect(runs[APPLIED_SHOWN]).toEqual({
      hook: "busy",
      point: "test_point",
      outcome: "applied",
      count: 1_000 - APPLIED_SHOWN,
      median_ms: expect.any(Number),
      since: "2026-07-27T12:00:00.000Z",
    });
    // The new minute starts with a call shown on its own.
    expect(runs[APPLIED_SHOWN + 1]).toEqual({ hook: "busy", point: "test_point", outcome: "applied" });
  });

  it("writes every call that did not apply, however many", async () => {
    const sink = new MemoryEventSink();
    const chain = new HookChain([thrower("broken", ["test_point"])], sink, { now: clock().now, timers: false });
    for (let call = 0; call < 50; call += 1) await chain.runPoint(TEST_POINT, testContext());
    expect(runsOf(sink).filter((run) => run["outcome"] === "failed")).toHaveLength(50);
  });

  it("writes the open aggregate when the chain closes", async () => {
    const sink = new MemoryEventSink();
    const chain = new HookChain([scripted("busy", ["test_point"], () => undefined)], sink, { now: clock().now, timers: false });
    for (let call = 0; call < APPLIED_SHOWN + 3; call += 1) await chain.runPoint(TEST_POINT, testContext());
    await chain.close();
    expect(runsOf(sink).at(-1)).toMatchObject({ hook: "busy", outcome: "applied", count: 3 });
  });

  it("aggregates with the longest duration and the median of the minute", () => {
    const sink = new MemoryEventSink();
    const recorder = new HookRunRecorder(sink, { now: clock().now, timers: false });
    const call = { hook: "h", point: "p" };
    for (let index = 0; index < APPLIED_SHOWN; index += 1) recorder.record({ ...call, durationMs: 1 }, "applied");
    for (const durationMs of [10, 30, 20, 90, 40]) recorder.record({ ...call, durationMs }, "applied");
    recorder.flush();
    expect(sink.events.at(-1)?.fields).toMatchObject({ count: 5, duration_ms: 90, median_ms: 30 });
  });

  it("a sink that throws does not reach the caller", async () => {
    const chain = new HookChain(
      [scripted("pass", ["test_point"], () => undefined)],
      {
        emit: () => {
          throw new Error("disk full");
        },
      },
      { timers: false },
    );
    await expect(chain.runPoint(TEST_POINT, testContext())).resolves.toMatchObject({ changed: [] });
  });
});
