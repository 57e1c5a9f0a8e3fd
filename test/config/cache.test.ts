import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cacheFileFor } from "../../src/config/cache.js";
import { ConfigError, loadConfig } from "../../src/config/load.js";
import { tempDir } from "../support/temp.js";

async function project(text: string): Promise<{ cwd: string; file: string; env: NodeJS.ProcessEnv }> {
  const cwd = await tempDir();
  await mkdir(join(cwd, ".the-loop"));
  const file = join(cwd, ".the-loop", "cli-config.yaml");
  await writeFile(file, text);
  return { cwd, file, env: { XDG_CACHE_HOME: join(cwd, "xdg-cache") } };
}

describe("the validated-config cache", () => {
  it("keeps a valid config in the user's cache folder and answers from it while the file is unchanged", async () => {
    const { cwd, file, env } = await project("routing:\n  authorizedUsers: [alice]\n");
    const first = await loadConfig({ cwd, env, homeDir: cwd });
    const cacheFile = cacheFileFor(file, env, cwd);
    expect(cacheFile.startsWith(join(cwd, "xdg-cache", "the-loop", "config"))).toBe(true);
    expect(JSON.parse(await readFile(cacheFile, "utf8"))).toMatchObject({ config: { routing: { authorizedUsers: ["alice"] } } });

    // Poison the cached config: an answer from the cache shows the poison.
    const entry = JSON.parse(await readFile(cacheFile, "utf8")) as { config: { routing: { authorizedUsers: string[] } } };
    entry.config.routing.authorizedUsers = ["from-cache"];
    await writeFile(cacheFile, JSON.stringify(entry));
    const second = await loadConfig({ cwd, env, homeDir: cwd });
    expect(second.config.routing.authorizedUsers).toEqual(["from-cache"]);
    expect(second.paths).toEqual(first.paths);
  });

  it("parses again as soon as the file's text changes", async () => {
    const { cwd, file, env } = await project("routing:\n  authorizedUsers: [alice]\n");
    await loadConfig({ cwd, env, homeDir: cwd });
    await writeFile(file, "routing:\n  authorizedUsers: [bob]\n");
    expect((await loadConfig({ cwd, env, homeDir: cwd })).config.routing.authorizedUsers).toEqual(["bob"]);
  });

  it("keeps the warnings with the config, and never caches an invalid config", async () => {
    const legacy = await project("webhooks:\n  ghWebhook:\n    routing:\n      authorizedUsers: [alice]\n");
    await loadConfig({ cwd: legacy.cwd, env: legacy.env, homeDir: legacy.cwd });
    const again = await loadConfig({ cwd: legacy.cwd, env: legacy.env, homeDir: legacy.cwd });
    expect(again.warnings.map((warning) => warning.path)).toEqual(["webhooks.ghWebhook.routing"]);

    const broken = await project("routing:\n  authorizedUsers: alice\n");
    for (let attempt = 0; attempt < 2; attempt++) {
      await expect(loadConfig({ cwd: broken.cwd, env: broken.env, homeDir: broken.cwd })).rejects.toThrow(ConfigError);
    }
    await expect(readdir(join(broken.cwd, "xdg-cache"))).rejects.toThrow();
  });

  it.each<[string, (entry: Record<string, unknown>) => unknown]>([
    ["warnings that are not a list", (entry) => ({ ...entry, warnings: "none" })],
    ["a warning without a message", (entry) => ({ ...entry, warnings: [{ path: "x" }] })],
    ["a config that is a list", (entry) => ({ ...entry, config: [] })],
    ["a key that is a number", (entry) => ({ ...entry, key: 1 })],
    ["a list for the entry", (entry) => [entry]],
  ])("parses the file again when the cached entry holds %s", async (_, damage) => {
    const { cwd, file, env } = await project("routing:\n  authorizedUsers: [alice]\n");
    await loadConfig({ cwd, env, homeDir: cwd });
    const cacheFile = cacheFileFor(file, env, cwd);
    const entry: unknown = JSON.parse(await readFile(cacheFile, "utf8"));
    const poisoned = { ...(entry as Record<string, unknown>), config: { routing: { authorizedUsers: ["from-cache"] } } };
    await writeFile(cacheFile, JSON.stringify(damage(poisoned)));
    expect((await loadConfig({ cwd, env, homeDir: cwd })).config.routing.authorizedUsers).toEqual(["alice"]);
  });

  it("carries on without a cache when the cache folder cannot be written", async () => {
    const { cwd, env } = await project("routing:\n  authorizedUsers: [alice]\n");
    await writeFile(join(cwd, "xdg-cache"), "a file where the folder should be");
    expect((await loadConfig({ cwd, env, homeDir: cwd })).config.routing.authorizedUsers).toEqual(["alice"]);
  });
});
