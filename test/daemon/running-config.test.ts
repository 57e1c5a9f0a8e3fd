import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parse.js";
import type { CliConfig } from "../../src/config/schema.js";
import { readRunningConfig, unloadedSettings, writeRunningConfig } from "../../src/daemon/running-config.js";
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
