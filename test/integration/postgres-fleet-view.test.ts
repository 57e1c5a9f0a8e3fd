import { hostname } from "node:os";
import { appendFile, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { SessionRegistry } from "../../src/registry/registry.js";
import { openRecordBackend } from "../../src/state/backend.js";
import type { RecordBackend } from "../../src/state/backend.js";
import { PostgresLeases } from "../../src/state/postgres/leases.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { RESPONSE_SCHEMAS } from "../../src/dashboard/schemas.js";
import { sessionRecord } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { postgresProjects, queryRows } from "../support/postgres-project.js";
import { waitFor } from "../support/wait.js";

/**
 * The operator's view across hosts (docs/scale.md): with two daemons on one real PostgreSQL
 * server — one on this host, one on another whose heartbeat is late — the built CLI's `sessions
 * list` names each session's daemon and host, `status` lists both daemons, each against its own
 * capacity, and makes the late one a problem, and `sessions attach` to the other host's session
 * prints the ssh command to run.
 */

const postgres = postgresProjects();
const backends: RecordBackend[] = [];

afterEach(async () => {
  for (const backend of backends.splice(0)) await backend.close();
});

const localItem = (number: number): WorkItem => ({
  ref: `local:demo#${number}`,
  tracker: "local",
  host: "local",
  repository: "demo",
  number,
  kind: "issue",
  url: "",
  id: `item-${number}`,
});

interface Seeded {
  readonly url: string;
  readonly targets: readonly string[];
}

/**
 * Two sessions on the database: #1 under the daemon "box-a" on this host, #2 under "box-b" on
 * far.example, silent for a minute; each daemon's row with its own routing.limits.perDaemon (3, 5).
 */
async function seedFleet(url: string, root: string): Promise<Seeded> {
  const backend = await openRecordBackend({ store: "postgres", url, name: "test" });
  backends.push(backend);
  const registry = new SessionRegistry({ dir: join(root, "sessions"), backend });
  const targets: string[] = [];
  for (const number of [1, 2]) {
    const record = sessionRecord(localItem(number));
    targets.push(record.tmuxTarget);
    await registry.claim(localItem(number), () => record);
  }
  const database = backend.database;
  if (database === undefined) throw new Error("no database");
  const leases = new PostgresLeases(database.pool);
  const daemons = [
    { name: "box-a", host: hostname(), tmuxSocket: "sock-a", item: "local:demo#1", perDaemon: 3 },
    { name: "box-b", host: "far.example", tmuxSocket: "sock-b", item: "local:demo#2", perDaemon: 5 },
  ];
  for (const daemon of daemons) {
    await leases.claimName(daemon.name, () => ({
      write: {
        name: daemon.name,
        host: daemon.host,
        pid: 4242,
        instance: `${daemon.name}-1`,
        tmuxSocket: daemon.tmuxSocket,
        capacity: { perDaemon: daemon.perDaemon },
      },
      answer: undefined,
    }));
    await leases.decideLease(daemon.item, 300_000, () => ({ write: { owner: daemon.name }, answer: undefined }));
  }
  await queryRows(url, "UPDATE the_loop_daemons SET heartbeat_at = now() - interval '60 seconds' WHERE name = 'box-b'");
  return { url, targets };
}

describe("the operator's view across hosts (a real server, the built CLI)", () => {
  it("lists each session's daemon and host, every daemon in status with the late one a problem, and prints the ssh attach for the other host", async () => {
    const url = await postgres.database();
    const p = await postgres.project({ state: { store: "postgres", url }, routing: { limits: { perDaemon: 2, maxLiveSessions: 8 } } });
    const { targets } = await seedFleet(url, p.root);

    const listed = await p.cli(["sessions", "list", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    const list = jsonOf<{ sessions: { workItem: { ref: string }; daemon: string | null; host: string | null }[]; daemons: { name: string }[] }>(listed);
    expect(list.sessions.map((session) => [session.workItem.ref, session.daemon, session.host])).toEqual([
      ["local:demo#1", "box-a", hostname()],
      ["local:demo#2", "box-b", "far.example"],
    ]);
    expect(list.daemons.map((daemon) => daemon.name)).toEqual(["box-a", "box-b"]);
    const table = await p.cli(["sessions", "list"]);
    expect(table.stdout).toMatch(/daemon\s+host/);
    expect(table.stdout).toMatch(/local:demo#2\s+active.*box-b\s+far\.example/);

    // A daemon that ran before daemons wrote their capacity (its row has none): status does not guess it.
    await queryRows(url, "INSERT INTO the_loop_daemons (name, host, pid, instance) VALUES ('box-old', 'old.example', 4242, 'box-old-1')");
    // A change row of the database's local tracker that does not read: status names the row, not a file.
    await queryRows(url, `INSERT INTO the_loop_tracker_journal (project, seq, number, line) VALUES ('demo', 1, 1, '{"not":"a change"}')`);
    const status = await p.cli(["status", "--json"]);
    const report = jsonOf<{
      daemons: {
        name: string;
        host: string;
        late: boolean;
        leases: number;
        heartbeatAgeSeconds: number;
        liveSessions: number;
        capacity: { perDaemon: number | null } | null;
      }[];
      fleetSessions: { live: number; maxLiveSessions?: number };
      problems: { code: string; message: string }[];
    }>(status);
    // Each daemon against its own capacity, not this config's perDaemon (2).
    expect(report.daemons.map((daemon) => [daemon.name, daemon.host, daemon.late, daemon.leases, daemon.liveSessions, daemon.capacity])).toEqual([
      ["box-a", hostname(), false, 1, 1, { perDaemon: 3 }],
      ["box-b", "far.example", true, 1, 1, { perDaemon: 5 }],
      ["box-old", "old.example", false, 0, 0, null],
    ]);
    expect(report.fleetSessions).toEqual({ live: 2, maxLiveSessions: 8 });
    expect(report.daemons[1]?.heartbeatAgeSeconds).toBeGreaterThanOrEqual(59);
    const late = report.problems.filter((problem) => problem.code === "daemon-late");
    expect(late).toHaveLength(1);
    expect(late[0]?.message).toMatch(/the daemon "box-b" on far\.example \(pid 4242\) has not sent a heartbeat for \d+ s/);
    const damaged = report.problems.filter((problem) => problem.code === "damaged-file");
    expect(damaged).toHaveLength(1);
    expect(damaged[0]?.message).toMatch(/the_loop_tracker_journal\(demo, seq 1\).*a change is not a change record/);
    const text = await p.cli(["status"]);
    expect(text.stdout).toMatch(/daemons on the state database:/);
    expect(text.stdout).toMatch(/leases\s+sessions/);
    expect(text.stdout).toMatch(/box-a\s+\S+\s+4242\s+\d+ s ago\s+1\s+1 of 3/);
    expect(text.stdout).toMatch(/box-b\s+far\.example\s+4242\s+\d+ s ago \(late\)\s+1\s+1 of 5/);
    expect(text.stdout).toMatch(/box-old\s+old\.example\s+4242\s+\d+ s ago\s+0\s+0 \(capacity unknown\)/);
    expect(text.stdout).toContain("live sessions across the fleet: 2 of 8 (routing.limits.maxLiveSessions)");

    const attach = await p.cli(["sessions", "attach", "--work-item", "local:demo#2"]);
    expect(attach.code, attach.stderr).toBe(0);
    expect(attach.stdout.trim()).toBe(`ssh -t far.example tmux -L sock-b attach -t =${targets[1] ?? ""}`);
    expect(attach.stderr).toMatch(/runs on far\.example \(the daemon "box-b"\), not on this host/);
    const asJson = jsonOf<{ here: boolean; host: string; command: string[] }>(
      await p.cli(["sessions", "attach", "--work-item", "local:demo#2", "--read-only", "--json"]),
    );
    expect(asJson).toMatchObject({ here: false, host: "far.example" });
    expect(asJson.command).toEqual(["ssh", "-t", "far.example", "tmux", "-L", "sock-b", "attach", "-r", "-t", `=${targets[1] ?? ""}`]);
  }, 90_000);

  it("gives the dashboard's items and sessions their daemon and host, and marks the other host's terminal as not available here", async () => {
    const url = await postgres.database();
    const p = await postgres.project({ state: { store: "postgres", url } });
    await appendFile(join(p.root, "cli-config.yaml"), "dashboard:\n  enabled: true\n");
    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    await seedFleet(url, p.root);
    // A local item of the database's tracker: the board names it by its title, read there.
    expect((await p.cli(["item", "new", "Add a health check", "--as", "alice"])).code).toBe(0);

    const base = jsonOf<{ dashboard: { url: string } }>(await p.cli(["status", "--json"])).dashboard.url;
    const login = new URL(jsonOf<{ url: string }>(await p.cli(["dashboard", "--json"])).url);
    const admitted = await fetch(login, { redirect: "manual" });
    expect(admitted.status).toBe(303);
    const cookie = (admitted.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
    const get = (path: string): Promise<Response> => fetch(new URL(path, base), { headers: { cookie } });

    const items = RESPONSE_SCHEMAS["GET /api/v1/items"].parse(await (await get("/api/v1/items")).json());
    expect(items.items.map((item) => [item.ref, item.runsOn]).sort()).toEqual([
      ["local:demo#1", { daemon: "box-a", host: hostname(), here: true }],
      ["local:demo#2", { daemon: "box-b", host: "far.example", here: false }],
    ]);
    expect(items.items.find((item) => item.ref === "local:demo#1")?.title).toBe("Add a health check");
    const sessions = RESPONSE_SCHEMAS["GET /api/v1/sessions"].parse(await (await get("/api/v1/sessions")).json());
    expect(sessions.sessions.find((session) => session.workItem.ref === "local:demo#2")?.runsOn).toEqual({ daemon: "box-b", host: "far.example", here: false });

    const terminal = await get(`/api/v1/items/${encodeURIComponent("local:demo#2")}/terminal/stream`);
    expect(terminal.status).toBe(409);
    expect(((await terminal.json()) as { error: string }).error).toMatch(/runs on far\.example \(the daemon "box-b"\), not available here/);
    expect((await p.cli(["stop"])).code).toBe(0);
  }, 120_000);

  it("publishes a daemon's capacity at its start, and the one a config reload moves it to at its next beat", async () => {
    const url = await postgres.database();
    const p = await postgres.project({
      state: { store: "postgres", url, daemonName: "box-a", leaseSeconds: 3, heartbeatSeconds: 1 },
      routing: { limits: { perDaemon: 2 } },
    });
    const capacity = async (): Promise<unknown> =>
      (await queryRows<{ capacity: unknown }>(url, "SELECT capacity FROM the_loop_daemons WHERE name = 'box-a'"))[0]?.capacity;
    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    expect(await capacity()).toEqual({ perDaemon: 2 });
    const configFile = join(p.root, "cli-config.yaml");
    const config = parse(await readFile(configFile, "utf8")) as { routing: { limits: { perDaemon: number } } };
    config.routing.limits.perDaemon = 5;
    await writeFile(configFile, stringify(config));
    await p.waitForEvent("the reload", (r) => r.event === "config.reloaded" && JSON.stringify(r.applied).includes("routing.limits.perDaemon"));
    await waitFor("the next beat to write the new capacity", async () => JSON.stringify(await capacity()) === JSON.stringify({ perDaemon: 5 }), {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    const status = jsonOf<{ daemons: { name: string; capacity: unknown }[] }>(await p.cli(["status", "--json"]));
    expect(status.daemons.map((daemon) => [daemon.name, daemon.capacity])).toEqual([["box-a", { perDaemon: 5 }]]);
    expect((await p.cli(["stop"])).code).toBe(0);
  }, 90_000);
});
