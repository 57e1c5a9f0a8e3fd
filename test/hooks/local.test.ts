import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { HookChain } from "../../src/hooks/chain.js";
import { parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { LocalHookEntry } from "../../src/hooks/declaration.js";
import { loadHooks } from "../../src/hooks/load.js";
import { LocalHookError, loadLocalExecutor, resolvePackage } from "../../src/hooks/local.js";
import type { HookExecutor } from "../../src/hooks/types.js";
import { LIFECYCLE_POINTS, LIFECYCLE_POINT_NAMES, lifecyclePoint } from "../../src/sdk/hooks/catalog.js";
import type { HookPoint } from "../../src/sdk/hooks/catalog.js";
import { hookRoot, writeIn } from "./support/hook-dir.js";
import { spawnContext, startContext } from "./support/fixtures.js";

const SPAWN = lifecyclePoint("session_spawn") as HookPoint;

async function load(raw: Record<string, unknown>, configDir: string): Promise<HookExecutor> {
  const [entry] = parseHookDeclaration([{ name: "h", ...raw }], { configDir, points: LIFECYCLE_POINT_NAMES });
  return await loadLocalExecutor(entry as LocalHookEntry, { points: LIFECYCLE_POINTS, configDir });
}

async function loadError(raw: Record<string, unknown>, configDir: string): Promise<string> {
  const error: unknown = await load(raw, configDir).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(LocalHookError);
  return (error as Error).message;
}

const PREFIX_HOOK = `import { LifecycleHooks } from "the-loop/sdk/hooks";
export class Prefix extends LifecycleHooks {
  constructor(options) {
    super();
    this.prefix = options.prefix ?? "[none]";
  }
  sessionSpawn(context) {
    return { ...context, prompt: \`\${this.prefix} \${context.prompt}\` };
  }
}
`;

describe("local executors: importing and picking the class", () => {
  it("imports a .mjs file, constructs its class with `with`, and runs the points it overrides", async () => {
    const root = await hookRoot();
    await writeIn(root, "hooks/prefix.mjs", PREFIX_HOOK);
    const executor = await load({ path: "hooks/prefix.mjs", with: { prefix: "[acme]" } }, root);
    expect([executor.name, executor.kind, [...executor.points], executor.required]).toEqual(["h", "path", ["session_spawn"], false]);
    expect(await executor.invoke(SPAWN, spawnContext())).toEqual(spawnContext({ prompt: "[acme] Work on #15." }));
  });

  it("runs in a chain: the answer's decisions are applied", async () => {
    const root = await hookRoot();
    await writeIn(root, "prefix.mjs", PREFIX_HOOK);
    const chain = new HookChain([await load({ path: "prefix.mjs", with: { prefix: ">" } }, root)], new MemoryEventSink());
    const outcome = await chain.run("session_spawn", spawnContext());
    expect([outcome.context.prompt, outcome.changed]).toEqual(["> Work on #15.", ["prompt"]]);
  });

  it("imports a .ts file through tsx, and recognizes a subclass of the SDK copy it imported", async () => {
    const root = await hookRoot();
    await writeIn(
      root,
      "hooks/gate.ts",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";
import type { WorkItemStartContext } from "the-loop/sdk/hooks";

interface Options { readonly frozen?: readonly string[] }

export default class Freeze extends LifecycleHooks {
  private readonly frozen: readonly string[];
  constructor(options: Options) {
    super();
    this.frozen = options.frozen ?? [];
  }
  override workItemStart(context: WorkItemStartContext): WorkItemStartContext | undefined {
    if (!this.frozen.includes(context.workItem.repository)) return undefined;
    return { ...context, proceed: false, reason: "repository frozen" };
  }
}
`,
    );
    const executor = await load({ path: "hooks/gate.ts", with: { frozen: ["octo/repo"] } }, root);
    expect([...executor.points]).toEqual(["work_item_start"]);
    const outcome = await new HookChain([executor], new MemoryEventSink()).run("work_item_start", startContext());
    expect(outcome.refusal).toEqual({ hook: "h", reason: "repository frozen" });
  });

  it("imports a .js file of an ES module package", async () => {
    const root = await hookRoot();
    await writeIn(root, "package.json", JSON.stringify({ type: "module" }));
    await writeIn(root, "prefix.js", PREFIX_HOOK);
    const executor = await load({ path: "prefix.js" }, root);
    expect(await executor.invoke(SPAWN, spawnContext({ prompt: "p" }))).toMatchObject({ prompt: "[none] p" });
  });

  it("passes a copy of `with`: the constructor cannot change the declaration", async () => {
    const root = await hookRoot();
    await writeIn(
      root,
      "h.mjs",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";
export class H extends LifecycleHooks {
  constructor(options) { super(); options.list.push("mutated"); this.seen = options; }
  sessionSpawn() { return { prompt: JSON.stringify(this.seen) }; }
}
`,
    );
    const [entry] = parseHookDeclaration([{ name: "h", path: "h.mjs", with: { list: ["a"] } }], { configDir: root, points: LIFECYCLE_POINT_NAMES });
    const executor = await loadLocalExecutor(entry as LocalHookEntry, { points: LIFECYCLE_POINTS, configDir: root });
    expect(await executor.invoke(SPAWN, spawnContext())).toEqual({ prompt: '{"list":["a","mutated"]}' });
    expect((entry as LocalHookEntry).options).toEqual({ list: ["a"] });
  });

  it("counts a default export and a named export of the same class once", async () => {
    const root = await hookRoot();
    await writeIn(root, "h.mjs", `${PREFIX_HOOK}export default Prefix;\n`);
    expect([...(await load({ path: "h.mjs" }, root)).points]).toEqual(["session_spawn"]);
  });

  it("recognizes methods written as instance properties and inherited from an intermediate class", async () => {
    const root = await hookRoot();
    await writeIn(
      root,
      "h.mjs",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";
class Base extends LifecycleHooks { phaseChanged() { return { notify: false }; } }
export class H extends Base { workItemComplete = () => ({ announce: false }); }
`,
    );
    expect([...(await load({ path: "h.mjs" }, root)).points].sort()).toEqual(["phase_changed", "work_item_complete"]);
  });

  it("with executor, picks that export among several", async () => {
    const root = await hookRoot();
    await writeIn(
      root,
      "h.mjs",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";
export class A extends LifecycleHooks { sessionSpawn() { return { prompt: "A" }; } }
export class B extends LifecycleHooks { sessionSpawn() { return { prompt: "B" }; } }
`,
    );
    expect(await (await load({ path: "h.mjs", executor: "B" }, root)).invoke(SPAWN, spawnContext())).toEqual({ prompt: "B" });
  });
});

describe("local executors: load failures name what to fix (R3.5)", () => {
  it("a module raising on import", async () => {
    const root = await hookRoot();
    const file = await writeIn(root, "h.mjs", `throw new Error("missing ACME_HOME");\n`);
    expect(await loadError({ path: "h.mjs" }, root)).toBe(`importing ${file} failed: missing ACME_HOME`);
  });

  it("a module with a syntax error", async () => {
    const root = await hookRoot();
    await writeIn(root, "h.mjs", `export class {\n`);
    expect(await loadError({ path: "h.mjs" }, root)).toMatch(/^importing .*h\.mjs failed: /);
  });

  it("a file that does not exist", async () => {
    const root = await hookRoot();
    expect(await loadError({ path: "hooks/none.mjs" }, root)).toBe(
      `no file at ${join(root, "hooks/none.mjs")} (a relative path resolves against the config file's directory)`,
    );
  });

  it("a constructor raising", async () => {
    const root = await hookRoot();
    const file = await writeIn(
      root,
      "h.mjs",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";
export class Audit extends LifecycleHooks {
  constructor(options) { super(); if (!options.endpoint) throw new Error("with.endpoint is required"); }
  sessionSpawn() {}
}
`,
    );
    expect(await loadError({ path: "h.mjs" }, root)).toBe(`constructing Audit (${file}) failed: with.endpoint is required`);
  });

  it("a module with no LifecycleHooks subclass", async () => {
    const root = await hookRoot();
    const file = await writeIn(root, "h.mjs", `export class Hooks { sessionSpawn() {} }\nexport const x = 1;\n`);
    expect(await loadError({ path: "h.mjs" }, root)).toBe(
      `${file} defines no LifecycleHooks subclass; export a class extending LifecycleHooks from "the-loop/sdk/hooks"`,
    );
  });

  it("a module re-exporting only the base class defines no subclass", async () => {
    const root = await hookRoot();
    await writeIn(root, "h.mjs", `export { LifecycleHooks } from "the-loop/sdk/hooks";\n`);
    expect(await loadError({ path: "h.mjs" }, root)).toMatch(/defines no LifecycleHooks subclass/);
  });

  it("several subclasses and no executor", async () => {
    const root = await hookRoot();
    const file = await writeIn(
      root,
      "h.mjs",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";
export class A extends LifecycleHooks { sessionSpawn() {} }
export class B extends LifecycleHooks { sessionSpawn() {} }
export default B;
`,
    );
    expect(await loadError({ path: "h.mjs" }, root)).toBe(
      `${file} exports several LifecycleHooks subclasses (A, B (also default)); set executor to the one to use`,
    );
  });

  it("an executor naming an export that is not a subclass", async () => {
    const root = await hookRoot();
    const file = await writeIn(
      root,
      "h.mjs",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";
export class A extends LifecycleHooks { sessionSpawn() {} }
export class Helper {}
`,
    );
    expect(await loadError({ path: "h.mjs", executor: "Helper" }, root)).toBe(
      `executor "Helper" of ${file} is not a class extending LifecycleHooks (from "the-loop/sdk/hooks"); its subclasses are A`,
    );
    expect(await loadError({ path: "h.mjs", executor: "Missing" }, root)).toBe(
      `executor "Missing" is not exported by ${file}; its LifecycleHooks subclasses are A`,
    );
  });

  it("an on naming a point whose method the class does not write", async () => {
    const root = await hookRoot();
    await writeIn(root, "h.mjs", PREFIX_HOOK);
    expect(await loadError({ path: "h.mjs", on: ["session_spawn", "work_item_start"] }, root)).toBe(
      `on names "work_item_start", but Prefix does not override workItemStart(); write that method, or remove "work_item_start" from on`,
    );
  });

  it("an on naming overridden points narrows the points", async () => {
    const root = await hookRoot();
    await writeIn(
      root,
      "h.mjs",
      `import { LifecycleHooks } from "the-loop/sdk/hooks";
export class H extends LifecycleHooks { sessionSpawn() {} workItemStart() {} }
`,
    );
    expect([...(await load({ path: "h.mjs", on: ["work_item_start"] }, root)).points]).toEqual(["work_item_start"]);
  });

  it("a class overriding no point", async () => {
    const root = await hookRoot();
    await writeIn(root, "h.mjs", `import { LifecycleHooks } from "the-loop/sdk/hooks";\nexport class Idle extends LifecycleHooks {}\n`);
    expect(await loadError({ path: "h.mjs" }, root)).toMatch(/^Idle overrides none of the hook methods \(workItemStart\(\), .*\), so it would never run/);
  });
});

describe("local executors: where the code comes from (abuse case 1)", () => {
  it("a relative path resolves against the config file's directory: the checkout's file of the same path is never imported", async () => {
    const root = await hookRoot();
    const configDir = join(root, "etc");
    const checkout = join(root, "checkout");
    await writeIn(configDir, "hooks/h.mjs", PREFIX_HOOK.replace('"[none]"', '"[operator]"'));
    await writeIn(checkout, "hooks/h.mjs", `globalThis.__theLoopCheckoutImported = true;\n${PREFIX_HOOK.replace('"[none]"', '"[checkout]"')}`);
    const previous = process.cwd();
    process.chdir(checkout);
    try {
      const chain = await loadHooks({ raw: [{ name: "h", path: "hooks/h.mjs" }], configDir, events: new MemoryEventSink() });
      const outcome = await chain.run("session_spawn", spawnContext({ prompt: "p" }));
      expect(outcome.context.prompt).toBe("[operator] p");
    } finally {
      process.chdir(previous);
    }
    expect((globalThis as { __theLoopCheckoutImported?: boolean }).__theLoopCheckoutImported).toBeUndefined();
  });

  it("a module entry resolves from the config file's directory upward, never from the cwd", async () => {
    const root = await hookRoot();
    const configDir = join(root, "etc", "the-loop");
    const checkout = join(root, "checkout");
    await writeIn(
      root,
      "node_modules/@acme/hooks/package.json",
      JSON.stringify({
        name: "@acme/hooks",
        type: "module",
        exports: { ".": { types: "./index.d.ts", import: "./dist/index.mjs", require: "./dist/index.cjs" }, "./lifecycle/*": "./dist/lifecycle/*.mjs" },
      }),
    );
    await writeIn(root, "node_modules/@acme/hooks/dist/index.mjs", PREFIX_HOOK.replace('"[none]"', '"[acme]"'));
    await writeIn(root, "node_modules/@acme/hooks/dist/lifecycle/strict.mjs", PREFIX_HOOK.replace('"[none]"', '"[strict]"'));
    await writeIn(checkout, "node_modules/@acme/hooks/package.json", JSON.stringify({ name: "@acme/hooks", main: "evil.mjs" }));
    await writeIn(checkout, "node_modules/@acme/hooks/evil.mjs", `globalThis.__theLoopCheckoutModule = true;\n${PREFIX_HOOK}`);
    const previous = process.cwd();
    process.chdir(checkout);
    try {
      const main = await load({ module: "@acme/hooks" }, configDir);
      expect(await main.invoke(SPAWN, spawnContext({ prompt: "p" }))).toMatchObject({ prompt: "[acme] p" });
      const sub = await load({ module: "@acme/hooks/lifecycle/strict" }, configDir);
      expect(await sub.invoke(SPAWN, spawnContext({ prompt: "p" }))).toMatchObject({ prompt: "[strict] p" });
    } finally {
      process.chdir(previous);
    }
    expect((globalThis as { __theLoopCheckoutModule?: boolean }).__theLoopCheckoutModule).toBeUndefined();
  });

  it("resolves package.json exports and main as Node would for an import", async () => {
    const root = await hookRoot();
    const pkg = (name: string, manifest: unknown) => writeIn(root, `node_modules/${name}/package.json`, JSON.stringify(manifest));
    await pkg("plain-string", { exports: "./lib/main.mjs" });
    await writeIn(root, "node_modules/plain-string/lib/main.mjs", "");
    await pkg("nested", { exports: { ".": [{ node: { import: "./n.mjs" } }, "./fallback.mjs"], "./x": { require: "./x.cjs", default: "./x.mjs" } } });
    await writeIn(root, "node_modules/nested/n.mjs", "");
    await writeIn(root, "node_modules/nested/x.mjs", "");
    await pkg("with-main", { main: "lib/entry" });
    await writeIn(root, "node_modules/with-main/lib/entry.js", "");
    await pkg("bare", {});
    await writeIn(root, "node_modules/bare/index.js", "");
    await writeIn(root, "node_modules/bare/sub/file.mjs", "");
    await pkg("closed", { exports: { ".": "./i.mjs" } });
    await writeIn(root, "node_modules/closed/i.mjs", "");
    await writeIn(root, "node_modules/closed/secret.mjs", "");
    await pkg("escapes", { exports: "./../outside.mjs" });
    await pkg("require-only", { exports: { require: "./r.cjs" } });

    const from = join(root, "a", "b");
    expect(resolvePackage("plain-string", from)).toBe(join(root, "node_modules/plain-string/lib/main.mjs"));
    expect(resolvePackage("nested", from)).toBe(join(root, "node_modules/nested/n.mjs"));
    expect(resolvePackage("nested/x", from)).toBe(join(root, "node_modules/nested/x.mjs"));
    expect(resolvePackage("with-main", from)).toBe(join(root, "node_modules/with-main/lib/entry.js"));
    expect(resolvePackage("bare", from)).toBe(join(root, "node_modules/bare/index.js"));
    expect(resolvePackage("bare/sub/file.mjs", from)).toBe(join(root, "node_modules/bare/sub/file.mjs"));
    expect(() => resolvePackage("closed/secret.mjs", from)).toThrow(/"exports" offer no import of "\.\/secret\.mjs"/);
    expect(() => resolvePackage("escapes", from)).toThrow(LocalHookError);
    expect(() => resolvePackage("require-only", from)).toThrow(/offer no import of "\."/);
    expect(() => resolvePackage("absent-package", from)).toThrow(
      `cannot find package "absent-package" in a node_modules directory at or above ${from} (the config file's directory); install it there`,
    );
  });
});

describe("local executors: TypeScript as an ES module", () => {
  it('imports a .ts file of a `"type": "module"` package', async () => {
    const root = await hookRoot();
    await writeIn(root, "package.json", JSON.stringify({ type: "module" }));
    await writeIn(
      root,
      "hooks/quiet.ts",
      `import { LifecycleHooks, type PhaseChangedContext } from "the-loop/sdk/hooks";
export class Quiet extends LifecycleHooks {
  override phaseChanged(context: PhaseChangedContext): PhaseChangedContext {
    return { ...context, notify: context.terminal };
  }
}
`,
    );
    const executor = await load({ path: "hooks/quiet.ts" }, root);
    expect([...executor.points]).toEqual(["phase_changed"]);
    expect(await executor.invoke(lifecyclePoint("phase_changed") as HookPoint, { terminal: false, notify: true })).toEqual({ terminal: false, notify: false });
  });
});
