import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { LocalHookEntry } from "../../src/hooks/declaration.js";
import { loadLocalExecutor } from "../../src/hooks/local.js";
import { checkHooksLoad } from "../../src/hooks/probe.js";
import { HOOK_POINTS, HOOK_POINT_NAMES, hookPoint } from "../../src/sdk/hooks/points.js";
import type { HookPoint } from "../../src/sdk/hooks/catalog.js";
import { spawnContext, startContext } from "../hooks/support/fixtures.js";
import { writeIn } from "../hooks/support/hook-dir.js";
import { REPO_ROOT, jsonOf, runCli } from "../support/cli.js";
import { testProject } from "../support/project.js";
import { tempDir } from "../support/temp.js";

/**
 * docs/hooks.md's hook examples, copied from the doc as it stands — a change to the doc that
 * breaks one fails here — into an operator's project that has no `node_modules` at all: the-loop
 * run from its clone (`npm ci`, no `npm link`, no global install), as the issue found it.
 */

const DOC = join(REPO_ROOT, "docs", "hooks.md");

interface Block {
  readonly lang: string;
  readonly text: string;
}

async function blocks(): Promise<Block[]> {
  const doc = await readFile(DOC, "utf8");
  return [...doc.matchAll(/^```([a-z]*)\n([\s\S]*?)^```$/gm)].map((match) => ({ lang: match[1] ?? "", text: match[2] ?? "" }));
}

/** A project with nothing installed: its config folder, and no node_modules at or above it. */
async function bareProject(): Promise<{ cwd: string; configDir: string }> {
  const cwd = await tempDir();
  for (let dir = cwd; dirname(dir) !== dir; dir = dirname(dir)) expect(existsSync(join(dir, "node_modules")), dir).toBe(false);
  return { cwd, configDir: join(cwd, ".the-loop") };
}

function point(name: string): HookPoint {
  const found = hookPoint(name);
  if (found === undefined) throw new Error(`no point ${name}`);
  return found;
}

async function executorFor(configDir: string, raw: Record<string, unknown>) {
  const [entry] = parseHookDeclaration([raw], { configDir, points: HOOK_POINT_NAMES });
  return await loadLocalExecutor(entry as LocalHookEntry, { points: HOOK_POINTS, configDir });
}

describe("docs/hooks.md, its examples as written", () => {
  it("the first example, with the declaration beside it, validates, lists and runs", async () => {
    const all = await blocks();
    const first = all.findIndex((block) => block.lang === "ts");
    const code = all[first];
    const declaration = all[first + 1];
    expect(code?.text, "the first TypeScript example").toContain('from "the-loop/sdk/hooks"');
    expect(declaration?.lang, "the declaration right after it").toBe("yaml");
    const yaml = declaration?.text ?? "";
    const { parse } = await import("yaml");
    const [entry] = (parse(yaml) as { hooks: Record<string, unknown>[] }).hooks;
    const path = String(entry?.["path"]);

    const { cwd, configDir } = await bareProject();
    await writeIn(configDir, "cli-config.yaml", yaml);
    await writeIn(configDir, path, code?.text ?? "");

    const validated = await runCli(["config", "validate"], { cwd });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain("config OK");
    const listed = await runCli(["hooks", "--json"], { cwd });
    expect(listed.code, listed.stderr).toBe(0);
    expect(jsonOf<{ name: string }[]>(listed).map((listing) => listing.name)).toEqual([entry?.["name"]]);

    const executor = await executorFor(configDir, entry ?? {});
    const on = entry?.["on"] as string[];
    expect([...executor.points]).toEqual(on);
    const [name] = on;
    expect(name).toBe("loop.generation.pre");
    expect(await executor.invoke(point(name ?? ""), { generation: 4 } as never)).toEqual({ denied: true, deny_reason: "three generations is the budget" });
    expect(await executor.invoke(point(name ?? ""), { generation: 2 } as never)).toBeUndefined();
  });

  it("the first example starts a real daemon, which loads it with nothing linked or installed", async () => {
    const all = await blocks();
    const first = all.findIndex((block) => block.lang === "ts");
    const { parse } = await import("yaml");
    const hooks = (parse(all[first + 1]?.text ?? "") as { hooks: Record<string, unknown>[] }).hooks;
    const project = await testProject({ hooks });
    await writeIn(project.root, String(hooks[0]?.["path"]), all[first]?.text ?? "");
    for (let dir = project.dir; dirname(dir) !== dir; dir = dirname(dir)) expect(existsSync(join(dir, "node_modules")), dir).toBe(false);

    const started = await project.cli(["start"]);
    expect(started.code, started.stderr).toBe(0);
    const loaded = await project.waitForEvent("hooks.loaded", (record) => record.event === "hooks.loaded");
    expect(loaded).toMatchObject({ hooks: hooks.map((hook) => hook["name"]) });
    expect((await project.events()).filter((record) => record.event === "hooks.load_failed")).toEqual([]);
    expect((await project.cli(["stop"])).code).toBe(0);
  });

  it("the first local hook of 'Writing a local hook' validates and runs at both its points", async () => {
    const all = await blocks();
    const code = all.find((block) => block.lang === "ts" && /^\/\/ hooks\/[a-z-]+\.ts\n/.test(block.text));
    expect(code, "a TypeScript block that names its file").toBeDefined();
    const path = /^\/\/ (hooks\/[a-z-]+\.ts)\n/.exec(code?.text ?? "")?.[1] ?? "";
    const { cwd, configDir } = await bareProject();
    await writeIn(configDir, path, code?.text ?? "");
    const raw = { name: "prompt-prefix", path, with: { prefix: "Follow CONTRIBUTING.md." } };
    await writeIn(configDir, "cli-config.yaml", `hooks:\n  - ${JSON.stringify(raw)}\n`);

    const validated = await runCli(["config", "validate"], { cwd });
    expect(validated.code, validated.stderr).toBe(0);
    const listed = await runCli(["hooks"], { cwd });
    expect(listed.code, listed.stderr).toBe(0);

    const executor = await executorFor(configDir, raw);
    expect([...executor.points].sort()).toEqual(["session_spawn", "work_item_start"]);
    expect(await executor.invoke(point("session_spawn"), spawnContext())).toEqual(spawnContext({ prompt: "Follow CONTRIBUTING.md.\n\nWork on #15." }));
    expect(
      await executor.invoke(point("work_item_start"), startContext({ workItem: { ...startContext().workItem, repository: "octo/secret" } })),
    ).toMatchObject({
      proceed: false,
      reason: "octo/secret is not served by agents",
    });
  });

  it("the first example, broken, fails config validate and the-loop hooks with the daemon's error and the fix", async () => {
    const all = await blocks();
    const first = all.findIndex((block) => block.lang === "ts");
    const yaml = all[first + 1]?.text ?? "";
    const { parse } = await import("yaml");
    const path = String((parse(yaml) as { hooks: Record<string, unknown>[] }).hooks[0]?.["path"]);
    const { cwd, configDir } = await bareProject();
    await writeIn(configDir, "cli-config.yaml", yaml);
    // A typo in the import: the module does not load, as a daemon would find at its start.
    await writeIn(configDir, path, (all[first]?.text ?? "").replaceAll('"the-loop/sdk/hooks"', '"the-loop/sdk/hook"'));

    const validated = await runCli(["config", "validate"], { cwd });
    expect(validated.code).toBe(2);
    expect(validated.stderr).toMatch(/^error: invalid config: \.the-loop\/cli-config\.yaml:2:5: hooks\[0\] "budget": importing .*budget\.ts failed: /);
    expect(validated.stderr).toContain("the daemon refuses to start on it; fix the entry, or set enabled: false on it until it loads");
    const listed = await runCli(["hooks"], { cwd });
    expect(listed.code).toBe(1);
    expect(listed.stderr).toContain('do not load: hooks[0] "budget": importing');
  });
});

