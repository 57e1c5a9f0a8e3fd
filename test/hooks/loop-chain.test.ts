import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { HookChain } from "../../src/hooks/chain.js";
import { readLoopAnswer } from "../../src/hooks/loop-answer.js";
import type { HookExecutor } from "../../src/hooks/types.js";
import { loopPoint } from "../../src/sdk/hooks/loop-catalog.js";
import type { LoopPoint } from "../../src/sdk/hooks/loop-catalog.js";
import { hookEvents, scripted } from "./support/fixtures.js";
import { gatePre, generationPre, started } from "./support/loop-fixtures.js";

function chainOf(...executors: HookExecutor[]): { chain: HookChain; sink: MemoryEventSink } {
  const sink = new MemoryEventSink();
  return { chain: new HookChain(executors, sink), sink };
}

function point(name: string): LoopPoint {
  const found = loopPoint(name);
  if (found === undefined) throw new Error(`no loop event ${name}`);
  return found;
}

describe("readLoopAnswer at a .pre event", () => {
  const pre = point("loop.generation.pre");
  const payload = generationPre();
  it.each<[string, Record<string, unknown>, unknown]>([
    ["denied: true with a reason", { denied: true, deny_reason: "budget" }, { denial: { reason: "budget" }, ignored: [] }],
    ["deny: true, agh's spelling", { deny: true, deny_reason: "budget" }, { denial: { reason: "budget" }, ignored: [] }],
    ["a denial without a reason", { denied: true }, { denial: { reason: "" }, ignored: [] }],
    ["a denial with a null reason", { denied: true, deny_reason: null }, { denial: { reason: "" }, ignored: [] }],
    ["the payload echoed with deny: true", { ...payload, deny: true }, { denial: { reason: "" }, ignored: [] }],
    ["the payload echoed unchanged", { ...payload }, { ignored: [] }],
    ["denied: false", { denied: false, deny_reason: "why not" }, { ignored: ["deny_reason"] }],
    ["a changed fact and an unknown key", { generation: 7, extra: 1 }, { ignored: ["generation", "extra"] }],
    ["labels, which a .pre event does not take", { labels: { a: "b" } }, { ignored: ["labels"] }],
    ["a key set to undefined", { denied: undefined }, { ignored: [] }],
  ])("%s", (_label, answer, expected) => {
    expect(readLoopAnswer(pre, payload, answer)).toEqual(expected);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ["denied: 'yes'", { denied: "yes" }, /^decision "denied" must be a boolean, not a string$/],
    ["deny: 1", { deny: 1 }, /^decision "deny" must be a boolean/],
    ["deny_reason: 3", { denied: true, deny_reason: 3 }, /^decision "deny_reason" must be a string or null, not a number/],
  ])("%s is malformed, so it never denies", (_label, answer, message) => {
    expect(readLoopAnswer(pre, payload, answer)).toMatch(message);
  });
});

describe("readLoopAnswer at an observe-only event", () => {
  const observe = point("loop.started");
  const payload = started();
  it.each<[string, Record<string, unknown>, unknown]>([
    ["labels", { labels: { team: "core" } }, { labels: { team: "core" }, ignored: [] }],
    ["empty labels", { labels: {} }, { ignored: [] }],
    ["a denial, which is ignored", { denied: true, deny: true, deny_reason: "no" }, { ignored: ["denied", "deny", "deny_reason"] }],
    ["labels and a changed fact", { labels: { a: "1" }, status: "done" }, { labels: { a: "1" }, ignored: ["status"] }],
  ])("%s", (_label, answer, expected) => {
    expect(readLoopAnswer(observe, payload, answer)).toEqual(expected);
  });

  it("labels whose values are not strings are malformed", () => {
    expect(readLoopAnswer(observe, payload, { labels: { n: 1 } })).toMatch(/^decision "labels" must be an object of strings, not an object$/);
  });
});

