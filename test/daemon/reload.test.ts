import { mkdir, rename, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { loadConfig } from "../../src/config/load.js";
import { configSchema } from "../../src/config/schema.js";
import type { CliConfig, CliConfigInput, PollSource } from "../../src/config/schema.js";
import { configChanges, initialReloadState, reloadRouting, routingChanges, watchConfigFile, withFixedKeys } from "../../src/daemon/reload.js";
import type { ReloadContext, ReloadState, RoutingUpdate } from "../../src/daemon/reload.js";
import type { EventSink } from "../../src/events/log.js";
import { BUILTIN_TEMPLATES } from "../../src/sessions/prompts.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

const config = (input: CliConfigInput = {}): CliConfig => configSchema.parse(input);
const routing = (input: NonNullable<CliConfigInput["routing"]> = {}): CliConfig["routing"] => config({ routing: input }).routing;

const GITHUB_UNLABELLED: PollSource = { provider: "github", repos: ["octo/repo"] };
const GITHUB_LABELLED: PollSource = { provider: "github", repos: ["octo/repo"], label: "agent" };
const LOCAL: PollSource = { provider: "local" };

describe("routingChanges", () => {
  const base = { authorizedUsers: ["alice"] };
  it.each([
    ["nothing", {}, [], [], []],
    ["the allowlist", { authorizedUsers: ["alice", "bob"] }, [], ["routing.authorizedUsers"], []],
    ["a control setting", { control: { requireStartCommand: false } }, [], ["routing.control.requireStartCommand"], []],
    ["a control keyword", { control: { keywords: { stop: "halt-now" } } }, [], ["routing.control.keywords.stop"], []],
    ["the spawn policy", { spawnOnUnmatched: "never" }, [], ["routing.spawnOnUnmatched"], []],
    ["a new harness", { harnesses: { mine: { command: ["agent"] } } }, [], ["routing.harnesses.mine"], []],
    ["a prompt template", { promptTemplate: "prompts/event.md" }, [], ["routing.promptTemplate"], []],
    ["a tmux timing", { tmux: { startupGraceSeconds: 1 } }, [], ["routing.tmux.startupGraceSeconds"], []],
    ["the reactions", { reactions: { started: "rocket" } }, [], ["routing.reactions.started"], []],
    ["the registry folder", { registryDir: "elsewhere" }, [], [], ["routing.registryDir"]],
    ["the tmux server", { tmux: { socketName: "other" } }, [], [], ["routing.tmux.socketName"]],
    ["remain-on-exit", { tmux: { remainOnExit: false } }, [], [], ["routing.tmux.remainOnExit"]],
    ["the sessions' environment", { tmux: { passEnv: ["SSH_AUTH_SOCK"] } }, [], [], ["routing.tmux.passEnv"]],
    ["the pool size", { maxConcurrentDispatches: 8 }, [], [], ["routing.maxConcurrentDispatches"]],
    ["the dedupe cache", { dedupCacheSize: 64 }, [], [], ["routing.dedupCacheSize"]],
    ["the spawn workdir", { spawnWorkdir: "work" }, [], [], ["routing.spawnWorkdir"]],
    ["a workspace setting", { workspace: { strategy: "clone", enabled: false } }, [], [], ["routing.workspace.enabled", "routing.workspace.strategy"]],
    ["the label, polling nothing on GitHub", { autoExecuteLabel: "go" }, [LOCAL], ["routing.autoExecuteLabel"], []],
    ["the label, a GitHub source with its own label", { autoExecuteLabel: "go" }, [GITHUB_LABELLED], ["routing.autoExecuteLabel"], []],
    [
      "the label, a GitHub source listing by it",
      { autoExecuteLabel: "go" },
      [LOCAL, GITHUB_UNLABELLED],
      ["routing.autoExecuteLabel"],
      ["routing.autoExecuteLabel"],
    ],
    [
      "spawnOnUnmatched: always, which lifts every GitHub listing filter",
      { spawnOnUnmatched: "always" },
      [GITHUB_LABELLED],
      ["routing.spawnOnUnmatched"],
      ["routing.spawnOnUnmatched"],
    ],
    ["spawnOnUnmatched between the filtered policies", { spawnOnUnmatched: "never" }, [GITHUB_UNLABELLED], ["routing.spawnOnUnmatched"], []],
    [
      "applied and fixed keys together",
      { authorizedUsers: [], tmux: { socketName: "x", keepSessionOnClose: false } },
      [],
      ["routing.authorizedUsers", "routing.tmux.keepSessionOnClose"],
      ["routing.tmux.socketName"],
    ],
  ] as const)("%s", (_name, change, sources, applied, restartRequired) => {
    const before = routing(base);
    const after = routing({ ...base, ...(change as object) });
    const changes = routingChanges(before, after, sources);
    expect([...changes.applied].sort()).toEqual([...applied].sort());
    expect([...changes.restartRequired].sort()).toEqual([...restartRequired].sort());
  });

  it("compares by value, not identity, and treats an unset optional key like an absent one", () => {
    const before = routing({ authorizedUsers: ["alice"] });
    const after = structuredClone(before);
    expect(routingChanges(before, { ...after, promptTemplate: undefined })).toEqual({ applied: [], restartRequired: [] });
    expect(routingChanges(before, { ...after, promptTemplate: "x.md" }).applied).toEqual(["routing.promptTemplate"]);
  });

  it("unsetting a fixed key is restart-required too", () => {
    expect(routingChanges(routing({ registryDir: "a" }), routing()).restartRequired).toEqual(["routing.registryDir"]);
  });
});

describe("configChanges", () => {
  it("lists every change outside routing as restart-required, by dotted path", () => {
    const before = config({ polling: { enabled: true, sources: [{ provider: "local" }] } });
    const after = config({
      version: 1,
      state: { root: "state" },
      polling: { enabled: true, intervalSeconds: 5, sources: [{ provider: "local", projects: ["demo"] }] },
      eventLog: { enabled: false },
      webhooks: { ghWebhook: { port: 9000 } },
      integrations: { github: { tokenEnv: ["MY_TOKEN"] } },
      routing: { authorizedUsers: ["alice"] },
    });
    const changes = configChanges(before, after);
    expect(changes.applied).toEqual(["routing.authorizedUsers"]);
    expect([...changes.restartRequired].sort()).toEqual(
      ["eventLog.enabled", "integrations.github.tokenEnv", "polling.intervalSeconds", "polling.sources", "state.root", "webhooks.ghWebhook.port"].sort(),
    );
  });

  it("weighs the label against the running poller's GitHub sources, and only when the poller runs", () => {
    const github = { sources: [{ provider: "github" as const, repos: ["octo/repo"] }] };
    const running = config({ polling: { enabled: true, ...github } });
    const idle = config({ polling: { enabled: false, ...github } });
    expect(configChanges(running, { ...running, routing: routing({ autoExecuteLabel: "go" }) }).restartRequired).toEqual(["routing.autoExecuteLabel"]);
    expect(configChanges(idle, { ...idle, routing: routing({ autoExecuteLabel: "go" }) }).restartRequired).toEqual([]);
  });
});

describe("withFixedKeys", () => {
  it("takes the new routing with every key fixed at start kept at its running value", () => {
    const running = routing({ authorizedUsers: ["alice"], tmux: { socketName: "live" }, maxConcurrentDispatches: 2 });
    const next = routing({
      authorizedUsers: ["bob"],
      registryDir: "moved",
      spawnWorkdir: "work",
      tmux: { socketName: "other", remainOnExit: false, startupGraceSeconds: 1 },
      maxConcurrentDispatches: 9,
      dedupCacheSize: 99,
      workspace: { strategy: "clone" },
    });
    const merged = withFixedKeys(next, running);
    expect(merged.authorizedUsers).toEqual(["bob"]);
    expect(merged.tmux).toEqual({ ...running.tmux, startupGraceSeconds: 1 });
    expect(merged.maxConcurrentDispatches).toBe(2);
    expect(merged.dedupCacheSize).toBe(running.dedupCacheSize);
    expect(merged.spawnWorkdir).toBe(".");
    expect(merged.workspace).toEqual(running.workspace);
    expect("registryDir" in merged).toBe(false);
    // Neither input is changed.
    expect(next.tmux.socketName).toBe("other");
    expect(running.authorizedUsers).toEqual(["alice"]);
  });
});

/**
 * Waits until the file system's clock has moved past `file`'s last write, so that writing the
 * same bytes again gives it a new mtime: a stat watcher sees nothing else of such a rewrite, and
 * file times move in coarse ticks (a jiffy, on Linux).
 */
async function pastLastWrite(file: string): Promise<void> {
  const probe = `${file}.clock`;
  const written = (await stat(file)).mtimeMs;
  await waitFor(
    "the file system's clock to move past the last write",
    async () => {
      await writeFile(probe, "");
      return (await stat(probe)).mtimeMs > written;
    },
    { intervalMs: 2 },
  );
}

describe("watchConfigFile", () => {
  const stops: (() => void)[] = [];
  afterEach(() => {
    for (const stop of stops.splice(0)) stop();
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  async function watched(debounceMs = 30): Promise<{ file: string; seen: string[]; checks: boolean[]; waits: string[] }> {
    const dir = await tempDir();
    const file = join(dir, "cli-config.yaml");
    await writeFile(file, "routing: {}\n");
    const seen: string[] = [];
    const checks: boolean[] = [];
    const waits: string[] = [];
    stops.push(
      watchConfigFile(file, (text) => void seen.push(text), {
        intervalMs: 10,
        debounceMs,
        onCheck: (changed) => void checks.push(changed),
        onSaveInProgress: (why) => void waits.push(why),
        onError: (error) => {
          throw error;
        },
      }),
    );
    return { file, seen, checks, waits };
  }

  it("reports a write with the new text", async () => {
    const { file, seen } = await watched();
    await writeFile(file, "routing: {authorizedUsers: [bob]}\n");
    await waitFor("the change", () => seen[0]);
    expect(seen).toEqual(["routing: {authorizedUsers: [bob]}\n"]);
  });

  it("follows an editor that renames a new file over the old one", async () => {
    const { file, seen } = await watched();
    await writeFile(`${file}.tmp`, "first: 1\n");
    await rename(`${file}.tmp`, file);
    await waitFor("the first replacement", () => seen[0]);
    await writeFile(`${file}.tmp`, "second: 2\n");
    await rename(`${file}.tmp`, file);
    await waitFor("the second replacement", () => seen[1]);
    expect(seen).toEqual(["first: 1\n", "second: 2\n"]);
  });

  it("ignores a rewrite with the same content", async () => {
    const { file, seen, checks } = await watched();
    // A same-bytes rewrite shows the stat watcher only a new mtime, and it can show none: the
    // watcher's first stat (its baseline) is taken on libuv's thread pool and may come after the
    // rewrite, and a rewrite within the file system's clock tick keeps the old mtime. So the same
    // text is saved again, each time past the last write, until the watcher has looked at one.
    await waitFor(
      "a rewrite to be looked at",
      async () => {
        if (checks.length > 0) return true;
        await pastLastWrite(file);
        await writeFile(file, "routing: {}\n");
        return false;
      },
      { intervalMs: 50 },
    );
    expect(checks).not.toContain(true);
    expect(seen).toEqual([]);
  });

  it("reads once after a burst of changes", async () => {
    // The debounce is what is tested, so its timer runs on the fake clock; the stat watcher's
    // interval is libuv's own and keeps real time, so each change is noticed as it is made.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const debounce = vi.spyOn(globalThis, "setTimeout");
    const { file, seen, checks } = await watched(400);
    const noticed = (): number => debounce.mock.calls.filter(([, ms]) => ms === 400).length;
    for (const n of [1, 2, 3, 4]) {
      if (n > 1) await pastLastWrite(file);
      await writeFile(file, `step: ${n}\n`);
      await waitFor(`change ${n} to be noticed`, () => noticed() >= n);
    }
    // Each change put the read off again; none is due until the quiet time has passed.
    await vi.advanceTimersByTimeAsync(399);
    expect(checks).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await waitFor("the change", () => seen[0]);
    expect(seen).toEqual(["step: 4\n"]);
    expect(checks).toEqual([true]);
  });

  it("takes an emptied file for a write in progress (truncate, then write)", async () => {
    const { file, seen, waits } = await watched();
    await writeFile(file, "");
    // The empty file was read and waited out, not handed on.
    await waitFor("the empty file read", () => waits.includes("empty"));
    expect(seen).toEqual([]);
    await writeFile(file, "routing: {authorizedUsers: [bob]}\n");
    await waitFor("the written file", () => seen[0]);
    expect(seen).toEqual(["routing: {authorizedUsers: [bob]}\n"]);
  });

  it("looks again at unchanged text when the last change was not taken", async () => {
    const dir = await tempDir();
    const file = join(dir, "cli-config.yaml");
    await writeFile(file, "routing: {}\n");
    const seen: string[] = [];
    const checks: boolean[] = [];
    stops.push(
      watchConfigFile(
        file,
        (text) => {
          seen.push(text);
          // The first change could not be used (a prompt template it names is missing, say).
          return seen.length > 1;
        },
        { intervalMs: 10, debounceMs: 10, onCheck: (changed) => void checks.push(changed) },
      ),
    );
    await writeFile(file, "spawnPromptTemplate: boot.md\n");
    await waitFor("the change", () => seen[0]);
    // Saved again as it is, once the template exists: looked at again.
    await pastLastWrite(file);
    await writeFile(file, "spawnPromptTemplate: boot.md\n");
    await waitFor("the same text, again", () => seen[1]);
    // Taken now: the same text once more is no change.
    await pastLastWrite(file);
    await writeFile(file, "spawnPromptTemplate: boot.md\n");
    // Looked at, and found no change: only then is "not handed on" a fact.
    await waitFor("the third save to be looked at", () => checks.length >= 3);
    expect(checks).toEqual([true, true, false]);
    expect(seen).toHaveLength(2);
  });

  it("follows a symlinked config file, its target edited or the link repointed", async () => {
    const dir = await tempDir();
    const first = join(dir, "first.yaml");
    const second = join(dir, "second.yaml");
    const link = join(dir, "cli-config.yaml");
    await writeFile(first, "one: 1\n");
    await writeFile(second, "two: 2\n");
    await symlink(first, link);
    const seen: string[] = [];
    stops.push(watchConfigFile(link, (text) => void seen.push(text), { intervalMs: 10, debounceMs: 10 }));
    await writeFile(first, "one: 11\n");
    await waitFor("the edited target", () => seen[0]);
    await symlink(second, `${link}.new`);
    await rename(`${link}.new`, link);
    await waitFor("the new target", () => seen[1]);
    expect(seen).toEqual(["one: 11\n", "two: 2\n"]);
  });

  it("waits out a missing file and stops when told", async () => {
    const dir = await tempDir();
    const file = join(dir, "later.yaml");
    const seen: string[] = [];
    const stop = watchConfigFile(file, (text) => void seen.push(text), { intervalMs: 10, debounceMs: 10 });
    await writeFile(file, "now: here\n");
    await waitFor("the file to appear", () => seen[0]);
    stop();
    stop();
    expect(seen).toEqual(["now: here\n"]);
  });
});

interface Emitted {
  readonly type: string;
  readonly fields: Record<string, unknown>;
}

describe("reloadRouting", () => {
  async function setup(routingBlock: Record<string, unknown> = { authorizedUsers: ["alice"] }) {
    const dir = await tempDir();
    const file = join(dir, ".the-loop", "cli-config.yaml");
    await mkdir(join(dir, ".the-loop"));
    const env = { XDG_CACHE_HOME: join(dir, "cache") };
    const write = (routing: Record<string, unknown>, extra: Record<string, unknown> = {}, comment = ""): Promise<void> =>
      writeFile(file, `${comment}${stringify({ version: 1, routing, polling: { enabled: true, sources: [{ provider: "local" }] }, ...extra })}`);
    await write(routingBlock);
    const loaded = await loadConfig({ explicitPath: file, cwd: dir, env, homeDir: dir });
    const emitted: Emitted[] = [];
    const warnings: string[] = [];
    const updates: RoutingUpdate[] = [];
    const events: EventSink = { emit: (type, fields) => void emitted.push({ type, fields: fields as Record<string, unknown> }) };
    const context: ReloadContext = {
      configFile: file,
      baseDir: loaded.baseDir,
      dispatcher: { reconfigure: (next) => void updates.push(next) },
      events,
      warn: (message) => void warnings.push(message),
      homeDir: dir,
    };
    return { dir, file, write, state: initialReloadState(loaded.config), context, emitted, warnings, updates };
  }

  it("applies a routing change to the dispatcher and says so", async () => {
    const t = await setup();
    await t.write({ authorizedUsers: ["alice", "bob"], control: { requireStartCommand: false } });
    const result = await reloadRouting(t.state, t.context);
    expect(result.outcome).toBe("reloaded");
    expect(t.updates).toHaveLength(1);
    const update = t.updates[0] as RoutingUpdate;
    expect(update.routing.authorizedUsers).toEqual(["alice", "bob"]);
    expect(update.routing.control.requireStartCommand).toBe(false);
    expect([...update.policy.authorizedUsers]).toEqual(["alice", "bob"]);
    expect(update.templates).toEqual(BUILTIN_TEMPLATES);
    expect(t.emitted).toEqual([
      {
        type: "config.reloaded",
        fields: { config: t.file, applied: ["routing.authorizedUsers", "routing.control.requireStartCommand"], restart_required: [] },
      },
    ]);
    expect(t.warnings).toEqual([]);
    expect(result.state.running.routing.authorizedUsers).toEqual(["alice", "bob"]);

    // The same content again, even reworded, changes nothing and says nothing.
    await t.write({ authorizedUsers: ["alice", "bob"], control: { requireStartCommand: false } }, {}, "# reworded\n");
    const again = await reloadRouting(result.state, t.context);
    expect(again.outcome).toBe("unchanged");
    expect(t.emitted).toHaveLength(1);
    expect(t.updates).toHaveLength(1);
  });

  it("keeps the running config when the file is invalid", async () => {
    const t = await setup();
    await t.write({ authorizedUsers: ["alice"], authorisedUsers: ["bob"] });
    const result = await reloadRouting(t.state, t.context);
    expect(result.outcome).toBe("failed");
    expect(result.state).toBe(t.state);
    expect(t.updates).toEqual([]);
    expect(t.emitted).toHaveLength(1);
    expect(t.emitted[0]?.type).toBe("config.reload_failed");
    expect(t.emitted[0]?.fields.config).toBe(t.file);
    expect(String(t.emitted[0]?.fields.error)).toContain("authorisedUsers");
    expect(t.warnings).toHaveLength(1);
    expect(t.warnings[0]).toContain("keeps running on the config it had");

    // Fixed: the next reload applies it against what still runs.
    await t.write({ authorizedUsers: ["bob"] });
    const fixed = await reloadRouting(result.state, t.context);
    expect(fixed.outcome).toBe("reloaded");
    expect(t.updates.map((update) => update.routing.authorizedUsers)).toEqual([["bob"]]);
  });

  it("reports a restart-required change without touching the dispatcher", async () => {
    const t = await setup({ authorizedUsers: ["alice"], tmux: { socketName: "live" } });
    await t.write({ authorizedUsers: ["alice"], tmux: { socketName: "other" } }, { eventLog: { enabled: false } });
    const result = await reloadRouting(t.state, t.context);
    expect(result).toMatchObject({ outcome: "reloaded", applied: [], restartRequired: ["routing.tmux.socketName", "eventLog.enabled"] });
    expect(t.updates).toEqual([]);
    expect(t.emitted).toEqual([
      {
        type: "config.reloaded",
        fields: { config: t.file, applied: [], restart_required: ["routing.tmux.socketName", "eventLog.enabled"] },
      },
    ]);
    expect(t.warnings).toHaveLength(1);
    expect(t.warnings[0]).toContain("routing.tmux.socketName, eventLog.enabled");
    expect(t.warnings[0]).toContain("restart");
    expect(result.state.running).toBe(t.state.running);

    // A later applied change still keeps the socket the runner was built with.
    await t.write({ authorizedUsers: ["alice", "bob"], tmux: { socketName: "other" } }, { eventLog: { enabled: false } });
    const next = await reloadRouting(result.state, t.context);
    expect(next).toMatchObject({ outcome: "reloaded", applied: ["routing.authorizedUsers"] });
    expect(t.updates[0]?.routing.tmux.socketName).toBe("live");
    expect(t.updates[0]?.routing.authorizedUsers).toEqual(["alice", "bob"]);
  });

  it("treats a prompt template that cannot be read as a failed reload", async () => {
    const t = await setup();
    await t.write({ authorizedUsers: ["alice", "bob"], spawnPromptTemplate: "prompts/boot.md" });
    const failed = await reloadRouting(t.state, t.context);
    expect(failed.outcome).toBe("failed");
    expect(t.updates).toEqual([]);
    expect(t.emitted.map((event) => event.type)).toEqual(["config.reload_failed"]);
    expect(String(t.emitted[0]?.fields.error)).toContain("routing.spawnPromptTemplate");
    expect(failed.state.running.routing.authorizedUsers).toEqual(["alice"]);

    // Relative to the project directory, as at start.
    await mkdir(join(t.dir, "prompts"));
    await writeFile(join(t.dir, "prompts", "boot.md"), "Work on {{work_item}} {{nonsense}}\n");
    const loaded = await reloadRouting(failed.state, t.context);
    expect(loaded.outcome).toBe("reloaded");
    expect(t.updates[0]?.templates.boot).toBe("Work on {{work_item}} {{nonsense}}\n");
    expect(t.warnings.at(-1)).toContain("{{nonsense}}");
  });

  it("takes an empty file for a write in progress: nothing is applied, nothing reported", async () => {
    const t = await setup();
    for (const text of ["", "\n  \n"]) {
      await writeFile(t.file, text);
      const result = await reloadRouting(t.state, t.context);
      expect(result.outcome).toBe("unchanged");
      expect(result.state).toBe(t.state);
    }
    // Handed the text the watcher read, likewise.
    expect((await reloadRouting(t.state, t.context, "")).outcome).toBe("unchanged");
    expect(t.updates).toEqual([]);
    expect(t.emitted).toEqual([]);
    expect(t.warnings).toEqual([]);
  });

  it("applies the text it is handed, not what the file holds by then", async () => {
    const t = await setup();
    const text = stringify({ version: 1, routing: { authorizedUsers: ["alice", "bob"] }, polling: { enabled: true, sources: [{ provider: "local" }] } });
    // Truncated again by the next save, between the watcher's read and the reload.
    await writeFile(t.file, "");
    const result = await reloadRouting(t.state, t.context, text);
    expect(result.outcome).toBe("reloaded");
    expect(t.updates.map((update) => update.routing.authorizedUsers)).toEqual([["alice", "bob"]]);
  });

  it("waits out a file that is gone (a rename-replace in progress)", async () => {
    const t = await setup();
    await rename(t.file, `${t.file}.old`);
    const result = await reloadRouting(t.state, t.context);
    expect(result.outcome).toBe("unchanged");
    expect(t.emitted).toEqual([]);
    expect(t.warnings).toEqual([]);
  });

  it("reads the older webhooks.ghWebhook.routing spelling as routing", async () => {
    const t = await setup();
    const legacy = (routing: Record<string, unknown>): Promise<void> =>
      writeFile(t.file, stringify({ version: 1, webhooks: { ghWebhook: { routing } }, polling: { enabled: true, sources: [{ provider: "local" }] } }));
    await legacy({ authorizedUsers: ["alice", "bob"], tmux: { socketName: "elsewhere" } });
    const result = await reloadRouting(t.state, t.context);
    expect(result).toMatchObject({ outcome: "reloaded", applied: ["routing.authorizedUsers"], restartRequired: ["routing.tmux.socketName"] });
    expect(t.updates.map((update) => update.routing.authorizedUsers)).toEqual([["alice", "bob"]]);
    expect(t.updates[0]?.routing.tmux.socketName).toBeUndefined();
    // Moved to the top level, unchanged: nothing to do.
    await t.write({ authorizedUsers: ["alice", "bob"], tmux: { socketName: "elsewhere" } });
    expect((await reloadRouting(result.state, t.context)).outcome).toBe("unchanged");
    expect(t.updates).toHaveLength(1);
  });

  it("weighs the poller's label against the one it was started with", async () => {
    const github = { polling: { enabled: true, sources: [{ provider: "github", repos: ["octo/repo"] }] } };
    const t = await setup();
    const write = (routing: Record<string, unknown>): Promise<void> => writeFile(t.file, stringify({ version: 1, routing, ...github }));
    await write({ authorizedUsers: ["alice"] });
    const loaded = await loadConfig({ explicitPath: t.file, cwd: t.dir, env: { XDG_CACHE_HOME: join(t.dir, "cache") }, homeDir: t.dir });
    const started = initialReloadState(loaded.config);

    await write({ authorizedUsers: ["alice"], autoExecuteLabel: "go" });
    const moved = await reloadRouting(started, t.context);
    expect(moved).toMatchObject({ applied: ["routing.autoExecuteLabel"], restartRequired: ["routing.autoExecuteLabel"] });

    // Still waiting for a restart when something else changes, like every key fixed at start.
    await write({ authorizedUsers: ["alice", "bob"], autoExecuteLabel: "go" });
    const other = await reloadRouting(moved.state, t.context);
    expect(other).toMatchObject({ applied: ["routing.authorizedUsers"], restartRequired: ["routing.autoExecuteLabel"] });

    // Back to the label the poller lists by: no restart needed.
    await write({ authorizedUsers: ["alice", "bob"] });
    const back = await reloadRouting(other.state, t.context);
    expect(back).toMatchObject({ applied: ["routing.autoExecuteLabel"], restartRequired: [] });
  });

  it("does nothing when the file means what already runs", async () => {
    const t = await setup();
    await t.write({ authorizedUsers: ["alice"] }, {}, "# only a comment\n");
    const state: ReloadState = t.state;
    const result = await reloadRouting(state, t.context);
    expect(result.outcome).toBe("unchanged");
    expect(t.emitted).toEqual([]);
    expect(t.updates).toEqual([]);
  });
});
