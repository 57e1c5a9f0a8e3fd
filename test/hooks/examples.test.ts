import { copyFile, mkdir, readFile, readdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AllowedHours } from "../../examples/hooks/allowed-hours.js";
import { PromptPrefix } from "../../examples/hooks/prompt-prefix.js";
import { Compliance, main as startCompliance } from "../../examples/hooks/compliance-service.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { loadHooks } from "../../src/hooks/load.js";
import type { HookChain } from "../../src/hooks/chain.js";
import type { SessionSpawnContext, WorkItemEntity, WorkItemStartContext } from "../../src/sdk/hooks/catalog.js";
import { REPO_ROOT, jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

/**
 * The examples are documentation that runs: each is exercised as an operator would use it — the
 * local ones constructed directly and loaded by `path` through the real loader and chain, the
 * compliance service behind HookServer on loopback, called over HTTP.
 */

const EXAMPLES = `${REPO_ROOT}/examples/hooks`;

function workItem(repository = "acme/api"): WorkItemEntity {
  return {
    ref: `github:${repository}#15`,
    tracker: "github",
    host: "github.com",
    repository,
    number: 15,
    kind: "issue",
    url: `https://github.com/${repository}/issues/15`,
    id: "I_kwDO15",
  };
}

function startContext(repository?: string): WorkItemStartContext {
  return { workItem: workItem(repository), actor: "ann", trigger: "comment", harness: "claude", deliveryId: "d-1", proceed: true, reason: "" };
}

function spawnContext(): SessionSpawnContext {
  return {
    workItem: workItem(),
    actor: "ann",
    harness: "claude",
    tmuxTarget: "the-loop-acme-api-15",
    cwd: "/work/acme-api-15",
    harnessSessionId: "s-1",
    pullRequest: "",
    deliveryId: "d-1",
    proceed: true,
    reason: "",
    prompt: "Work on github:acme/api#15.",
  };
}

const at = (iso: string) => (): Date => new Date(iso);

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function chainOf(raw: unknown[]): Promise<{ chain: HookChain; events: MemoryEventSink }> {
  const events = new MemoryEventSink();
  const chain = await loadHooks({ raw, configDir: await tempDir(), events, env: { COMPLIANCE_TOKEN: "s3cret-token" } });
  closers.push(() => chain.close());
  return { chain, events };
}

describe("examples/hooks/allowed-hours.ts", () => {
  it("passes a start inside the hours and refuses one outside, naming the hours", () => {
    const inside = new AllowedHours({ from: 9, to: 18 }, at("2026-03-02T17:59:00Z"));
    expect(inside.workItemStart(startContext())).toBeUndefined();

    const outside = new AllowedHours({ from: 9, to: 18 }, at("2026-03-02T18:00:00Z"));
    expect(outside.workItemStart(startContext())).toMatchObject({
      proceed: false,
      reason: expect.stringMatching(/between 09:00 and 18:00 \(UTC\); it is 18:00 there now/),
    });
  });

  it("reads the hours in the time zone it is given, and spans midnight when to < from", () => {
    // 13:30 UTC is 08:30 in New York (EST, UTC-5) on this date: before the window opens there.
    const newYork = new AllowedHours({ from: 9, to: 17, timeZone: "America/New_York" }, at("2026-01-15T13:30:00Z"));
    expect(newYork.workItemStart(startContext())?.reason).toContain("(America/New_York); it is 08:30 there now");
    const night = (iso: string) => new AllowedHours({ from: 22, to: 6 }, at(iso)).workItemStart(startContext());
    expect(night("2026-01-15T23:10:00Z")).toBeUndefined();
    expect(night("2026-01-15T05:59:00Z")).toBeUndefined();
    expect(night("2026-01-15T12:00:00Z")?.proceed).toBe(false);
  });

  it("leaves a start another hook already refused as it is", () => {
    const hook = new AllowedHours({ from: 9, to: 18 }, at("2026-03-02T03:00:00Z"));
    expect(hook.workItemStart({ ...startContext(), proceed: false, reason: "earlier" })).toBeUndefined();
  });

  it("fails to construct, so the declaration fails to load, on options that cannot work", () => {
    expect(() => new AllowedHours({ from: 25 })).toThrow(/with\.from must be a whole hour from 0 to 23/);
    expect(() => new AllowedHours({ from: 9, to: 9 })).toThrow(/same hour/);
    expect(() => new AllowedHours({ timeZone: "Mars/Olympus" })).toThrow(RangeError);
  });

  it("refuses through the real loader and chain when declared by path", async () => {
    // A window two hours ahead of now: outside it even if the hour turns during the test.
    const hour = new Date().getUTCHours();
    const from = (hour + 2) % 24;
    const { chain, events } = await chainOf([
      { name: "office-hours", path: `${EXAMPLES}/allowed-hours.ts`, with: { from, to: from + 1 }, on: ["work_item_start"] },
    ]);
    expect(chain.names).toEqual(["office-hours"]);
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal).toEqual({ hook: "office-hours", reason: expect.stringContaining(`between ${String(from).padStart(2, "0")}:00`) });
    expect(outcome.changed).toEqual(["proceed", "reason"]);
    expect(events.events.map((event) => event.type)).toEqual(["hooks.loaded", "hooks.decided", "hooks.ran"]);
    expect(events.events[2]?.fields).toMatchObject({ hook: "office-hours", point: "work_item_start", outcome: "denied" });
  });
});

