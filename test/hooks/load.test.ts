import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT_USAGE, ExitError } from "../../src/errors.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { HookChain, HookDeclarationError, HookLoadError, loadHooks, loadHooksOrNone, parseHookDeclaration } from "../../src/hooks/index.js";
import { hookEvents, spawnContext, TEST_POINT, testContext } from "./support/fixtures.js";
import { hookRoot, writeIn } from "./support/hook-dir.js";
import { ScriptedServer } from "./support/rpc-server.js";

const servers: ScriptedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const PREFIX = (prefix: string, marker = "") => `${marker}import { LifecycleHooks } from "the-loop/sdk/hooks";
export class Prefix extends LifecycleHooks {
  sessionSpawn(context) { return { ...context, prompt: "${prefix}" + context.prompt }; }
}
`;

async function loadFailure(promise: Promise<unknown>): Promise<HookLoadError> {
  const error: unknown = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(HookLoadError);
  return error as HookLoadError;
}

describe("loadHooks", () => {
  it.each([undefined, null, []])("with %j declared, returns an empty chain and records nothing", async (raw) => {
    const events = new MemoryEventSink();
    const chain = await loadHooks({ raw, configDir: "/etc/the-loop", events });
    expect(chain.size).toBe(0);
    expect(events.events).toEqual([]);
  });

  it("builds every enabled entry in order and records hooks.loaded", async () => {
    const root = await hookRoot();
    await writeIn(root, "hooks/a.mjs", PREFIX("a:"));
    await writeIn(root, "hooks/b.mjs", PREFIX("b:"));
    const server = await ScriptedServer.start();
    servers.push(server);
    const events = new MemoryEventSink();
    const chain = await loadHooks({
      raw: [
        { name: "first", path: "hooks/a.mjs" },
        { name: "audit", url: server.url, on: ["session_spawn"] },
        { name: "second", path: "~/b.mjs" },
      ],
      configDir: root,
      configPath: join(root, "cli-config.yaml"),
      homeDir: join(root, "hooks"),
      events,
    });
    expect(chain.names).toEqual(["first", "audit", "second"]);
    expect(hookEvents(events)).toEqual([["hooks.loaded", { hooks: ["first", "audit", "second"], config: join(root, "cli-config.yaml") }]]);
    const outcome = await chain.run("session_spawn", spawnContext({ prompt: "p" }));
    expect(outcome.context.prompt).toBe("b:a:p");
    expect(server.requests.map((request) => request.json?.params?.["prompt"])).toEqual(["a:p"]);
  });

  it("never imports or contacts a disabled entry, and records the enabled ones", async () => {
    const root = await hookRoot();
    await writeIn(root, "broken.mjs", `globalThis.__theLoopDisabledImported = true;\nthrow new Error("never imported");\n`);
    await writeIn(root, "a.mjs", PREFIX("a:"));
    const server = await ScriptedServer.start();
    servers.push(server);
    const events = new MemoryEventSink();
    const chain = await loadHooks({
      raw: [
        { name: "off", path: "broken.mjs", enabled: false },
        { name: "remote-off", url: server.url, enabled: false },
        { name: "on", path: "a.mjs" },
      ],
      configDir: root,
      events,
    });
    expect(chain.names).toEqual(["on"]);
    expect(hookEvents(events)).toEqual([["hooks.loaded", { hooks: ["on"] }]]);
    await chain.run("session_spawn", spawnContext());
    expect(server.requests).toHaveLength(0);
    expect((globalThis as { __theLoopDisabledImported?: boolean }).__theLoopDisabledImported).toBeUndefined();
  });

  it("a declaration whose entries are all disabled still records the load", async () => {
    const events = new MemoryEventSink();
    const chain = await loadHooks({ raw: [{ name: "off", path: "none.mjs", enabled: false }], configDir: "/nowhere", events });
    expect(chain.size).toBe(0);
    expect(hookEvents(events)).toEqual([["hooks.loaded", { hooks: [] }]]);
  });

  it("a malformed declaration fails whole: hooks.load_failed, a HookLoadError, no chain", async () => {
    const events = new MemoryEventSink();
    const error = await loadFailure(
      loadHooks({
        raw: [{ name: "a", url: "https://x.example", on: ["session.spawned"] }],
        configDir: "/etc/the-loop",
        configPath: "/etc/the-loop/cli-config.yaml",
        events,
      }),
    );
    expect(error.message).toMatch(/^hooks\[0\] "a": on names "session\.spawned", which is not a hook point; the points are work_item_start, /);
    expect(error.hook).toBeUndefined();
    expect(error).toBeInstanceOf(ExitError);
    expect(error.exitCode).toBe(EXIT_USAGE);
    expect(hookEvents(events)).toEqual([["hooks.load_failed", { error: error.message, config: "/etc/the-loop/cli-config.yaml" }]]);
  });

  it("one entry that does not load fails the whole declaration: no half-loaded chain (abuse case 6)", async () => {
    const root = await hookRoot();
    await writeIn(root, "good.mjs", PREFIX("good:"));
    const bad = await writeIn(root, "bad.mjs", `throw new Error("boom at import");\n`);
    await writeIn(root, "later.mjs", `globalThis.__theLoopLaterImported = true;\n${PREFIX("later:")}`);
    const events = new MemoryEventSink();
    const raw = [
      { name: "good", path: "good.mjs" },
      { name: "bad", path: "bad.mjs" },
      { name: "later", path: "later.mjs" },
    ];
    const error = await loadFailure(loadHooks({ raw, configDir: root, events }));
    expect(error.message).toBe(`hooks[1] "bad": importing ${bad} failed: boom at import`);
    expect(error.hook).toBe("bad");
    expect(hookEvents(events)).toEqual([["hooks.load_failed", { error: error.message, hook: "bad" }]]);
    expect((globalThis as { __theLoopLaterImported?: boolean }).__theLoopLaterImported).toBeUndefined();
  });

  it("a constructor that raises fails the load naming the entry", async () => {
    const root = await hookRoot();
    await writeIn(
      root,
      "h.mjs",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";\nexport class H extends LifecycleHooks { constructor() { super(); throw new Error("no endpoint"); } sessionSpawn() {} }\n`,
    );
    const error = await loadFailure(loadHooks({ raw: [{ name: "audit", path: "h.mjs" }], configDir: root, events: new MemoryEventSink() }));
    expect(error.message).toMatch(/^hooks\[0\] "audit": constructing H \(.*h\.mjs\) failed: no endpoint$/);
  });

  it("loads the points it is given: another family is added by adding points", async () => {
    const server = await ScriptedServer.start();
    servers.push(server);
    server.result({ tags: ["from-remote"] });
    const events = new MemoryEventSink();
    const chain = await loadHooks({ raw: [{ name: "r", url: server.url, tokenEnv: "T" }], configDir: "/", events, points: [TEST_POINT], env: { T: "tok" } });
    expect(chain.handles("test_point")).toBe(true);
    expect(chain.handles("session_spawn")).toBe(false);
    const outcome = await chain.runPoint(TEST_POINT, testContext());
    expect(outcome.changed).toEqual(["tags"]);
    expect(server.requests[0]?.headers.authorization).toBe("Bearer tok");
    await expect(loadHooks({ raw: [{ name: "r", url: server.url, on: ["session_spawn"] }], configDir: "/", events, points: [TEST_POINT] })).rejects.toThrow(
      /the points are test_point$/,
    );
  });
});

