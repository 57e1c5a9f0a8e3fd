import { promises as fsPromises } from "node:fs";
import { chmod, mkdir, readFile, readlink, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runUpgradeConfig } from "../../src/cli/commands/config/upgrade.js";
import type { UpgradeConfigReport } from "../../src/cli/commands/config/upgrade.js";
import { parseConfigText } from "../../src/config/parse.js";
import { processStartTicks } from "../../src/daemon/pidfile.js";
import { ExitError } from "../../src/errors.js";
import { jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

/** A project as it was before execution control: no state block, no routing.control. */
const OLD_CONFIG = `# our config
version: 1
routing:
  authorizedUsers: [alice]   # the team
polling:
  enabled: true
  sources: [{provider: local}]
`;

afterEach(() => {
  vi.unstubAllEnvs();
});

async function oldProject(text = OLD_CONFIG): Promise<{ dir: string; config: string }> {
  const dir = await tempDir();
  // In-process loads cache the parsed config; keep that cache in the test's folder.
  vi.stubEnv("XDG_CACHE_HOME", join(dir, "cache"));
  await mkdir(join(dir, ".the-loop"));
  const config = join(dir, ".the-loop", "cli-config.yaml");
  await writeFile(config, text);
  return { dir, config };
}

/** Runs the handler in this process and returns what it printed on stdout. */
async function upgrade(config: string | undefined, options: Parameters<typeof runUpgradeConfig>[1] = {}): Promise<string> {
  const written: string[] = [];
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  try {
    await runUpgradeConfig({ config }, options);
  } finally {
    spy.mockRestore();
  }
  return written.join("");
}

async function legacyPollState(dir: string): Promise<{ from: string; to: string }> {
  const from = join(dir, ".the-loop", "poll-state.json");
  await writeFile(from, '{"version":2,"sources":{}}\n');
  return { from, to: join(dir, ".the-loop", "sessions", "poll-state.json") };
}

describe("runUpgradeConfig", () => {
  it("upgrades the config in place, keeping its mode, and lists what it added and what needs a decision", async () => {
    const { config } = await oldProject();
    await chmod(config, 0o600);
    const output = await upgrade(config);
    const text = await readFile(config, "utf8");
    expect(parseConfigText(text).problems).toEqual([]);
    expect(text).toContain("  authorizedUsers: [alice]   # the team\n");
    expect(text).toContain("    requireStartCommand: true\n");
    expect((await stat(config)).mode & 0o777).toBe(0o600);

    expect(output).toMatch(/^upgraded .*cli-config\.yaml\n/);
    expect(output).toContain("added (each with its default, so the config means what it meant):\n  state.root\n  routing.control.enabled\n");
    expect(output).toMatch(
      /needs your decision:\n {2}routing\.control\.requireStartCommand: its default changes behaviour: labelling a work item no longer starts a session/,
    );
    expect(output).not.toContain("offered");
  });

  it("says the config is up to date on a second run, and leaves the file alone", async () => {
    const { config } = await oldProject();
    await upgrade(config);
    const once = await readFile(config, "utf8");
    const before = (await stat(config)).mtimeMs;
    const output = await upgrade(config);
    expect(output).toMatch(/cli-config\.yaml is up to date: state and routing\.control are already there; nothing to add\.\n$/);
    expect(await readFile(config, "utf8")).toBe(once);
    expect((await stat(config)).mtimeMs).toBe(before);
    const report = JSON.parse(await upgrade(config, { json: true })) as UpgradeConfigReport;
    expect(report).toEqual({ config, added: [], needsDecision: [], offers: [], changed: false, dryRun: false });
  });

  it("--dry-run shows the lines it would add and writes nothing", async () => {
    const { config } = await oldProject();
    const output = await upgrade(config, { dryRun: true });
    expect(await readFile(config, "utf8")).toBe(OLD_CONFIG);
    expect(output).toMatch(/^would upgrade .*cli-config\.yaml \(dry run: nothing is written\)\n@@ after line 2 @@\n\+\n\+# Everything/);
    expect(output).toContain("@@ after line 4 @@\n+  # Execution control");
    expect(output).toContain("+  control:\n+    enabled: true\n");
    expect(output).toContain("would add (each with its default");
    expect(output).toContain("needs your decision:");
  });

  it("--json reports the config, the keys added, the decision and the offers", async () => {
    const { config } = await oldProject();
    const report = JSON.parse(await upgrade(config, { json: true })) as UpgradeConfigReport;
    expect(report).toEqual({
      config,
      added: [
        "state.root",
        "routing.control.enabled",
        "routing.control.requireStartCommand",
        "routing.control.keywords.start",
        "routing.control.keywords.stop",
        "routing.control.keywords.pause",
        "routing.control.keywords.resume",
        "routing.mcp.enabled",
        "routing.supervision.enabled",
      ],
      needsDecision: [
        { key: "routing.control.requireStartCommand", why: expect.stringContaining("Set it to false") as unknown as string },
        { key: "routing.mcp.enabled", why: expect.stringContaining("Set it to false") as unknown as string },
        { key: "routing.supervision.enabled", why: expect.stringContaining("Set it to false") as unknown as string },
      ],
      offers: [],
      changed: true,
      dryRun: false,
    });
  });

  it("offers to move a pre-state-root poll-state file, and moves it only with --move-poll-state", async () => {
    const { dir, config } = await oldProject();
    const { from, to } = await legacyPollState(dir);

    const offered = JSON.parse(await upgrade(config, { json: true })) as UpgradeConfigReport;
    expect(offered.offers).toEqual([{ action: "move-poll-state", flag: "--move-poll-state", from, to, why: expect.any(String) as unknown as string }]);
    expect(offered.moved).toBeUndefined();
    expect(await readFile(from, "utf8")).toContain('"sources"');
    const human = await upgrade(config);
    expect(human).toContain("is up to date");
    expect(human).toMatch(/offered, not done:\n {2}.*poll-state\.json → .*sessions\/poll-state\.json: .*`the-loop upgrade-config --move-poll-state`/);

    const moved = JSON.parse(await upgrade(config, { movePollState: true, json: true })) as UpgradeConfigReport;
    expect(moved).toMatchObject({ moved: { from, to }, offers: [], changed: true });
    expect(await readFile(to, "utf8")).toBe('{"version":2,"sources":{}}\n');
    await expect(stat(from)).rejects.toThrow(/ENOENT/);

    // Nothing left to move: said so, and nothing else happens.
    expect(await upgrade(config, { movePollState: true })).toContain("--move-poll-state: nothing to move");
  });

  it("--dry-run --move-poll-state says what it would move and moves nothing", async () => {
    const { dir, config } = await oldProject();
    const { from } = await legacyPollState(dir);
    const output = await upgrade(config, { dryRun: true, movePollState: true });
    expect(output).toMatch(/would move the poll state: .*poll-state\.json → .*sessions\/poll-state\.json/);
    expect(await readFile(from, "utf8")).toContain('"sources"');
    expect(await readFile(config, "utf8")).toBe(OLD_CONFIG);
  });

  it("refuses to move the poll state while the poller runs, and then changes nothing at all", async () => {
    const { dir, config } = await oldProject();
    const { from } = await legacyPollState(dir);
    const startTicks = processStartTicks(process.pid);
    await writeFile(
      join(dir, ".the-loop", "poll.pid"),
      JSON.stringify({ pid: process.pid, service: "poller", startedAt: new Date().toISOString(), ...(startTicks ? { startTicks } : {}) }),
    );
    const run = upgrade(config, { movePollState: true });
    await expect(run).rejects.toBeInstanceOf(ExitError);
    await expect(upgrade(config, { movePollState: true })).rejects.toThrow(
      new RegExp(`the poller is running \\(pid ${process.pid}.*stop the daemon with \`the-loop stop\`.*Nothing was changed`),
    );
    expect(await readFile(from, "utf8")).toContain('"sources"');
    expect(await readFile(config, "utf8")).toBe(OLD_CONFIG);
  });

  it("fills a legacy webhooks.ghWebhook.routing block and offers moving it to the top level", async () => {
    const { config } = await oldProject("webhooks:\n  ghWebhook:\n    routing:\n      authorizedUsers: [alice]\n");
    const output = await upgrade(config);
    expect(output).toContain("  webhooks.ghWebhook.routing.control.requireStartCommand: its default changes behaviour");
    expect(output).toMatch(/offered, not done:\n {2}webhooks\.ghWebhook\.routing → routing: .*older spelling.*by hand/);
    const outcome = parseConfigText(await readFile(config, "utf8"));
    expect(outcome.problems).toEqual([]);
    expect(outcome.config?.routing.authorizedUsers).toEqual(["alice"]);
  });

  it("upgrades a config saved with a byte order mark, and keeps the mark", async () => {
    const { config } = await oldProject(`\uFEFF${OLD_CONFIG}`);
    const report = JSON.parse(await upgrade(config, { json: true })) as UpgradeConfigReport;
    expect(report).toMatchObject({
      changed: true,
      needsDecision: [{ key: "routing.control.requireStartCommand" }, { key: "routing.mcp.enabled" }, { key: "routing.supervision.enabled" }],
    });
    const text = await readFile(config, "utf8");
    expect(text.startsWith("\uFEFF# our config\nversion: 1\n")).toBe(true);
    expect(parseConfigText(text).problems).toEqual([]);
    expect(parseConfigText(text).config?.routing.control.requireStartCommand).toBe(true);
  });

  it("says what failed and that nothing changed when the config cannot be written (a read-only mount, say)", async () => {
    const { config } = await oldProject();
    const { rename } = fsPromises;
    vi.spyOn(fsPromises, "rename").mockImplementation(async (from, to) => {
      if (String(to) === config) throw Object.assign(new Error(`EROFS: read-only file system, rename '${String(from)}' -> '${String(to)}'`), { code: "EROFS" });
      return rename(from, to);
    });
    let error: unknown;
    try {
      await upgrade(config);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ExitError);
    const message = (error as ExitError).message;
    expect(message).toMatch(/^could not write .*cli-config\.yaml: EROFS: read-only file system/);
    expect(message).toContain("it is unchanged");
    expect(message).toContain("the-loop upgrade-config --dry-run");
    expect(await readFile(config, "utf8")).toBe(OLD_CONFIG);
  });

  it("says what failed when the poll state cannot be moved, and that the config was upgraded", async () => {
    const { dir, config } = await oldProject();
    const { from } = await legacyPollState(dir);
    vi.spyOn(fsPromises, "link").mockRejectedValue(Object.assign(new Error("EACCES: permission denied, link"), { code: "EACCES" }));
    let error: unknown;
    try {
      await upgrade(config, { movePollState: true });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ExitError);
    const message = (error as ExitError).message;
    expect(message).toMatch(/could not move the poll state .*poll-state\.json to .*sessions\/poll-state\.json: EACCES: permission denied/);
    expect(message).toContain("the poller keeps using");
    expect(message).toMatch(/cli-config\.yaml was upgraded all the same/);
    expect(await readFile(from, "utf8")).toContain('"sources"');
    expect(await readFile(config, "utf8")).toContain("requireStartCommand: true");
  });

  it("rewrites a symlinked config where it lives, keeping the link", async () => {
    const { dir } = await oldProject();
    const real = join(dir, "shared-config.yaml");
    await writeFile(real, OLD_CONFIG);
    const link = join(dir, "linked.yaml");
    await symlink(real, link);
    await upgrade(link);
    expect(await readlink(link)).toBe(real);
    expect(await readFile(real, "utf8")).toContain("requireStartCommand: true");
  });

  it("refuses an invalid config with exit 2 and leaves it as it is", async () => {
    const { config } = await oldProject("routing:\n  authorisedUsers: [alice]\n");
    await expect(upgrade(config)).rejects.toMatchObject({ exitCode: 2 });
    expect(await readFile(config, "utf8")).toBe("routing:\n  authorisedUsers: [alice]\n");
  });

  it("says there is nothing to upgrade when no config file is found", async () => {
    const dir = await tempDir();
    vi.spyOn(process, "cwd").mockReturnValue(dir);
    vi.stubEnv("HOME", dir);
    vi.stubEnv("THE_LOOP_CLI_CONFIG", undefined);
    expect(await upgrade(undefined)).toMatch(/^no config file .*: nothing to upgrade; the defaults already apply/);
    expect(JSON.parse(await upgrade(undefined, { json: true }))).toEqual({
      config: null,
      added: [],
      needsDecision: [],
      offers: [],
      changed: false,
      dryRun: false,
    });
  });
});

// These run it as users do.
describe("the-loop upgrade-config (the binary)", () => {
  it("upgrades the project config, says so, and is a no-op the second time", async () => {
    const { dir, config } = await oldProject();
    const first = await runCli(["upgrade-config"], { cwd: dir });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("upgraded .the-loop/cli-config.yaml");
    expect(first.stdout).toContain("needs your decision:");
    const validate = await runCli(["config", "validate"], { cwd: dir });
    expect(validate.code, validate.stderr).toBe(0);

    const upgraded = await readFile(config, "utf8");
    const second = await runCli(["upgrade-config", "--json"], { cwd: dir });
    expect(second.code, second.stderr).toBe(0);
    expect(jsonOf<UpgradeConfigReport>(second)).toMatchObject({ added: [], changed: false });
    expect(await readFile(config, "utf8")).toBe(upgraded);
  });

  it("--dry-run writes nothing; --move-poll-state moves the old poll state", async () => {
    const { dir, config } = await oldProject();
    const { from, to } = await legacyPollState(dir);
    const dry = await runCli(["upgrade-config", "--dry-run"], { cwd: dir });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("(dry run: nothing is written)");
    expect(dry.stdout).toContain("--move-poll-state");
    expect(await readFile(config, "utf8")).toBe(OLD_CONFIG);

    const move = await runCli(["upgrade-config", "--move-poll-state", "--json"], { cwd: dir });
    expect(move.code, move.stderr).toBe(0);
    expect(jsonOf<UpgradeConfigReport>(move)).toMatchObject({ moved: { from, to }, changed: true });
  });

  it("exits 0 with nothing to upgrade when there is no config file", async () => {
    const dir = await tempDir();
    const result = await runCli(["upgrade-config"], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("nothing to upgrade; the defaults already apply");
  });

  it("is listed in the help", async () => {
    const dir = await tempDir();
    const help = await runCli(["upgrade-config", "--help"], { cwd: dir });
    expect(help.code).toBe(0);
    for (const flag of ["--dry-run", "--move-poll-state", "--json"]) expect(help.stdout).toContain(flag);
  });
});
