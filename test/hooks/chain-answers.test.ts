import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { HookChain } from "../../src/hooks/chain.js";
import type { HookExecutor } from "../../src/hooks/types.js";
import type { SessionSpawnedContext } from "../../src/sdk/hooks/catalog.js";
import { TEST_POINT, WORK_ITEM, hookEvents, scripted, spawnContext, startContext, testContext } from "./support/fixtures.js";

/** Review findings on the chain: one executor's answer, however odd, is that executor's business only (R6.1, R2.4). */

function chainOf(...executors: HookExecutor[]): { chain: HookChain; sink: MemoryEventSink } {
  const sink = new MemoryEventSink();
  return { chain: new HookChain(executors, sink), sink };
}

function spawnedContext(): SessionSpawnedContext {
  return { workItem: WORK_ITEM, harness: "claude", tmuxTarget: "t", cwd: "/c", harnessSessionId: "h", deliveryId: "d", announce: true };
}

const trap = (): never => {
  throw new Error("trapped");
};

/** A thrown value whose every reflective operation throws: what a Proxy in a hook's hands can be. */
function hostile(): object {
  return new Proxy({}, { getPrototypeOf: trap, ownKeys: trap, get: trap, getOwnPropertyDescriptor: trap, has: trap });
}

/** An answer that resolves like any object (it has no `then`) but whose prototype cannot be read. */
function opaque(): object {
  return new Proxy({}, { getPrototypeOf: trap });
}

describe("HookChain: a hostile answer or throw stays the executor's failure", () => {
  it.each([
    ["answers a Proxy whose prototype cannot be read", () => opaque()],
    [
      "throws a Proxy",
      () => {
        throw hostile();
      },
    ],
    [
      "throws an Error whose message getter throws",
      () => {
        const error = new Error("x");
        Object.defineProperty(error, "message", {
          get(): never {
            throw new Error("no message for you");
          },
        });
        throw error;
      },
    ],
    [
      "throws an Error named by a Symbol",
      () => {
        const error = new Error("x");
        Object.defineProperty(error, "name", { value: Symbol("odd") });
        throw error;
      },
    ],
  ])("an executor that %s fails alone: earlier decisions stay, later executors run, no other hook is blamed", async (_title, answer) => {
    const first = scripted("first", ["session_spawn"], () => ({ prompt: "from first" }));
    const odd = scripted("odd", ["session_spawn"], answer);
    const after = scripted("after", ["session_spawn"], (context) => ({ prompt: `${String(context["prompt"])} +after` }));
    const gate = scripted("gate", ["session_spawn"], () => undefined, { required: true });
    const { chain, sink } = chainOf(first, odd, after, gate);
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome.context.prompt).toBe("from first +after");
    expect(outcome.context.proceed).toBe(true);
    expect(outcome.refusal).toBeUndefined();
    expect(after.calls).toHaveLength(1);
    expect(gate.calls).toHaveLength(1);
    const failed = hookEvents(sink).filter(([type]) => type === "hooks.failed");
    expect(failed.map(([, fields]) => fields["hook"])).toEqual(["odd"]);
  });

  it("a required executor answering a hostile Proxy is the one the refusal names, not another required one", async () => {
    const { chain } = chainOf(
      scripted("audit", ["session_spawn"], () => undefined, { required: true }),
      scripted("gate", ["session_spawn"], () => opaque(), { required: true }),
    );
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome.refusal?.hook).toBe("gate");
    expect(outcome.context.proceed).toBe(false);
  });
});

describe("HookChain: a decision is read once, so the type checked is the value applied (R2.4)", () => {
  it("a getter that answers a boolean when checked and a string after is not applied as the string", async () => {
    let reads = 0;
    const answer = {
      get announce(): unknown {
        reads += 1;
        return reads <= 2 ? false : "no";
      },
    };
    const { chain } = chainOf(scripted("flip", ["session_spawned"], () => answer));
    const outcome = await chain.run("session_spawned", spawnedContext());
    expect(typeof outcome.context.announce).toBe("boolean");
    expect(outcome.context.announce).toBe(false);
    expect(reads).toBe(1);
  });

  it("a list decision with a hole is not a list of strings", async () => {
    // eslint-disable-next-line no-sparse-arrays
    const { chain, sink } = chainOf(scripted("sparse", ["test_point"], () => ({ tags: [, "a"] })));
    const outcome = await chain.runPoint(TEST_POINT, testContext());
    expect(outcome.context["tags"]).toEqual([]);
    expect(hookEvents(sink).map(([type]) => type)).toEqual(["hooks.failed"]);
  });

  it("an answer carrying __proto__ and constructor keys pollutes nothing and changes only its decisions", async () => {
    const { chain, sink } = chainOf(
      scripted("p", ["session_spawn"], () => JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}, "prompt": "x"}')),
    );
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
    expect(Object.getPrototypeOf(outcome.context)).toBe(Object.prototype);
    expect(outcome.context.prompt).toBe("x");
    expect(hookEvents(sink)[0]).toEqual(["hooks.ignored", { point: "session_spawn", hook: "p", fields: ["__proto__", "constructor"] }]);
  });
});

describe("HookChain: a refusal names the hook whose reason it gives (R2.6)", () => {
  it("a later hook refusing in its own words is the one named, not the earlier refuser", async () => {
    const { chain } = chainOf(
      scripted("office-hours", ["work_item_start"], (context) => ({ ...context, proceed: false, reason: "outside office hours" })),
      scripted("freeze", ["work_item_start"], (context) => ({ ...context, proceed: false, reason: "octo/repo is frozen" })),
    );
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal).toEqual({ hook: "freeze", reason: "octo/repo is frozen" });
  });

  it("a later hook echoing the refused context changes nothing and names no one else", async () => {
    const { chain } = chainOf(
      scripted("office-hours", ["work_item_start"], (context) => ({ ...context, proceed: false, reason: "outside office hours" })),
      scripted("echo", ["work_item_start"], (context) => ({ ...context })),
    );
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal).toEqual({ hook: "office-hours", reason: "outside office hours" });
  });

  it("a later hook changing another decision while echoing proceed: false is not the refuser", async () => {
    const { chain } = chainOf(
      scripted("office-hours", ["session_spawn"], (context) => ({ ...context, proceed: false, reason: "outside office hours" })),
      scripted("prefix", ["session_spawn"], (context) => ({ ...context, prompt: `[acme] ${String(context["prompt"])}` })),
    );
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome.refusal).toEqual({ hook: "office-hours", reason: "outside office hours" });
  });
});
