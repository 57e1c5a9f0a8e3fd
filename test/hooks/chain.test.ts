import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import type { EventSink } from "../../src/events/log.js";
import { HookChain } from "../../src/hooks/chain.js";
import type { HookExecutor } from "../../src/hooks/types.js";
import { LIFECYCLE_POINTS, lifecyclePoint } from "../../src/sdk/hooks/catalog.js";
import type { HookPoint } from "../../src/sdk/hooks/catalog.js";
import { TEST_POINT, WORK_ITEM, hookEvents, scripted, spawnContext, startContext, testContext, waitingContext } from "./support/fixtures.js";

function point(name: string): HookPoint {
  const found = lifecyclePoint(name);
  if (found === undefined) throw new Error(`no point ${name}`);
  return found;
}

function chainOf(...executors: HookExecutor[]): { chain: HookChain; sink: MemoryEventSink } {
  const sink = new MemoryEventSink();
  return { chain: new HookChain(executors, sink), sink };
}

describe("HookChain: the shape", () => {
  it("names its executors in declaration order and knows the points they run at", () => {
    const { chain } = chainOf(
      scripted("b", ["session_spawn"], () => undefined),
      scripted("a", ["work_item_start"], () => undefined),
    );
    expect(chain.names).toEqual(["b", "a"]);
    expect(chain.size).toBe(2);
    expect(chain.handles("session_spawn")).toBe(true);
    expect(chain.handles("work_item_complete")).toBe(false);
    const empty = HookChain.empty();
    expect([empty.size, empty.names, empty.handles("session_spawn")]).toEqual([0, [], false]);
  });
});

describe("HookChain: passing and replacing", () => {
  it.each([
    ["undefined", undefined],
    ["null", null],
  ])("an answer of %s passes the context through, recording nothing", async (_label, answer) => {
    const { chain, sink } = chainOf(scripted("a", ["session_spawn"], () => answer));
    const given = spawnContext();
    const outcome = await chain.run("session_spawn", given);
    expect(outcome).toEqual({ context: given, changed: [] });
    expect(hookEvents(sink)).toEqual([]);
  });

  it("an executor that mutates its context without returning it changes nothing", async () => {
    const { chain } = chainOf(
      scripted("a", ["session_spawn"], (context) => {
        context["prompt"] = "rewritten";
        context["proceed"] = false;
        return undefined;
      }),
    );
    const given = spawnContext();
    const outcome = await chain.run("session_spawn", given);
    expect(outcome.context.prompt).toBe("Work on #15.");
    expect(outcome.changed).toEqual([]);
    expect(given.prompt).toBe("Work on #15.");
  });

  it("a returned context replaces the decisions, and the change is recorded", async () => {
    const { chain, sink } = chainOf(scripted("prefix", ["session_spawn"], (context) => ({ ...context, prompt: `[acme] ${String(context["prompt"])}` })));
    const outcome = await chain.run("session_spawn", spawnContext(), { workItem: WORK_ITEM.ref });
    expect(outcome.context).toEqual(spawnContext({ prompt: "[acme] Work on #15." }));
    expect(outcome.changed).toEqual(["prompt"]);
    expect(outcome.refusal).toBeUndefined();
    expect(hookEvents(sink)).toEqual([["hooks.decided", { point: "session_spawn", hook: "prefix", changed: ["prompt"], work_item: WORK_ITEM.ref }]]);
  });

  it("an answer with only some decisions changes those, and a decision set to its current value is no change", async () => {
    const { chain, sink } = chainOf(scripted("a", ["session_spawn"], () => ({ prompt: "Work on #15.", reason: "noted" })));
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome.changed).toEqual(["reason"]);
    expect(outcome.context.reason).toBe("noted");
    expect(hookEvents(sink)).toEqual([["hooks.decided", { point: "session_spawn", hook: "a", changed: ["reason"] }]]);
  });

  it("runs in declaration order, only the executors of the point, each seeing the decisions before it", async () => {
    const first = scripted("first", ["session_spawn"], (context) => ({ ...context, prompt: `${String(context["prompt"])} +first` }));
    const elsewhere = scripted("elsewhere", ["work_item_start"], () => ({ proceed: false }));
    const second = scripted("second", ["session_spawn"], (context) => ({ ...context, prompt: `${String(context["prompt"])} +second` }));
    const { chain, sink } = chainOf(first, elsewhere, second);
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome.context.prompt).toBe("Work on #15. +first +second");
    expect(second.calls[0]?.context["prompt"]).toBe("Work on #15. +first");
    expect(elsewhere.calls).toEqual([]);
    expect(hookEvents(sink).map(([type, fields]) => [type, fields["hook"]])).toEqual([
      ["hooks.decided", "first"],
      ["hooks.decided", "second"],
    ]);
  });

  it("a decision changed and changed back is not in changed", async () => {
    const { chain } = chainOf(
      scripted("a", ["session_spawn"], () => ({ prompt: "other" })),
      scripted("b", ["session_spawn"], () => ({ prompt: "Work on #15." })),
    );
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome.changed).toEqual([]);
    expect(outcome.context.prompt).toBe("Work on #15.");
  });
});

