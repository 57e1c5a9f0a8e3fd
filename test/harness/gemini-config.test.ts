import { mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  GEMINI_SETTINGS,
  ensureGeminiConfig,
  geminiSettingsFile,
  geminiTrustedFoldersFile,
  geminiTrusts,
  mergeGeminiSettings,
  mergeGeminiTrust,
} from "../../src/harness/gemini-config.js";
import { tempDir } from "../support/temp.js";

const ALL_SET = {
  security: { auth: { selectedType: "gemini-api-key" } },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
  ide: { enabled: false, hasSeenNudge: true },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
};

describe("where Gemini CLI keeps its files", () => {
  it.each([
    { env: { HOME: "/h" }, settings: "/h/.gemini/settings.json", trust: "/h/.gemini/trustedFolders.json" },
    { env: { HOME: "/h", GEMINI_CLI_HOME: "/g" }, settings: "/g/.gemini/settings.json", trust: "/g/.gemini/trustedFolders.json" },
    { env: { HOME: "/h", GEMINI_CLI_TRUSTED_FOLDERS_PATH: "/t/folders.json" }, settings: "/h/.gemini/settings.json", trust: "/t/folders.json" },
  ])("$env", ({ env, settings, trust }) => {
    expect(geminiSettingsFile(env)).toBe(settings);
    expect(geminiTrustedFoldersFile(env)).toBe(trust);
  });
});

describe("mergeGeminiSettings", () => {
  it("fills every key of an empty file", () => {
    const merge = mergeGeminiSettings({});
    expect(merge).toEqual({ changed: true, config: ALL_SET, set: GEMINI_SETTINGS.map(([path]) => path) });
  });

  it("keeps the operator's values and keys, filling only what is unset", () => {
    const config = {
      security: { auth: { selectedType: "oauth-personal" }, folderTrust: { enabled: true } },
      general: { enableAutoUpdate: true, vimMode: true },
      model: { name: "x" },
    };
    const before = JSON.stringify(config);
    const merge = mergeGeminiSettings(config);
    expect(JSON.stringify(config)).toBe(before);
    expect(merge).toMatchObject({
      changed: true,
      config: {
        security: { auth: { selectedType: "oauth-personal" }, folderTrust: { enabled: true } },
        general: { enableAutoUpdate: true, enableAutoUpdateNotification: false, vimMode: true },
        ide: { enabled: false, hasSeenNudge: true },
        model: { name: "x" },
      },
    });
    expect("set" in merge && merge.set).not.toContain("security.auth.selectedType");
  });

  it("is unchanged when every key is set", () => {
    expect(mergeGeminiSettings(structuredClone(ALL_SET))).toEqual({ changed: false });
  });

  it("refuses a key on the way that is not an object", () => {
    expect(mergeGeminiSettings({ ide: true })).toEqual({ refused: expect.stringContaining("ide holds true") as string });
  });
});

describe("geminiTrusts, as Gemini reads its rules", () => {
  it.each([
    { rules: {}, dir: "/w/a", trusted: undefined },
    { rules: { "/w/a": "TRUST_FOLDER" }, dir: "/w/a", trusted: true },
    { rules: { "/w": "TRUST_FOLDER" }, dir: "/w/a/b", trusted: true },
    { rules: { "/w/a/x": "TRUST_PARENT" }, dir: "/w/a/b", trusted: true },
    { rules: { "/w": "TRUST_FOLDER", "/w/a": "DO_NOT_TRUST" }, dir: "/w/a/b", trusted: false },
    { rules: { "/w": "DO_NOT_TRUST", "/w/a": "TRUST_FOLDER" }, dir: "/w/a", trusted: true },
    { rules: { "/w/ab": "TRUST_FOLDER" }, dir: "/w/a", trusted: undefined },
  ])("$rules for $dir: $trusted", ({ rules, dir, trusted }) => {
    expect(geminiTrusts(rules, dir)).toBe(trusted);
  });
});