describe("examples/hooks/prompt-prefix.ts", () => {
  it("puts the prefix before the prompt, a blank line between", () => {
    const hook = new PromptPrefix({ prefix: "  Follow CONTRIBUTING.md.\n" });
    expect(hook.sessionSpawn(spawnContext()).prompt).toBe("Follow CONTRIBUTING.md.\n\nWork on github:acme/api#15.");
  });

  it("refuses to construct without a prefix", () => {
    expect(() => new PromptPrefix({})).toThrow(/with\.prefix must be the text/);
    expect(() => new PromptPrefix({ prefix: "  " })).toThrow(/with\.prefix/);
  });

  it("rewrites the launch prompt through the real loader and chain, at the one point it overrides", async () => {
    const { chain } = await chainOf([{ name: "house-rules", path: `${EXAMPLES}/prompt-prefix.ts`, with: { prefix: "House rules first." } }]);
    expect(chain.handles("session_spawn")).toBe(true);
    expect(chain.handles("work_item_start")).toBe(false);
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome.changed).toEqual(["prompt"]);
    expect(outcome.context.prompt).toBe("House rules first.\n\nWork on github:acme/api#15.");
    expect(outcome.refusal).toBeUndefined();
  });
});

describe("examples/hooks/compliance-service.ts", () => {
  it("refuses repositories off the allowlist, owner wildcards included", () => {
    const compliance = new Compliance({ allowedRepositories: ["acme/*", "Octo/API"] });
    expect(compliance.workItemStart(startContext("acme/web"))).toBeUndefined();
    expect(compliance.workItemStart(startContext("octo/api"))).toBeUndefined();
    expect(compliance.workItemStart(startContext("octo/secret"))).toMatchObject({
      proceed: false,
      reason: expect.stringContaining("octo/secret is not on the compliance allowlist"),
    });
  });

  // The example's HookServer is the package's (dist/), not src/'s: typed from what main returns.
  async function service(): ReturnType<typeof startCompliance> {
    const server = await startCompliance({ COMPLIANCE_TOKEN: "s3cret-token", COMPLIANCE_ALLOWED_REPOS: "acme/*", COMPLIANCE_PORT: "0" }, () => undefined);
    closers.push(() => server.close());
    return server;
  }

  const post = (url: string, body: unknown, token?: string): Promise<Response> =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
      body: JSON.stringify(body),
    });

  it("answers a JSON-RPC request with the bearer token, and nothing without it", async () => {
    const server = await service();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:[0-9]+\/$/);

    const refused = await post(server.url, { jsonrpc: "2.0", method: "work_item_start", params: startContext("octo/secret"), id: 1 }, "s3cret-token");
    expect(refused.status).toBe(200);
    expect(await refused.json()).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { proceed: false, reason: expect.stringContaining("octo/secret is not on the compliance allowlist") },
    });

    const passed = await post(server.url, { jsonrpc: "2.0", method: "work_item_start", params: startContext("acme/api"), id: 2 }, "s3cret-token");
    expect(await passed.json()).toEqual({ jsonrpc: "2.0", id: 2, result: null });

    for (const token of [undefined, "wrong-token"]) {
      const unauthorized = await post(server.url, { jsonrpc: "2.0", method: "work_item_start", params: startContext("octo/secret"), id: 3 }, token);
      expect(unauthorized.status, `token ${token}`).toBe(401);
      expect(await unauthorized.json()).toMatchObject({ jsonrpc: "2.0", error: { code: expect.any(Number) } });
    }
  });

  it("does not start without a token, so it never serves a check anyone can call", async () => {
    for (const token of [undefined, ""]) {
      const env = { COMPLIANCE_ALLOWED_REPOS: "acme/*", COMPLIANCE_PORT: "0", ...(token === undefined ? {} : { COMPLIANCE_TOKEN: token }) };
      await expect(startCompliance(env, () => undefined)).rejects.toThrow(/COMPLIANCE_TOKEN is unset or empty: set it to the token the-loop sends/);
    }
  });

  it("fails to construct, saying how to write it, when declared by path without its allowlist", () => {
    expect(() => new Compliance({})).toThrow(/with\.allowedRepositories must be a list of "owner\/repo" or "owner\/\*"/);
    expect(() => new Compliance({ allowedRepositories: "acme/*" as never })).toThrow(/with\.allowedRepositories/);
  });

  it("refuses a start through the-loop's remote executor, declared by url with tokenEnv", async () => {
    const server = await service();
    const { chain, events } = await chainOf([{ name: "compliance", url: server.url, tokenEnv: "COMPLIANCE_TOKEN", required: true }]);
    const outcome = await chain.run("work_item_start", startContext("octo/secret"));
    expect(outcome.refusal).toEqual({ hook: "compliance", reason: expect.stringContaining("not on the compliance allowlist") });
    expect((await chain.run("work_item_start", startContext("acme/api"))).refusal).toBeUndefined();
    // The token's value is in no event.
    expect(JSON.stringify(events.events)).not.toContain("s3cret-token");
  });
});

