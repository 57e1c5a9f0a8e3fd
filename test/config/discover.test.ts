import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, baseDirFor, discoverConfig, elsewhereNote, loadConfig } from "../../src/config/load.js";
import { tempDir } from "../support/temp.js";

async function writeConfig(path: string, text = "state:\n  root: state\n"): Promise<string> {
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(path, text);
  return path;
}

describe("config discovery", () => {
  it("prefers --config, then $THE_LOOP_CLI_CONFIG, then ./.the-loop, then ~/.the-loop", async () => {
    const cwd = await tempDir();
    const home = await tempDir();
    const flag = await writeConfig(join(cwd, "flag.yaml"));
    const fromEnv = await writeConfig(join(cwd, "env.yaml"));
    const project = await writeConfig(join(cwd, ".the-loop", "cli-config.yaml"));
    const inHome = await writeConfig(join(home, ".the-loop", "cli-config.yaml"));
    const env = { THE_LOOP_CLI_CONFIG: "env.yaml" };

    expect(await discoverConfig({ explicitPath: "flag.yaml", env, cwd, homeDir: home })).toEqual({ path: flag, origin: "flag" });
    expect(await discoverConfig({ env, cwd, homeDir: home })).toEqual({ path: fromEnv, origin: "env" });
    expect(await discoverConfig({ env: {}, cwd, homeDir: home })).toEqual({ path: project, origin: "project" });
    const elsewhere = await tempDir();
    expect(await discoverConfig({ env: {}, cwd: elsewhere, homeDir: home })).toEqual({ path: inHome, origin: "home" });
    expect(await discoverConfig({ env: {}, cwd: elsewhere, homeDir: elsewhere })).toEqual({ path: null, origin: "none" });
  });

  it("walks up from the current directory to the nearest project, as git finds .git", async () => {
    const top = await tempDir();
    const home = await tempDir();
    const outer = await writeConfig(join(top, ".the-loop", "cli-config.yaml"));
    const deep = join(top, "src", "deep");
    await mkdir(deep, { recursive: true });
    expect(await discoverConfig({ env: {}, cwd: deep, homeDir: home })).toEqual({ path: outer, origin: "project" });
    const inner = await writeConfig(join(top, "src", ".the-loop", "cli-config.yaml"));
    expect(await discoverConfig({ env: {}, cwd: deep, homeDir: home })).toEqual({ path: inner, origin: "project" });
    // A `.the-loop` folder without a config is no project: the walk goes on past it.
    await mkdir(join(deep, ".the-loop"));
    expect(await discoverConfig({ env: {}, cwd: deep, homeDir: home })).toEqual({ path: inner, origin: "project" });
    const loaded = await loadConfig({ env: {}, cwd: deep, homeDir: home });
    expect(loaded.baseDir).toBe(join(top, "src"));
    expect(loaded.paths.root).toBe(join(top, "src", "state"));
  });

  it("does not take the home directory's config for a project's, but keeps it as the last fallback", async () => {
    const home = await tempDir();
    const inHome = await writeConfig(join(home, ".the-loop", "cli-config.yaml"));
    const below = join(home, "code", "app");
    await mkdir(below, { recursive: true });
    expect(await discoverConfig({ env: {}, cwd: below, homeDir: home })).toEqual({ path: inHome, origin: "home" });
    // Run in the home directory itself, it is that directory's own config.
    expect(await discoverConfig({ env: {}, cwd: home, homeDir: home })).toEqual({ path: inHome, origin: "project" });
    const project = await writeConfig(join(home, "code", ".the-loop", "cli-config.yaml"));
    expect(await discoverConfig({ env: {}, cwd: below, homeDir: home })).toEqual({ path: project, origin: "project" });
  });

  it.each<[string, string, string, string | undefined]>([
    ["the current directory's own config", "project", "/p", undefined],
    ["a project found above", "project", "/p/src/deep", "using /p/.the-loop/cli-config.yaml"],
    ["the home directory's config", "home", "/elsewhere", "using /p/.the-loop/cli-config.yaml"],
    ["a config named by --config", "flag", "/p/src", undefined],
    ["a config named by the environment", "env", "/p/src", undefined],
  ])("says which config a command uses for %s", (_name, origin, cwd, note) => {
    const loaded = { source: { path: "/p/.the-loop/cli-config.yaml", origin: origin as "project" }, baseDir: "/p", paths: { root: "/p/.the-loop" } };
    expect(elsewhereNote(loaded as Parameters<typeof elsewhereNote>[0], cwd)).toBe(note);
  });

  it("names the state root too when it is not beside the config, and says nothing without a config", () => {
    const source = { path: "/p/.the-loop/cli-config.yaml", origin: "project" as const };
    const loaded = { source, baseDir: "/p", paths: { root: "/var/lib/loop" } } as Parameters<typeof elsewhereNote>[0];
    expect(elsewhereNote(loaded, "/p/src")).toBe("using /p/.the-loop/cli-config.yaml (state root /var/lib/loop)");
    const none = { source: { path: null, origin: "none" as const }, baseDir: "/p/src", paths: { root: "/p/src/.the-loop" } };
    expect(elsewhereNote(none as Parameters<typeof elsewhereNote>[0], "/p/src")).toBeUndefined();
  });

  it.each([
    ["a file in a .the-loop folder", "/p/.the-loop/cli-config.yaml", "/p"],
    ["a file anywhere else", "/etc/the-loop/config.yaml", "/etc/the-loop"],
  ])("resolves relative paths of %s against the documented base", (_name, path, base) => {
    expect(baseDirFor({ path, origin: "flag" }, "/somewhere/else")).toBe(base);
  });

  it("uses the current directory as the base only when there is no file", () => {
    expect(baseDirFor({ path: null, origin: "none" }, "/work/here")).toBe("/work/here");
  });

  it("derives the state root from the project directory, not the process's current directory", async () => {
    const home = await tempDir();
    await writeConfig(join(home, ".the-loop", "cli-config.yaml"), "state:\n  root: .the-loop\n");
    const cwd = await tempDir();
    const loaded = await loadConfig({ env: {}, cwd, homeDir: home });
    expect(loaded.baseDir).toBe(home);
    expect(loaded.paths.root).toBe(join(home, ".the-loop"));
  });

  it("refuses a config named by --config or the environment that does not exist", async () => {
    const cwd = await tempDir();
    await expect(loadConfig({ explicitPath: "missing.yaml", env: {}, cwd, homeDir: cwd })).rejects.toThrow(
      /missing\.yaml \(named by --config\) does not exist; create it with `the-loop init`/,
    );
    await expect(loadConfig({ env: { THE_LOOP_CLI_CONFIG: "nope.yaml" }, cwd, homeDir: cwd })).rejects.toThrow(/named by \$THE_LOOP_CLI_CONFIG/);
  });

  it("refuses a directory given as the config, with exit status 2", async () => {
    const cwd = await tempDir();
    const error = await loadConfig({ explicitPath: cwd, env: {}, cwd, homeDir: cwd }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(2);
    expect((error as ConfigError).message).toMatch(/is a directory/);
  });

  it("reports all problems of a file in one error, each with file, line and key", async () => {
    const cwd = await tempDir();
    await writeConfig(join(cwd, ".the-loop", "cli-config.yaml"), "state:\n  rooot: x\nbogus: 1\n");
    const error = (await loadConfig({ env: {}, cwd, homeDir: cwd }).catch((caught: unknown) => caught)) as ConfigError;
    expect(error.message).toBe("invalid config .the-loop/cli-config.yaml: 2 problems");
    expect(error.problems).toEqual([
      expect.stringMatching(/^\.the-loop\/cli-config\.yaml:2:3: state\.rooot: unknown key/),
      expect.stringMatching(/^\.the-loop\/cli-config\.yaml:3:1: bogus: unknown key/),
    ]);
  });
});