describe("loadHooksOrNone", () => {
  it("returns the chain when the declaration loads", async () => {
    const root = await hookRoot();
    await writeIn(root, "a.mjs", PREFIX("a:"));
    const result = await loadHooksOrNone({ raw: [{ name: "a", path: "a.mjs" }], configDir: root, events: new MemoryEventSink() });
    expect(result.chain.names).toEqual(["a"]);
    expect(result).not.toHaveProperty("error");
  });

  it("on a failure, returns no hooks and the error, already recorded", async () => {
    const root = await hookRoot();
    await writeIn(root, "good.mjs", PREFIX("good:"));
    const events = new MemoryEventSink();
    const result = await loadHooksOrNone({
      raw: [
        { name: "good", path: "good.mjs" },
        { name: "missing", module: "acme-missing-hooks" },
      ],
      configDir: root,
      events,
    });
    expect(result.chain).toBeInstanceOf(HookChain);
    expect(result.chain.size).toBe(0);
    expect(result.error).toMatch(/^hooks\[1\] "missing": cannot find package "acme-missing-hooks"/);
    expect(hookEvents(events)).toEqual([["hooks.load_failed", { error: result.error, hook: "missing" }]]);
    const outcome = await result.chain.run("session_spawn", spawnContext());
    expect(outcome.context).toEqual(spawnContext());
  });
});

describe("the module's surface", () => {
  it("re-exports the declaration parser and its error", () => {
    expect(() => parseHookDeclaration("x", { configDir: "/", points: [] })).toThrow(HookDeclarationError);
  });
});