const HOOK = (body = "") => `import { LifecycleHooks } from "the-loop/sdk/hooks";
${body}
export class H extends LifecycleHooks {
  sessionSpawn() {
    return undefined;
  }
}
`;

describe("checkHooksLoad: the daemon's load, in a child process", () => {
  it("loads every entry and names them, the-loop/sdk/hooks resolved for .mjs and CommonJS .ts alike with nothing installed", async () => {
    const { cwd: root } = await bareProject();
    await writeIn(root, "hooks/a.mjs", HOOK());
    await writeIn(root, "hooks/b.ts", HOOK());
    const result = await checkHooksLoad({
      raw: [
        { name: "a", path: "hooks/a.mjs" },
        { name: "b", path: "hooks/b.ts" },
        { name: "off", path: "hooks/absent.mjs", enabled: false },
      ],
      configDir: root,
    });
    expect(result).toEqual({ ok: true, hooks: ["a", "b"] });
  });

  it("answers the daemon's error, naming the entry", async () => {
    const root = await tempDir();
    await writeIn(root, "hooks/a.mjs", HOOK("throw new Error('no endpoint configured');"));
    const result = await checkHooksLoad({ raw: [{ name: "a", path: "hooks/a.mjs" }], configDir: root });
    expect(result).toEqual({ ok: false, hook: "a", message: `hooks[0] "a": importing ${join(root, "hooks", "a.mjs")} failed: no endpoint configured` });
  });

  it("keeps a module's top-level code out of the asking process: a global it sets, an exit it calls", async () => {
    const root = await tempDir();
    await writeIn(root, "hooks/global.mjs", HOOK("globalThis.__theLoopProbed = true;"));
    expect(await checkHooksLoad({ raw: [{ name: "g", path: "hooks/global.mjs" }], configDir: root })).toEqual({ ok: true, hooks: ["g"] });
    expect(Reflect.get(globalThis, "__theLoopProbed")).toBeUndefined();

    await writeIn(root, "hooks/exit.mjs", HOOK("console.error('leaving now'); process.exit(7);"));
    const exited = await checkHooksLoad({ raw: [{ name: "x", path: "hooks/exit.mjs" }], configDir: root });
    expect(exited).toEqual({ ok: false, message: "loading the hooks ended the process with code 7, as it would end the daemon: leaving now" });
  });

  it("is bounded: a module that blocks at load is stopped and reported", async () => {
    const root = await tempDir();
    await writeIn(root, "hooks/spin.mjs", HOOK("for (;;) {}"));
    const result = await checkHooksLoad({ raw: [{ name: "s", path: "hooks/spin.mjs" }], configDir: root }, { timeoutMs: 3000 });
    expect(result).toEqual({
      ok: false,
      message: expect.stringMatching(/^loading the hooks did not finish within 3 s: a hook module or constructor that blocks/),
    });
  });

  it("passes the import bound to the daemon's loader: a top-level await that never settles", async () => {
    const root = await tempDir();
    await writeIn(root, "hooks/wait.mjs", HOOK("await new Promise(() => setInterval(() => undefined, 1000));"));
    const result = await checkHooksLoad({ raw: [{ name: "w", path: "hooks/wait.mjs" }], configDir: root, importTimeoutMs: 500 });
    expect(result).toEqual({ ok: false, hook: "w", message: expect.stringContaining("did not finish within 0.5 s") });
  });
});
