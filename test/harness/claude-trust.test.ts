import { lstat, mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { claudeConfigFile, ensureClaudeTrust, mergeTrust, trustScope } from "../../src/harness/claude-trust.js";
import { tempDir } from "../support/temp.js";

const TRUSTED = { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true };

describe("mergeTrust", () => {
  it.each([
    { name: "an empty config", config: {}, changed: true, projects: { "/w/a": TRUSTED } },
    {
      name: "a folder Claude Code has seen but not trusted keeps its own keys",
      config: { projects: { "/w/a": { allowedTools: ["Bash"], hasTrustDialogAccepted: false } } },
      changed: true,
      projects: { "/w/a": { allowedTools: ["Bash"], ...TRUSTED } },
    },
    { name: "already right", config: { projects: { "/w/a": { ...TRUSTED, lastCost: 1 } } }, changed: false },
    {
      name: "other projects are kept",
      config: { projects: { "/elsewhere": { hasTrustDialogAccepted: false } } },
      changed: true,
      projects: { "/elsewhere": { hasTrustDialogAccepted: false }, "/w/a": TRUSTED },
    },
    { name: "projects that is not an object is replaced", config: { projects: [1] }, changed: true, projects: { "/w/a": TRUSTED } },
    {
      name: "a truthy non-boolean answer is written again",
      config: { projects: { "/w/a": { ...TRUSTED, hasTrustDialogAccepted: "yes" } } },
      changed: true,
      projects: { "/w/a": TRUSTED },
    },
  ])("$name", ({ config, changed, projects }) => {
    const before = JSON.stringify(config);
    const merge = mergeTrust(config as Record<string, unknown>, ["/w/a"]);
    expect(merge.changed).toBe(changed);
    if (merge.changed) expect(merge.config.projects).toEqual(projects);
    expect(JSON.stringify(config)).toBe(before);
  });

  it("keeps every top-level key", () => {
    const merge = mergeTrust({ hasCompletedOnboarding: true, oauthAccount: { email: "a@b" } }, ["/w/a"]);
    expect(merge.changed && merge.config).toMatchObject({ hasCompletedOnboarding: true, oauthAccount: { email: "a@b" } });
  });
});

describe("trustScope", () => {
  it.each([
    { name: "directory", scope: "directory" as const, root: "/srv/ws", dirs: ["/srv/ws/o/r/1"], narrowed: false },
    { name: "workspace-root adds the root", scope: "workspace-root" as const, root: "/srv/ws", dirs: ["/srv/ws/o/r/1", "/srv/ws"], narrowed: false },
    { name: "never the filesystem root", scope: "workspace-root" as const, root: "/", dirs: ["/srv/ws/o/r/1"], narrowed: true },
    { name: "never the home folder", scope: "workspace-root" as const, root: "/home/op", dirs: ["/srv/ws/o/r/1"], narrowed: true },
    { name: "nor the home folder spelled with a trailing slash", scope: "workspace-root" as const, root: "/home/op/", dirs: ["/srv/ws/o/r/1"], narrowed: true },
  ])("$name", ({ scope, root, dirs, narrowed }) => {
    const result = trustScope({ spawnDir: "/srv/ws/o/r/1", scope, workspaceRoot: root, home: "/home/op" });
    expect(result.dirs).toEqual(dirs);
    expect(result.narrowed !== undefined).toBe(narrowed);
  });

  it("trusts the folder as the system spells it too, when a symlink leads there", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "real"));
    await symlink(join(dir, "real"), join(dir, "link"));
    expect(trustScope({ spawnDir: join(dir, "link"), scope: "directory", home: "/nonexistent" }).dirs).toEqual([join(dir, "link"), join(dir, "real")]);
  });
});

describe("claudeConfigFile", () => {
  it("is CLAUDE_CONFIG_DIR's or HOME's .claude.json, or .config.json where that exists", async () => {
    const home = await tempDir();
    const configDir = await tempDir();
    expect(claudeConfigFile({ HOME: home })).toBe(join(home, ".claude.json"));
    expect(claudeConfigFile({ HOME: home, CLAUDE_CONFIG_DIR: configDir })).toBe(join(configDir, ".claude.json"));
    await writeFile(join(configDir, ".config.json"), "{}");
    expect(claudeConfigFile({ HOME: home, CLAUDE_CONFIG_DIR: configDir })).toBe(join(configDir, ".config.json"));
  });
});

describe("ensureClaudeTrust", () => {
  it("merges into the operator's file, atomically, keeping its mode, and leaves it alone once right", async () => {
    const home = await tempDir();
    const file = join(home, ".claude.json");
    await writeFile(file, JSON.stringify({ theme: "dark", projects: { "/x": { allowedTools: ["Edit"] } } }), { mode: 0o600 });
    expect(await ensureClaudeTrust({ file, dirs: ["/w/a"] })).toMatchObject({ kind: "written", file });
    const written = JSON.parse(await readFile(file, "utf8"));
    expect(written).toEqual({ theme: "dark", projects: { "/x": { allowedTools: ["Edit"] }, "/w/a": TRUSTED } });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const { mtimeMs } = await stat(file);
    expect(await ensureClaudeTrust({ file, dirs: ["/w/a"] })).toMatchObject({ kind: "unchanged" });
    expect((await stat(file)).mtimeMs).toBe(mtimeMs);
  });

  it("creates a missing file private", async () => {
    const file = join(await tempDir(), "cfg", ".claude.json");
    expect(await ensureClaudeTrust({ file, dirs: ["/w/a"] })).toMatchObject({ kind: "written" });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it.each([
    { name: "not JSON", text: "{ not json", error: /does not parse/ },
    { name: "not an object", text: "[1,2]", error: /does not hold a JSON object/ },
  ])("a file that is $name is reported and never overwritten", async ({ text, error }) => {
    const file = join(await tempDir(), ".claude.json");
    await writeFile(file, text);
    const outcome = await ensureClaudeTrust({ file, dirs: ["/w/a"] });
    expect(outcome.kind).toBe("failed");
    expect(outcome.kind === "failed" && outcome.error).toMatch(error);
    expect(await readFile(file, "utf8")).toBe(text);
  });

  it("writes through a symlinked file to where it points", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "dotfiles.json"), "{}");
    await symlink(join(dir, "dotfiles.json"), join(dir, ".claude.json"));
    await ensureClaudeTrust({ file: join(dir, ".claude.json"), dirs: ["/w/a"] });
    expect((await lstat(join(dir, ".claude.json"))).isSymbolicLink()).toBe(true);
    expect(JSON.parse(await readFile(join(dir, "dotfiles.json"), "utf8")).projects["/w/a"]).toEqual(TRUSTED);
  });

  it("two at once lose neither folder", async () => {
    const file = join(await tempDir(), ".claude.json");
    await writeFile(file, "{}");
    const dirs = Array.from({ length: 8 }, (_, i) => `/w/${i}`);
    await Promise.all(dirs.map((dir) => ensureClaudeTrust({ file, dirs: [dir] })));
    expect(Object.keys(JSON.parse(await readFile(file, "utf8")).projects).sort()).toEqual(dirs);
  });
});