describe("mergeGeminiTrust", () => {
  it.each([
    { name: "an empty file", rules: {}, result: { changed: true, config: { "/w/a": "TRUST_FOLDER" }, set: ["/w/a"] } },
    {
      name: "others' rules are kept",
      rules: { "/x": "DO_NOT_TRUST" },
      result: { changed: true, config: { "/x": "DO_NOT_TRUST", "/w/a": "TRUST_FOLDER" }, set: ["/w/a"] },
    },
    { name: "a parent already trusted", rules: { "/w": "TRUST_FOLDER" }, result: { changed: false } },
    {
      name: "a distrusted parent is narrowed by a rule of its own",
      rules: { "/w": "DO_NOT_TRUST" },
      result: { changed: true, config: { "/w": "DO_NOT_TRUST", "/w/a": "TRUST_FOLDER" }, set: ["/w/a"] },
    },
  ])("$name", ({ rules, result }) => {
    expect(mergeGeminiTrust(rules, ["/w/a"])).toEqual(result);
  });

  it("leaves a folder the operator distrusted by name", () => {
    expect(mergeGeminiTrust({ "/w/a": "DO_NOT_TRUST" }, ["/w/a"])).toEqual({ refused: expect.stringContaining("DO_NOT_TRUST") as string });
  });

  it("refuses a file Gemini itself would refuse", () => {
    expect(mergeGeminiTrust({ "/w/b": "YES" }, ["/w/a"])).toEqual({ refused: expect.stringContaining('"YES"') as string });
  });

  it("writes nothing for a folder that a folder added just before covers", () => {
    expect(mergeGeminiTrust({}, ["/w", "/w/a"])).toEqual({ changed: true, config: { "/w": "TRUST_FOLDER" }, set: ["/w"] });
  });
});

describe("ensureGeminiConfig", () => {
  async function files(): Promise<{ dir: string; settingsFile: string; trustFile: string; work: string }> {
    const dir = await tempDir();
    const work = join(dir, "work");
    await mkdir(work);
    await mkdir(join(dir, ".gemini"));
    return { dir, work, settingsFile: join(dir, ".gemini", "settings.json"), trustFile: join(dir, ".gemini", "trustedFolders.json") };
  }

  it("creates both files, private, and then leaves them alone", async () => {
    const { work, settingsFile, trustFile } = await files();
    const first = await ensureGeminiConfig({ settingsFile, trustFile, dirs: [work], mcp: false });
    expect(first.trust).toMatchObject({ kind: "written", set: [work] });
    expect(first.settings.kind).toBe("written");
    expect(JSON.parse(await readFile(trustFile, "utf8"))).toEqual({ [work]: "TRUST_FOLDER" });
    expect(JSON.parse(await readFile(settingsFile, "utf8"))).toEqual(ALL_SET);
    expect((await stat(trustFile)).mode & 0o777).toBe(0o600);
    expect((await stat(settingsFile)).mode & 0o777).toBe(0o600);
    const again = await ensureGeminiConfig({ settingsFile, trustFile, dirs: [work], mcp: false });
    expect([again.trust.kind, again.settings.kind]).toEqual(["unchanged", "unchanged"]);
  });

  it("trusts a folder reached through a symlink where it really is", async () => {
    const { dir, work, settingsFile, trustFile } = await files();
    const link = join(dir, "link");
    await symlink(work, link);
    const outcome = await ensureGeminiConfig({ settingsFile, trustFile, dirs: [link], mcp: false });
    expect(outcome.dirs).toEqual([work]);
    expect(JSON.parse(await readFile(trustFile, "utf8"))).toEqual({ [work]: "TRUST_FOLDER" });
  });

  it("never rewrites a file with comments, and says what to set by hand", async () => {
    const { work, settingsFile, trustFile } = await files();
    const commented = '{\n  // the operator\'s note\n  "general": { "vimMode": true }\n}\n';
    await writeFile(settingsFile, commented);
    const outcome = await ensureGeminiConfig({ settingsFile, trustFile, dirs: [work], mcp: false });
    expect(outcome.settings).toMatchObject({ kind: "failed", error: expect.stringContaining("security.auth.selectedType") as string });
    expect(await readFile(settingsFile, "utf8")).toBe(commented);
    expect(outcome.trust.kind).toBe("written");
  });

  it("keeps the mode of a file it rewrites", async () => {
    const { work, settingsFile, trustFile } = await files();
    await writeFile(settingsFile, '{"model": {"name": "x"}}', { mode: 0o640 });
    await ensureGeminiConfig({ settingsFile, trustFile, dirs: [work], mcp: false });
    expect((await stat(settingsFile)).mode & 0o777).toBe(0o640);
    expect(JSON.parse(await readFile(settingsFile, "utf8"))).toMatchObject({ model: { name: "x" } });
  });
});
