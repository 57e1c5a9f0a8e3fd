import { readFile, readdir, stat } from "node:fs/promises";
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";

/**
 * The state root is its user's alone after a daemon run: the root and the folders the-loop keeps
 * in it 0700, the event log, the tracker's files and the records 0600 — whatever the umask, and
 * for a root an older version left 0755, tightened at the daemon's start and said so.
 */

let project: TestProject | undefined;
afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

async function modeOf(path: string): Promise<string> {
  return ((await stat(path)).mode & 0o777).toString(8).padStart(4, "0");
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

describe("the state root's permissions (real daemon)", () => {
  it("are 0700 / 0600 after a run, an older 0755 root tightened at start", async () => {
    const p = (project = await testProject());
    // As an older version left it: open to others, with a record in it others could read.
    chmodSync(p.root, 0o755);
    expect((await p.cli(["item", "new", "Before", "--as", "alice"])).code).toBe(0);
    for (const file of await filesUnder(join(p.root, "tracker"))) chmodSync(file, 0o644);

    const started = await p.cli(["start"]);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Modes", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    expect((await p.cli(["stop"])).code).toBe(0);

    expect(await modeOf(p.root)).toBe("0700");
    for (const dir of ["logs", "tracker", "sessions", "bin", "tmp"]) expect([dir, await modeOf(join(p.root, dir))]).toEqual([dir, "0700"]);
    const eventLog = join(p.root, "logs", "events.jsonl");
    expect(await modeOf(eventLog)).toBe("0600");
    expect(await modeOf(join(p.root, "logs", "daemon.out"))).toBe("0600");
    const kept = [...(await filesUnder(join(p.root, "tracker"))), ...(await filesUnder(join(p.root, "sessions")))];
    expect(kept.length).toBeGreaterThan(2);
    for (const file of kept) expect([file, await modeOf(file)]).toEqual([file, "0600"]);
    // The project's own config beside the state is left as it is.
    expect(await modeOf(join(p.root, "cli-config.yaml"))).toBe("0644");

    const daemonOut = await readFile(join(p.root, "logs", "daemon.out"), "utf8");
    expect(daemonOut).toContain(`the state root ${p.root} was open to others (mode 0755), as older versions made it: it is 0700 now`);
  }, 60_000);
});