describe("HookChain: facts and unknown keys", () => {
  it("ignores a changed fact and records it, while applying the decisions of the same answer", async () => {
    const { chain, sink } = chainOf(
      scripted("a", ["work_item_start"], (context) => ({ ...context, actor: "mallory", workItem: { ...WORK_ITEM, number: 99 }, proceed: false, reason: "no" })),
    );
    const outcome = await chain.run("work_item_start", startContext(), { workItem: WORK_ITEM.ref });
    expect(outcome.context).toEqual(startContext({ proceed: false, reason: "no" }));
    expect(hookEvents(sink)).toEqual([
      ["hooks.ignored", { point: "work_item_start", hook: "a", fields: ["workItem", "actor"], work_item: WORK_ITEM.ref }],
      ["hooks.decided", { point: "work_item_start", hook: "a", changed: ["proceed", "reason"], work_item: WORK_ITEM.ref }],
    ]);
  });

  it("ignores and records an unknown key, once per executor run", async () => {
    const { chain, sink } = chainOf(scripted("a", ["work_item_start"], (context) => ({ ...context, graph: "other", approve: true })));
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome).toEqual({ context: startContext(), changed: [] });
    expect(outcome.context).not.toHaveProperty("graph");
    expect(hookEvents(sink)).toEqual([["hooks.ignored", { point: "work_item_start", hook: "a", fields: ["graph", "approve"] }]]);
  });

  it("an echoed fact is no change, whatever the order of its keys", async () => {
    const reordered = Object.fromEntries(Object.entries(WORK_ITEM).reverse());
    const { chain, sink } = chainOf(scripted("a", ["work_item_start"], (context) => ({ ...context, workItem: reordered })));
    await chain.run("work_item_start", startContext());
    expect(hookEvents(sink)).toEqual([]);
  });

  it("a decision of another point is an unknown key here", async () => {
    const { chain, sink } = chainOf(scripted("a", ["work_item_start"], () => ({ prompt: "x" })));
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.context).not.toHaveProperty("prompt");
    expect(hookEvents(sink)).toEqual([["hooks.ignored", { point: "work_item_start", hook: "a", fields: ["prompt"] }]]);
  });

  it("a key set to undefined is an absent key", async () => {
    const { chain, sink } = chainOf(scripted("a", ["session_spawn"], () => ({ prompt: undefined, reason: "r" })));
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome.changed).toEqual(["reason"]);
    expect(hookEvents(sink)).toEqual([["hooks.decided", { point: "session_spawn", hook: "a", changed: ["reason"] }]]);
  });
});

