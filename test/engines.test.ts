import { readFile } from "node:fs/promises";
import { join } from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/cli.js";

/**
 * `npm ci` shows no engine warning on any Node that `engines` admits (docs/architecture.md,
 * "Dependencies"): every package the lockfile installs, development tools included, admits the
 * lowest version of each major line the range names.
 */

interface Lockfile {
  readonly packages: Record<string, { readonly version?: string; readonly engines?: { readonly node?: string } | readonly string[] }>;
}

async function json<T>(file: string): Promise<T> {
  return JSON.parse(await readFile(join(REPO_ROOT, file), "utf8")) as T;
}

describe("the engines range", () => {
  it("is admitted by every package of the lockfile", async () => {
    const range = (await json<{ engines: { node: string } }>("package.json")).engines.node;
    // The lowest release of each line the range admits: 20.18.1 and 22.0.0 for `^20.18.1 || >=22`.
    const lowest = range.split("||").map((part) => semver.minVersion(part.trim())?.version);
    expect(lowest).toEqual(["20.18.1", "22.0.0"]);
    const lock = await json<Lockfile>("package-lock.json");
    const refusing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const wanted = entry.engines !== undefined && !Array.isArray(entry.engines) ? (entry.engines as { node?: string }).node : undefined;
      if (path === "" || wanted === undefined) continue;
      for (const node of lowest) {
        if (node !== undefined && !semver.satisfies(node, wanted))
          refusing.push(`${path.replace(/^.*node_modules\//, "")}@${entry.version ?? "?"} wants node ${wanted} (not ${node})`);
      }
    }
    expect(refusing).toEqual([]);
  });
});