/**
 * examples/hooks/README.md, followed to the letter: the files copied next to a config
 * (`.the-loop/hooks/`), `the-loop` made importable by a `node_modules/the-loop` in a parent folder,
 * each YAML snippet declared there — outside any `"type": "module"` package, where a `.ts` hook is
 * compiled as CommonJS. Each snippet must list with `the-loop hooks` and load through the real loader.
 */
describe("examples/hooks/README.md", () => {
  async function operatorProject(): Promise<{ cwd: string; configDir: string }> {
    const cwd = await tempDir();
    const configDir = join(cwd, ".the-loop");
    await mkdir(join(configDir, "hooks"), { recursive: true });
    for (const file of (await readdir(EXAMPLES)).filter((name) => name.endsWith(".ts"))) {
      await copyFile(join(EXAMPLES, file), join(configDir, "hooks", file));
    }
    await mkdir(join(cwd, "node_modules"));
    await symlink(REPO_ROOT, join(cwd, "node_modules", "the-loop"), "dir");
    return { cwd, configDir };
  }

  async function snippets(): Promise<string[]> {
    const readme = await readFile(join(EXAMPLES, "README.md"), "utf8");
    return [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
  }

  it("declares each example in a snippet that `the-loop hooks` lists and the loader loads", async () => {
    const yamls = await snippets();
    expect(yamls.length).toBeGreaterThanOrEqual(3);
    const { parse } = await import("yaml");
    for (const yaml of yamls) {
      const { cwd, configDir } = await operatorProject();
      await writeFile(join(configDir, "cli-config.yaml"), yaml);
      const declared = (parse(yaml) as { hooks: { name: string }[] }).hooks;

      const listed = await runCli(["hooks", "--json"], { cwd });
      expect(listed.code, `${yaml}\n${listed.stderr}`).toBe(0);
      expect(jsonOf<{ name: string }[]>(listed).map((entry) => entry.name)).toEqual(declared.map((entry) => entry.name));

      const events = new MemoryEventSink();
      const chain = await loadHooks({ raw: declared, configDir, events, env: { COMPLIANCE_TOKEN: "s3cret-token" } });
      closers.push(() => chain.close());
      expect(chain.names, yaml).toEqual(declared.map((entry) => entry.name));
    }
  });

  it("hosts the compliance class by path as well, as the README says it can", async () => {
    const yaml = (await snippets()).find((snippet) => /path: hooks\/compliance-service\.ts/.test(snippet));
    expect(yaml, "a snippet declaring the compliance class by path").toBeDefined();
    const { cwd, configDir } = await operatorProject();
    await writeFile(join(configDir, "cli-config.yaml"), yaml ?? "");
    const { parse } = await import("yaml");
    const events = new MemoryEventSink();
    const chain = await loadHooks({ raw: (parse(yaml ?? "") as { hooks: unknown }).hooks, configDir, events });
    closers.push(() => chain.close());
    expect((await chain.run("work_item_start", startContext("octo/secret"))).refusal).toEqual({
      hook: "compliance",
      reason: expect.stringContaining("octo/secret is not on the compliance allowlist"),
    });
    expect((await chain.run("work_item_start", startContext("acme/api"))).refusal).toBeUndefined();
    expect((await runCli(["hooks"], { cwd })).code).toBe(0);
  });
});
