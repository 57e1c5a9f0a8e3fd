import { afterEach, describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { HookDeclarationError, loadHooks, parseHookDeclaration } from "../../src/hooks/index.js";
import { pointsWithoutOn } from "../../src/hooks/declaration.js";
import { LIFECYCLE_POINT_NAMES } from "../../src/sdk/hooks/catalog.js";
import { LOOP_POINT_NAMES } from "../../src/sdk/hooks/loop-catalog.js";
import { HOOK_POINTS, HOOK_POINT_NAMES } from "../../src/sdk/hooks/points.js";
import { hookRoot, writeIn } from "./support/hook-dir.js";
import { ScriptedServer } from "./support/rpc-server.js";
import { generationPre, started } from "./support/loop-fixtures.js";

const context = { configDir: "/etc/the-loop", points: HOOK_POINT_NAMES };
const LOOP_EVENTS = LOOP_POINT_NAMES.join(", ");

function declarationError(raw: unknown): string {
  try {
    parseHookDeclaration(raw, context);
  } catch (error) {
    expect(error).toBeInstanceOf(HookDeclarationError);
    return (error as Error).message;
  }
  throw new Error("the declaration loaded");
}

const servers: ScriptedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe("declaring loop.* events", () => {
  it("accepts each loop event by its exact name, alone or with lifecycle points", () => {
    const entries = parseHookDeclaration(
      [
        { name: "all-loop", url: "https://hooks.example.com/", on: [...LOOP_POINT_NAMES] },
        { name: "mixed", url: "https://hooks.example.com/", on: ["work_item_start", "loop.gate.pre"], required: true },
      ],
      context,
    );
    expect(entries.map((entry) => entry.on)).toEqual([[...LOOP_POINT_NAMES], ["work_item_start", "loop.gate.pre"]]);
  });

  it.each(["loop.*", "loop.gate.*", "loop.gate.pr?"])("refuses the pattern %s, naming the valid loop events", (pattern) => {
    expect(declarationError([{ name: "a", url: "https://hooks.example.com/", on: [pattern] }])).toBe(
      `hooks[0] "a": on names "${pattern}", a pattern; on takes exact names, no wildcards, so list each one: the loop events are ${LOOP_EVENTS}`,
    );
  });

  it("refuses a pattern outside the family, naming every point", () => {
    expect(declarationError([{ name: "a", url: "https://hooks.example.com/", on: ["*"] }])).toBe(
      `hooks[0] "a": on names "*", a pattern; on takes exact names, no wildcards, so list each one: the points are ${HOOK_POINT_NAMES.join(", ")}`,
    );
  });

  it("refuses a misspelt loop event like any unknown point", () => {
    expect(declarationError([{ name: "a", url: "https://hooks.example.com/", on: ["loop.start"] }])).toMatch(
      /^hooks\[0\] "a": on names "loop\.start", which is not a hook point; the points are work_item_start, .*loop\.started, /,
    );
  });

  it.each([[["loop.generation.pre"]], [["loop.gate.pre", "loop.terminal"]]])("refuses required: true on an entry that runs only at %j", (on) => {
    expect(declarationError([{ name: "gate", url: "https://hooks.example.com/", on, required: true }])).toBe(
      `hooks[0] "gate": required: true on an entry that runs only at loop events (${on.join(", ")}); the loop family is fail-open, so a failing hook never denies there; remove required (a hook denies by answering denied: true)`,
    );
  });

  it("keeps required: false, or required with a lifecycle point, on a loop entry", () => {
    expect(() => parseHookDeclaration([{ name: "a", url: "https://hooks.example.com/", on: ["loop.gate.pre"], required: false }], context)).not.toThrow();
  });

  it("an entry without on runs at the lifecycle points only", () => {
    expect(pointsWithoutOn(HOOK_POINTS).map((point) => point.name)).toEqual([...LIFECYCLE_POINT_NAMES]);
  });
});

describe("loading loop.* entries", () => {
  it("a remote entry without on is not called at loop events; one naming them is", async () => {
    const server = await ScriptedServer.start();
    servers.push(server);
    server.result({ labels: { seen: "yes" } });
    const url = server.url;
    const chain = await loadHooks({
      raw: [
        { name: "everything", url },
        { name: "loop-only", url, on: ["loop.started"] },
      ],
      configDir: "/etc/the-loop",
      events: new MemoryEventSink(),
    });
    try {
      expect(chain.handles("work_item_start")).toBe(true);
      const outcome = await chain.runLoop("loop.started", started());
      expect(outcome.annotations).toEqual([{ hook: "loop-only", labels: { seen: "yes" } }]);
      expect(server.requests.map((request) => request.json?.method)).toEqual(["loop.started"]);
    } finally {
      await chain.close();
    }
  });

  it("a LoopHooks class runs at the loop events its on names, and a LifecycleHooks class without on never at one", async () => {
    const root = await hookRoot();
    const loopFile = await writeIn(
      root,
      "hooks/policy.mjs",
      `import { LoopHooks } from "the-loop/sdk/hooks";
export class Policy extends LoopHooks {
  loopGenerationPre(payload) { return { deny: true, deny_reason: "budget spent at generation " + payload.generation }; }
  workItemStart() { return undefined; }
}
`,
    );
    const chain = await loadHooks({
      raw: [
        { name: "policy", path: loopFile, on: ["loop.generation.pre"] },
        { name: "default-points", path: loopFile },
      ],
      configDir: root,
      events: new MemoryEventSink(),
    });
    try {
      expect(await chain.runLoop("loop.generation.pre", generationPre())).toEqual({
        denied: { hook: "policy", reason: "budget spent at generation 1" },
        annotations: [],
      });
      // Without on, the same class runs at the lifecycle point it overrides, never at the loop event.
      expect(chain.handles("work_item_start")).toBe(true);
      const again = await loadHooks({ raw: [{ name: "default-points", path: loopFile }], configDir: root, events: new MemoryEventSink() });
      expect(again.handles("loop.generation.pre")).toBe(false);
      expect(again.handles("work_item_start")).toBe(true);
    } finally {
      await chain.close();
    }
  });

  it("refuses an on naming a loop event the class does not override", async () => {
    const root = await hookRoot();
    const file = await writeIn(
      root,
      "hooks/lifecycle.mjs",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";
export class Only extends LifecycleHooks { workItemStart() { return undefined; } }
`,
    );
    await expect(loadHooks({ raw: [{ name: "only", path: file, on: ["loop.terminal"] }], configDir: root, events: new MemoryEventSink() })).rejects.toThrow(
      /on names "loop\.terminal", but Only does not override loopTerminal\(\)/,
    );
  });
});