describe("HookChain: a decision keeps its declared type", () => {
  it.each([
    ["string", "label", 1, 'decision "label" must be a string, not a number'],
    ["string", "label", null, 'decision "label" must be a string, not null'],
    ["boolean", "enabled", "false", 'decision "enabled" must be a boolean, not a string'],
    ["boolean", "enabled", 0, 'decision "enabled" must be a boolean, not a number'],
    ["integer", "limit", 1.5, 'decision "limit" must be an integer, not a number (1.5)'],
    ["integer", "limit", "3", 'decision "limit" must be an integer, not a string'],
    ["integer", "limit", 2 ** 60, `decision "limit" must be an integer, not a number (${2 ** 60})`],
    ["string[]", "tags", "a", 'decision "tags" must be a list of strings, not a string'],
    ["string[]", "tags", ["a", 1], 'decision "tags" must be a list of strings, not an array'],
  ])("a %s decision set to %j is the executor's failure, and all its changes are dropped", async (_kind, field, value, error) => {
    const sink = new MemoryEventSink();
    const after = scripted("after", ["test_point"], () => ({ limit: 7 }));
    const chain = new HookChain([scripted("bad", ["test_point"], () => ({ label: "kept?", [field]: value, subject: "changed" })), after], sink);
    const outcome = await chain.runPoint(TEST_POINT, testContext());
    expect(outcome.context).toEqual({ ...testContext(), limit: 7 });
    expect(outcome.changed).toEqual(["limit"]);
    expect(after.calls[0]?.context).toEqual(testContext());
    expect(hookEvents(sink)).toEqual([
      ["hooks.failed", { point: "test_point", hook: "bad", error, required: false }],
      ["hooks.decided", { point: "test_point", hook: "after", changed: ["limit"] }],
    ]);
  });

  it("accepts every kind at its type", async () => {
    const { chain } = chainOf(scripted("a", ["test_point"], () => ({ label: "x", enabled: false, limit: -4, tags: ["a", "b"] })));
    const outcome = await chain.runPoint(TEST_POINT, testContext());
    expect(outcome.context).toEqual({ subject: "s", count: 1, label: "x", enabled: false, limit: -4, tags: ["a", "b"] });
    expect(outcome.changed).toEqual(["label", "enabled", "limit", "tags"]);
  });

  it("keeps its own copy of a decision the hook could go on mutating", async () => {
    const tags = ["a"];
    const { chain } = chainOf(scripted("a", ["test_point"], () => ({ tags })));
    const outcome = await chain.runPoint(TEST_POINT, testContext());
    tags.push("late");
    expect(outcome.context["tags"]).toEqual(["a"]);
  });

  it.each([
    ["a string", "text"],
    ["an array", [1]],
    ["a number", 3],
    ["a boolean", false],
    ["a Map", new Map()],
  ])("an answer that is %s is the executor's failure", async (described, answer) => {
    const { chain, sink } = chainOf(scripted("a", ["session_spawn"], () => answer));
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome).toEqual({ context: spawnContext(), changed: [] });
    expect(hookEvents(sink)).toEqual([["hooks.failed", { point: "session_spawn", hook: "a", error: `answered ${described}, not a context`, required: false }]]);
  });
});

describe("HookChain: failures", () => {
  it("a raising executor is recorded; the chain goes on and the run resolves", async () => {
    const after = scripted("after", ["session_spawn"], () => ({ prompt: "after" }));
    const { chain, sink } = chainOf(
      scripted("raises", ["session_spawn"], () => {
        throw new TypeError("context.foo is undefined");
      }),
      scripted("rejects", ["session_spawn"], () => Promise.reject(new Error("remote down"))),
      after,
    );
    const outcome = await chain.run("session_spawn", spawnContext(), { workItem: WORK_ITEM.ref });
    expect(outcome.context.prompt).toBe("after");
    expect(outcome.refusal).toBeUndefined();
    expect(hookEvents(sink)).toEqual([
      ["hooks.failed", { point: "session_spawn", hook: "raises", error: "TypeError: context.foo is undefined", required: false, work_item: WORK_ITEM.ref }],
      ["hooks.failed", { point: "session_spawn", hook: "rejects", error: "remote down", required: false, work_item: WORK_ITEM.ref }],
      ["hooks.decided", { point: "session_spawn", hook: "after", changed: ["prompt"], work_item: WORK_ITEM.ref }],
    ]);
  });

  it("bounds the recorded error to 500 characters", async () => {
    const { chain, sink } = chainOf(
      scripted("a", ["session_spawn"], () => {
        throw new Error("x".repeat(2_000));
      }),
    );
    await chain.run("session_spawn", spawnContext());
    const error = hookEvents(sink)[0]?.[1]["error"];
    expect(typeof error === "string" && error.length).toBe(500);
  });

  it("a thrown non-Error is described", async () => {
    const { chain, sink } = chainOf(
      scripted("a", ["session_spawn"], () => {
        throw "just a string";
      }),
    );
    await chain.run("session_spawn", spawnContext());
    expect(hookEvents(sink)[0]?.[1]["error"]).toBe("threw a string: just a string");
  });

  it("a required hook failing at a point with proceed refuses, whatever later hooks decide", async () => {
    const later = scripted("later", ["work_item_start"], () => ({ proceed: true, reason: "fine by me" }));
    const { chain, sink } = chainOf(
      scripted("gate", ["work_item_start"], () => Promise.reject(new Error("compliance service unreachable")), { required: true }),
      later,
    );
    const outcome = await chain.run("work_item_start", startContext(), { workItem: WORK_ITEM.ref });
    const reason = 'required hook "gate" failed: compliance service unreachable';
    expect(later.calls[0]?.context).toMatchObject({ proceed: false, reason });
    expect(outcome.context).toEqual(startContext({ proceed: false, reason }));
    expect(outcome.changed).toEqual(["proceed", "reason"]);
    expect(outcome.refusal).toEqual({ hook: "gate", reason });
    expect(hookEvents(sink)).toEqual([
      ["hooks.failed", { point: "work_item_start", hook: "gate", error: "compliance service unreachable", required: true, work_item: WORK_ITEM.ref }],
      ["hooks.decided", { point: "work_item_start", hook: "later", changed: ["proceed", "reason"], work_item: WORK_ITEM.ref }],
    ]);
  });

  it("a required hook answering a wrong type refuses too", async () => {
    const { chain } = chainOf(scripted("gate", ["session_spawn"], () => ({ proceed: "yes" }), { required: true }));
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome.refusal).toEqual({ hook: "gate", reason: 'required hook "gate" failed: decision "proceed" must be a boolean, not a string' });
    expect(outcome.context.proceed).toBe(false);
  });

  it("the first required failure is the one the refusal names", async () => {
    const { chain } = chainOf(
      scripted("one", ["work_item_start"], () => Promise.reject(new Error("first")), { required: true }),
      scripted("two", ["work_item_start"], () => Promise.reject(new Error("second")), { required: true }),
    );
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal).toEqual({ hook: "one", reason: 'required hook "one" failed: first' });
  });

  it("a required hook failing at a point without proceed is only recorded", async () => {
    const { chain, sink } = chainOf(scripted("audit", ["session_spawned"], () => Promise.reject(new Error("down")), { required: true }));
    const given = { workItem: WORK_ITEM, harness: "claude", tmuxTarget: "t", cwd: "/c", harnessSessionId: "h", deliveryId: "d", announce: true };
    const outcome = await chain.run("session_spawned", given);
    expect(outcome).toEqual({ context: given, changed: [] });
    expect(hookEvents(sink)).toEqual([["hooks.failed", { point: "session_spawned", hook: "audit", error: "down", required: true }]]);
  });

  it("a hook that is not required failing at a proceed point lets the operation proceed", async () => {
    const { chain } = chainOf(scripted("telemetry", ["work_item_start"], () => Promise.reject(new Error("down"))));
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.context.proceed).toBe(true);
    expect(outcome.refusal).toBeUndefined();
  });
});