describe("HookChain.runLoop: denials at a .pre event", () => {
  it("the first denial wins, names its hook, and the hooks after it are not called", async () => {
    const after = scripted("c", ["loop.gate.pre"], () => ({ denied: true, deny_reason: "later" }));
    const { chain, sink } = chainOf(
      scripted("a", ["loop.gate.pre"], () => undefined),
      scripted("b", ["loop.gate.pre"], () => ({ deny: true, deny_reason: "dependency not released" })),
      after,
    );
    const outcome = await chain.runLoop("loop.gate.pre", gatePre(), { workItem: "github:octo/repo#1" });
    expect(outcome).toEqual({ denied: { hook: "b", reason: "dependency not released" }, annotations: [] });
    expect(after.calls).toEqual([]);
    expect(hookEvents(sink)).toEqual([
      ["hooks.decided", { point: "loop.gate.pre", hook: "b", changed: ["denied", "deny_reason"], work_item: "github:octo/repo#1" }],
    ]);
  });

  it("hands each executor its own copy of the payload", async () => {
    const seen: unknown[] = [];
    const { chain } = chainOf(
      scripted("a", ["loop.generation.pre"], (payload) => {
        seen.push(payload);
        payload["generation"] = 99;
        return undefined;
      }),
      scripted("b", ["loop.generation.pre"], (payload) => {
        seen.push(payload);
        return undefined;
      }),
    );
    const given = generationPre();
    expect(await chain.runLoop("loop.generation.pre", given)).toEqual({ annotations: [] });
    expect((seen[1] as { generation: number }).generation).toBe(1);
    expect(given.generation).toBe(1);
  });

  it.each<[string, () => unknown]>([
    [
      "throws",
      () => {
        throw new Error("boom");
      },
    ],
    ["answers a string", () => "deny"],
    ["answers a malformed denial", () => ({ denied: "true" })],
    ["rejects", () => Promise.reject(new Error("timed out after 10s"))],
  ])("a hook that %s never denies, even when required: hooks.failed, and the next hook runs", async (_label, answer) => {
    const next = scripted("next", ["loop.generation.pre"], () => undefined);
    const { chain, sink } = chainOf(scripted("broken", ["loop.generation.pre", "work_item_start"], answer, { required: true }), next);
    const outcome = await chain.runLoop("loop.generation.pre", generationPre());
    expect(outcome).toEqual({ annotations: [] });
    expect(next.calls).toHaveLength(1);
    const events = hookEvents(sink);
    expect(events).toHaveLength(1);
    expect(events[0]?.[0]).toBe("hooks.failed");
    expect(events[0]?.[1]).toMatchObject({ point: "loop.generation.pre", hook: "broken", required: false });
  });

  it("records a changed fact as hooks.ignored and still reads the denial", async () => {
    const { chain, sink } = chainOf(scripted("a", ["loop.generation.pre"], () => ({ denied: true, status: "done" })));
    const outcome = await chain.runLoop("loop.generation.pre", generationPre());
    expect(outcome.denied).toEqual({ hook: "a", reason: "" });
    expect(hookEvents(sink)).toEqual([
      ["hooks.ignored", { point: "loop.generation.pre", hook: "a", fields: ["status"] }],
      ["hooks.decided", { point: "loop.generation.pre", hook: "a", changed: ["denied"] }],
    ]);
  });
});

describe("HookChain.runLoop: observe-only events", () => {
  it("returns every hook's labels as annotations and ignores a denial", async () => {
    const { chain, sink } = chainOf(
      scripted("a", ["loop.started"], () => ({ labels: { team: "core" } })),
      scripted("b", ["loop.started"], () => ({ denied: true, deny_reason: "no" })),
      scripted("c", ["loop.started"], () => ({ labels: { cost: "low" } })),
    );
    const outcome = await chain.runLoop("loop.started", started());
    expect(outcome).toEqual({
      annotations: [
        { hook: "a", labels: { team: "core" } },
        { hook: "c", labels: { cost: "low" } },
      ],
    });
    expect(hookEvents(sink)).toEqual([
      ["hooks.decided", { point: "loop.started", hook: "a", changed: ["labels"] }],
      ["hooks.ignored", { point: "loop.started", hook: "b", fields: ["denied", "deny_reason"] }],
      ["hooks.decided", { point: "loop.started", hook: "c", changed: ["labels"] }],
    ]);
  });

  it("runs only the executors whose points include the event, and costs nothing without one", async () => {
    const other = scripted("lifecycle", ["work_item_start"], () => ({ labels: { a: "b" } }));
    const { chain, sink } = chainOf(other);
    expect(await chain.runLoop("loop.started", started())).toEqual({ annotations: [] });
    expect(other.calls).toEqual([]);
    expect(hookEvents(sink)).toEqual([]);
  });

  it("an event name outside the catalog runs nothing", async () => {
    const hook = scripted("a", ["loop.*"], () => ({ labels: { a: "b" } }));
    const { chain } = chainOf(hook);
    expect(await chain.runLoop("loop.*" as "loop.started", started())).toEqual({ annotations: [] });
    expect(hook.calls).toEqual([]);
  });
});
