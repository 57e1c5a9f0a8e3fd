import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect } from "vitest";
import { jsonOf } from "./cli.js";
import { testProject } from "./project.js";
import type { TestProject } from "./project.js";

/**
 * What the tests of a lost host share (docs/scale.md, "Losing a host"): a project of a named
 * daemon on a shared database with short leases — a 6 s lease, 2 s heartbeats, an 8 s grace and a
 * 1 s kill grace, so fencing and adoption happen within a test — its daemon started, and a look
 * at a tmux server's sessions.
 */

export const LOST_HOST = { leaseSeconds: 6, heartbeatSeconds: 2, adoptGraceSeconds: 8, killGraceSeconds: 1 } as const;

/** A project whose daemon is `name` on the database at `url`, starting only on a start comment. */
export function lostHostProject(url: string, name: string): Promise<TestProject> {
  const { leaseSeconds, heartbeatSeconds, adoptGraceSeconds, killGraceSeconds } = LOST_HOST;
  return testProject({
    routing: { control: { requireStartCommand: true }, tmux: { harnessKillGraceSeconds: killGraceSeconds } },
    state: { store: "postgres", url, daemonName: name, leaseSeconds, heartbeatSeconds, adoptGraceSeconds },
  });
}

/** Starts `p`'s daemon and waits for its poller's baseline; the daemon's pid. */
export async function startedDaemon(p: TestProject, label: string): Promise<number> {
  const started = await p.cli(["start", "--json"]);
  expect(started.code, started.stderr + started.stdout).toBe(0);
  await p.waitForEvent(`${label}'s baseline`, (r) => r.event === "poll.baseline");
  return jsonOf<{ pid: number }>(started).pid;
}

const run = promisify(execFile);

/** Whether the tmux server `socketName` has the session `target` (exactly that name). */
export const hasTmuxSession = (socketName: string, target: string): Promise<boolean> =>
  run("tmux", ["-L", socketName, "has-session", "-t", `=${target}`]).then(
    () => true,
    () => false,
  );