describe("HookChain: refusal", () => {
  it.each([
    {
      title: "the hook that set proceed false, with its reason",
      answers: [{ proceed: false, reason: "frozen" }, undefined],
      refusal: { hook: "h0", reason: "frozen" },
    },
    {
      title: "a later hook's reason alone keeps the refusal with the hook that refused",
      answers: [{ proceed: false }, { reason: "because" }],
      refusal: { hook: "h0", reason: "because" },
    },
    {
      title: "the last hook that set proceed false, a default reason when none is given",
      answers: [{ proceed: false }, { proceed: true }, { proceed: false }],
      refusal: { hook: "h2", reason: 'hook "h2" refused' },
    },
    {
      title: "no refusal when a later hook set proceed back to true",
      answers: [{ proceed: false, reason: "no" }, { proceed: true }],
      refusal: undefined,
    },
  ])("names $title", async ({ answers, refusal }) => {
    const { chain } = chainOf(...answers.map((answer, index) => scripted(`h${index}`, ["work_item_start"], () => answer)));
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal).toEqual(refusal);
    expect(outcome.context.proceed).toBe(refusal === undefined);
  });

  it("a proceed the call site gave as false is not a hook's refusal", async () => {
    const { chain } = chainOf(scripted("a", ["work_item_start"], () => ({ reason: "noted" })));
    const outcome = await chain.run("work_item_start", startContext({ proceed: false }));
    expect(outcome.refusal).toBeUndefined();
  });
});

describe("HookChain: fixed decisions", () => {
  it("ignores and records a change to a decision the call site fixed, applying the others", async () => {
    const { chain, sink } = chainOf(scripted("a", ["waiting_for_input"], () => ({ question: "reworded", summary: "" })));
    const outcome = await chain.run("waiting_for_input", waitingContext(), { fixed: ["question", "summary"], workItem: WORK_ITEM.ref });
    expect(outcome).toEqual({ context: waitingContext(), changed: [] });
    expect(hookEvents(sink)).toEqual([["hooks.ignored", { point: "waiting_for_input", hook: "a", fields: ["question"], work_item: WORK_ITEM.ref }]]);
  });

  it("a fixed decision of the wrong type is still the executor's failure", async () => {
    const { chain, sink } = chainOf(scripted("a", ["waiting_for_input"], () => ({ question: 42 })));
    await chain.run("waiting_for_input", waitingContext(), { fixed: ["question"] });
    expect(hookEvents(sink).map(([type]) => type)).toEqual(["hooks.failed"]);
  });
});

