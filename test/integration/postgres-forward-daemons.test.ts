import { describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { postgresProjects, queryRows } from "../support/postgres-project.js";
import { testProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * Two real daemons on one PostgreSQL server (docs/scale.md, "Many daemons, one database: events and
 * commands reach the owner"): "box-b" polls the shared local project, "box-a" owns the item. A
 * comment that box-b reads is forwarded through the inbox, and box-a's own dispatch carries it out —
 * its router authorizes it and its tmux server runs the session; box-b starts nothing. Each
 * publishes its own capacity (routing.limits.perDaemon, 2 and 4), which `status` shows per daemon.
 */

const START = "the-loop:start-execution";
const REF = "local:demo#1";

const postgres = postgresProjects();

/** Polls the database until `sql` answers a row, for at most 20 s. */
async function waitForRow(url: string, what: string, sql: string): Promise<void> {
  await waitFor(what, async () => (await queryRows(url, sql)).length > 0, { timeoutMs: 20_000, intervalMs: 100 });
}

describe("two daemons on one database (real tmux, the fake harness, a real server)", () => {
  it("hands a comment the polling daemon read to the daemon that owns the item, which starts its session", async () => {
    const url = await postgres.database();
    const control = { requireStartCommand: true };
    const a = await postgres.project({ routing: { control, limits: { perDaemon: 2 } }, state: { store: "postgres", url, daemonName: "box-a" } });
    const b = await testProject({ routing: { control, limits: { perDaemon: 4 } }, state: { store: "postgres", url, daemonName: "box-b" } });
    try {
      // The item exists before either daemon reads the project: their baselines pass it by.
      expect((await b.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"])).code).toBe(0);
      expect((await b.cli(["start", "--json"])).code).toBe(0);
      await b.waitForEvent("box-b's baseline", (r) => r.event === "poll.baseline");
      const started = await a.cli(["start", "--json"]);
      expect(started.code, started.stderr + started.stdout).toBe(0);
      // Both started (the shared event table holds each one's daemon.started): box-a's name is in the daemons table.
      await waitForRow(url, "box-a started", "SELECT 1 FROM the_loop_daemons WHERE name = 'box-a' AND stopped_at IS NULL");
      // Each daemon's row holds its own capacity, and status on either host shows each one's.
      expect(await queryRows(url, "SELECT name, capacity FROM the_loop_daemons ORDER BY name")).toEqual([
        { name: "box-a", capacity: { perDaemon: 2 } },
        { name: "box-b", capacity: { perDaemon: 4 } },
      ]);
      const status = jsonOf<{ daemons: { name: string; capacity: unknown }[] }>(await b.cli(["status", "--json"]));
      expect(status.daemons.map((daemon) => [daemon.name, daemon.capacity])).toEqual([
        ["box-a", { perDaemon: 2 }],
        ["box-b", { perDaemon: 4 }],
      ]);
      // box-a owns the item (as after a start of its own): its heartbeat renews the lease.
      await queryRows(
        url,
        `INSERT INTO the_loop_leases (item, owner, expires_at) VALUES ('${REF}', 'box-a', now() + interval '5 minutes')
         ON CONFLICT (item) DO UPDATE SET owner = 'box-a', expires_at = EXCLUDED.expires_at`,
      );
      expect((await b.cli(["item", "comment", "#1", START, "--as", "alice"])).code).toBe(0);
      const sent = await a.waitForEvent("box-b forwards the comment", (r) => r.event === "forward.sent" && r.daemon === "box-b" && r.work_item === REF);
      expect(sent).toMatchObject({ daemon: "box-b", owner: "box-a", kind: "event", outcome: "recorded" });
      await a.waitForEvent("box-a takes it", (r) => r.event === "forward.received" && r.daemon === "box-a" && r.from === "box-b");
      await a.waitForEvent("box-a's spawn", (r) => r.event === "session.spawned" && r.work_item === REF, 30_000);
      // Started by box-a alone: its lease is the item's, and box-b refused nothing it did not forward.
      expect(await queryRows(url, `SELECT owner FROM the_loop_leases WHERE item = '${REF}'`)).toEqual([{ owner: "box-a" }]);
      const spawns = await queryRows(url, "SELECT 1 FROM the_loop_events WHERE event = 'session.spawned'");
      expect(spawns).toHaveLength(1);
      expect(await queryRows(url, "SELECT 1 FROM the_loop_events WHERE event = 'lease.refused'")).toEqual([]);
      expect((await a.cli(["sessions", "stop", "--work-item", "#1"])).code).toBe(0);
      await a.waitForEvent("the close", (r) => r.event === "session.closed" && r.work_item === REF);
    } finally {
      await b.cleanup();
    }
  }, 120_000);
});
