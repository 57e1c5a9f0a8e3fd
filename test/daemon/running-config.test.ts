import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parse.js";
import type { CliConfig } from "../../src/config/schema.js";
import { asTheDaemonRuns, readRunningConfig, runningConfigFile, unloadedSettings, writeRunningConfig } from "../../src/daemon/running-config.js";
import { writeFile } from "node:fs/promises";
import { statusExitCode, unloadedSettingsProblems } from "../../src/daemon/status/problems.js";
import { tempDir } from "../support/temp.js";

/** What the running daemon runs against the config file: the settings not loaded, as status says them. */

const configOf = (text: string): CliConfig => {
  const config = parseConfigText(text).config;
  if (config === undefined) throw new Error("invalid config");
  return config;
};

describe("unloadedSettings", () => {
  it("names the settings the file changed that the daemon runs otherwise, for the daemon's own pid only", async () => {
    const dir = await tempDir();
    const paths = { pollPidfile: join(dir, "sessions", "poll.pid") };
    await writeRunningConfig(paths, configOf("graph:\n  enabled: true\n"), join(dir, "cli-config.yaml"));
    expect(readRunningConfig(paths)).toMatchObject({ version: 1, pid: process.pid });
    const edited = configOf("graph:\n  enabled: true\n  default: adhoc\nrouting:\n  authorizedUsers: [alice]\n");
    expect(unloadedSettings(paths, edited, [process.pid])).toEqual({
      pid: process.pid,
      restartRequired: ["graph.default"],
      reloads: ["routing.authorizedUsers"],
    });
    expect(unloadedSettings(paths, configOf("graph:\n  enabled: true\n"), [process.pid])).toBeUndefined();
    expect(unloadedSettings(paths, edited, [process.pid + 1])).toBeUndefined();
    expect(unloadedSettings({ pollPidfile: join(dir, "none", "poll.pid") }, edited, [process.pid])).toBeUndefined();
  });
});

describe("asTheDaemonRuns", () => {
  it("is the whole config the live daemon runs, with the keys the file changed; the file's without a live daemon or a record that parses", async () => {
    const dir = await tempDir();
    const paths = { pollPidfile: join(dir, "sessions", "poll.pid") };
    const running = configOf("graph:\n  enabled: true\nintegrations:\n  local:\n    project: demo\nrouting:\n  tmux:\n    socketName: daemons\n");
    const edited = configOf(
      "graph:\n  enabled: true\n  default: adhoc\nintegrations:\n  local:\n    project: other\nrouting:\n  tmux:\n    socketName: mine\n",
    );
    expect(asTheDaemonRuns({ config: edited, paths })).toEqual({ config: edited, paths, unloaded: [] });

    await writeRunningConfig(paths, running, join(dir, "cli-config.yaml"));
    const acted = asTheDaemonRuns({ config: edited, paths });
    expect(acted.config).toEqual(running);
    expect(acted.config.integrations.local.project).toBe("demo");
    expect(acted.config.routing.tmux.socketName).toBe("daemons");
    expect([...acted.unloaded].sort()).toEqual(["graph.default", "integrations.local.project", "routing.tmux.socketName"]);

    // A record that does not parse as a config (foreign, or of another version) is no answer: the file's.
    const record = { version: 1, pid: process.pid, configFile: null, config: { routing: { tmux: { socketName: 7 } } } };
    await writeFile(runningConfigFile(paths), JSON.stringify(record));
    expect(asTheDaemonRuns({ config: edited, paths })).toEqual({ config: edited, paths, unloaded: [] });
    // The record of a process that is gone: the file's.
    await writeFile(runningConfigFile(paths), JSON.stringify({ ...record, pid: 2 ** 22 + 12345, config: JSON.parse(JSON.stringify(running)) }));
    expect(asTheDaemonRuns({ config: edited, paths }).config).toBe(edited);
  });
});

describe("unloadedSettingsProblems", () => {
  it("is a problem (exit 3) per kind of load, naming the keys and the fix", () => {
    const problems = unloadedSettingsProblems({ pid: 7, restartRequired: ["graph.default"], reloads: ["routing.authorizedUsers"] }, "logs/daemon.out");
    expect(problems.map((problem) => problem.code)).toEqual(["settings-not-loaded", "settings-not-loaded"]);
    expect(problems[0]?.message).toContain("graph.default");
    expect(problems[0]?.fix).toContain("`the-loop stop && the-loop start`");
    expect(problems[1]?.message).toContain("routing.authorizedUsers");
    expect(problems[1]?.fix).toContain("logs/daemon.out");
    expect(statusExitCode(problems)).toBe(3);
    expect(unloadedSettingsProblems(undefined, "x")).toEqual([]);
  });
});
