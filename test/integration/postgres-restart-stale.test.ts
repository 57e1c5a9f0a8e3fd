import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { queryRows } from "../support/postgres-project.js";
import { postgresServer } from "../support/postgres.js";
import { hasTmuxSession, lostHostProject, startedDaemon } from "../support/lost-host.js";
import { waitFor } from "../support/wait.js";

/**
 * A daemon back after `kill -9` closes its own stale tmux session (docs/scale.md, "Losing a host:
 * fencing"): two real daemons on two state roots and two tmux servers, one real PostgreSQL server,
 * the fake harness as the agent. A runs item #1; A and its watchdog are killed with SIGKILL, so
 * A's tmux session of #1 survives; B adopts #1 and stops its own session of it, keeping the lease
 * a while. A restarts: with no live record of #1 left, its start still finds B's lease, closes
 * its own session of #1 and records lease.lost.
 */

const run = promisify(execFile);
const server = postgresServer();
const START = "the-loop:start-execution";

/** The watchdogs the daemon started: its children running the shipped watchdog program. */
async function watchdogsOf(pid: number): Promise<number[]> {
  const { stdout } = await run("ps", ["-o", "pid=,args=", "--ppid", String(pid)]).catch(() => ({ stdout: "" }));
  return stdout
    .split("\n")
    .filter((line) => line.includes("watchdog-main"))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

describe("a daemon back after kill -9 (two real daemons, real tmux, a real server)", () => {
  it("closes its own tmux session of an item another daemon took meanwhile, and records lease.lost", async () => {
    const url = await server.freshDatabase();
    const a = await lostHostProject(url, "box-a");
    const pid = await startedDaemon(a, "A");
    expect((await a.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"])).code).toBe(0);
    expect((await a.cli(["item", "comment", "#1", START, "--as", "alice"])).code).toBe(0);
    await a.waitForEvent("#1 on A", (r) => r.event === "session.spawned" && r.work_item === "local:demo#1");
    const oldTarget = await waitFor("A's record of #1", async () => {
      const rows = await queryRows<{ body: { tmuxTarget: string } }>(
        url,
        "SELECT body FROM the_loop_records WHERE kind = 'sessions' AND item = 'local:demo#1' AND body IS NOT NULL",
      );
      return rows[0]?.body.tmuxTarget;
    });
    expect(await hasTmuxSession(a.socketName, oldTarget)).toBe(true);
    const watchdogs = await waitFor("A's watchdog of #1", async () => {
      const found = await watchdogsOf(pid);
      return found.length > 0 && found;
    });

    // B joins; A and its watchdog are killed -9: A's tmux session of #1 runs on, unfenced.
    const b = await lostHostProject(url, "box-b");
    expect((await b.cli(["start", "--json"])).code).toBe(0);
    for (const watchdog of watchdogs) process.kill(watchdog, "SIGKILL");
    process.kill(pid, "SIGKILL");

    // B adopts #1, then stops its own session of it: no live record of #1 is left, B keeps the lease.
    await b.waitForEvent("the adoption", (r) => r.event === "session.adopted" && r.work_item === "local:demo#1", 60_000);
    expect((await b.cli(["sessions", "stop", "--work-item", "#1"])).code).toBe(0);
    expect(await queryRows<{ owner: string }>(url, "SELECT owner FROM the_loop_leases WHERE item = 'local:demo#1'")).toEqual([{ owner: "box-b" }]);
    expect(await hasTmuxSession(a.socketName, oldTarget)).toBe(true);

    // A returns: `start` answers once the daemon serves, and its start closed the stale session before that.
    const back = await a.cli(["start", "--json"]);
    expect(back.code, back.stderr + back.stdout).toBe(0);
    expect(await hasTmuxSession(a.socketName, oldTarget)).toBe(false);
    const lost = (await a.events()).filter((r) => r.event === "lease.lost" && r.work_item === "local:demo#1");
    expect(lost).toEqual([expect.objectContaining({ daemon: "box-a", owner: "box-b", closed: true })]);
    expect(await queryRows<{ owner: string }>(url, "SELECT owner FROM the_loop_leases WHERE item = 'local:demo#1'")).toEqual([{ owner: "box-b" }]);
  }, 150_000);
});