describe("HookChain: cost and robustness", () => {
  it("with no executor at the point returns the given context itself, copying and recording nothing", async () => {
    const other = scripted("other", ["work_item_start"], () => ({ prompt: "x" }));
    const { chain, sink } = chainOf(other);
    const given = spawnContext();
    const outcome = await chain.run("session_spawn", given);
    expect(outcome.context).toBe(given);
    expect(outcome.changed).toEqual([]);
    expect(other.calls).toEqual([]);
    expect(sink.events).toEqual([]);
    const empty = await HookChain.empty().run("session_spawn", given);
    expect(empty.context).toBe(given);
  });

  it("an uncloneable context is the executor's failure, not the caller's", async () => {
    const { chain, sink } = chainOf(scripted("a", ["test_point"], () => undefined));
    const outcome = await chain.runPoint(TEST_POINT, { ...testContext(), subject: () => "fn" });
    expect(outcome.changed).toEqual([]);
    expect(hookEvents(sink).map(([type, fields]) => [type, fields["hook"]])).toEqual([["hooks.failed", "a"]]);
  });

  it("never rejects, even when the chain itself breaks or the sink throws", async () => {
    const throwingSink: EventSink = {
      emit: () => {
        throw new Error("disk full");
      },
    };
    const broken: HookExecutor = {
      name: "broken",
      kind: "path",
      required: true,
      get points(): ReadonlySet<string> {
        throw new Error("a bug");
      },
      invoke: () => Promise.resolve(undefined),
    };
    const outcome = await new HookChain([broken], new MemoryEventSink()).run("work_item_start", startContext());
    expect(outcome).toEqual({ context: startContext(), changed: [] });

    const failing = new HookChain([scripted("a", ["work_item_start"], () => ({ proceed: false, actor: "x" }), { required: true })], throwingSink);
    const refused = await failing.run("work_item_start", startContext());
    expect(refused.refusal).toEqual({ hook: "a", reason: 'hook "a" refused' });
  });

  it("records a broken chain as a failure of the chain", async () => {
    const sink = new MemoryEventSink();
    const broken: HookExecutor = {
      name: "broken",
      kind: "path",
      required: false,
      get points(): ReadonlySet<string> {
        throw new Error("a bug");
      },
      invoke: () => Promise.resolve(undefined),
    };
    await new HookChain([broken], sink).run("work_item_start", startContext());
    expect(hookEvents(sink)).toEqual([["hooks.failed", { point: "work_item_start", hook: "(chain)", error: "a bug", required: false }]]);
  });

  it("runs a point of any family through runPoint", async () => {
    const { chain, sink } = chainOf(scripted("a", ["test_point"], () => ({ tags: ["x"] })));
    const outcome = await chain.runPoint(TEST_POINT, testContext());
    expect(outcome.changed).toEqual(["tags"]);
    expect(hookEvents(sink)).toEqual([["hooks.decided", { point: "test_point", hook: "a", changed: ["tags"] }]]);
    expect(point("session_spawn").name).toBe("session_spawn");
  });
});

/** A context for any point, from its catalog entry: each fact and decision at a plain value of its kind. */
function catalogContext(spec: HookPoint): Record<string, unknown> {
  const valueOf = (kind: string): unknown =>
    kind === "boolean" ? true : kind === "integer" ? 1 : kind === "string[]" ? ["a"] : kind === "work-item" ? WORK_ITEM : "given";
  return Object.fromEntries([...Object.entries(spec.facts), ...Object.entries(spec.decisions)].map(([name, field]) => [name, valueOf(field.kind)]));
}

describe("HookChain: every lifecycle point, the ones with no call site yet included", () => {
  it.each(LIFECYCLE_POINTS.map((spec): [string, HookPoint] => [spec.name, spec]))("%s: its decisions are read back, its facts never", async (_name, spec) => {
    const changed = (context: Record<string, unknown>): Record<string, unknown> => {
      const answer: Record<string, unknown> = { ...context, workItem: { ...WORK_ITEM, number: 99 } };
      for (const [name, field] of Object.entries(spec.decisions)) answer[name] = field.kind === "boolean" ? false : "changed";
      return answer;
    };
    const { chain, sink } = chainOf(scripted("flip", [spec.name], changed));
    const given = catalogContext(spec);
    const outcome = await chain.runPoint(spec, given);

    const decisions = Object.keys(spec.decisions);
    expect(outcome.changed).toEqual(decisions);
    expect(outcome.context.workItem).toEqual(WORK_ITEM);
    for (const name of decisions) expect(outcome.context[name]).toBe(spec.decisions[name]?.kind === "boolean" ? false : "changed");
    const events = hookEvents(sink).map(([type]) => type);
    expect(events).toEqual(decisions.length > 0 ? ["hooks.ignored", "hooks.decided"] : ["hooks.ignored"]);
  });
});
