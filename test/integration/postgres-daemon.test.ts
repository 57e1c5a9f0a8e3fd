import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { postgresProjects, queryRows } from "../support/postgres-project.js";
import { testProject } from "../support/project.js";

/**
 * The daemon on state.store: postgres (docs/scale.md): the real CLI and daemon on the local
 * tracker, real tmux, the fake harness, against a real PostgreSQL server. A comment starts a
 * session; `sessions list`, `why` and a stop work from the database; the records are rows, and no
 * session or control record is a file under the state root.
 */

const START = "the-loop:start-execution";
const REF = "local:demo#1";

const postgres = postgresProjects();

async function rowsOf(url: string): Promise<{ kind: string; item: string; body: Record<string, unknown> }[]> {
  return queryRows(url, "SELECT kind, item, body FROM the_loop_records WHERE body IS NOT NULL ORDER BY kind, item");
}

/** Every `.json` file under `dir`, recursively (relative paths). */
function jsonFiles(dir: string, prefix = ""): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? jsonFiles(join(dir, entry.name), `${prefix}${entry.name}/`) : entry.name.endsWith(".json") ? [`${prefix}${entry.name}`] : [],
  );
}

describe("the daemon on PostgreSQL (real tmux, the fake harness, a real server)", () => {
  it("starts a session from a comment, lists it, explains it and stops it, with every record a row", async () => {
    const url = await postgres.database();
    const p = await postgres.project({ routing: { control: { requireStartCommand: true } }, state: { store: "postgres", url } });
    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");

    expect((await p.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"])).code).toBe(0);
    expect((await p.cli(["item", "comment", "#1", START, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === REF);

    const listed = await p.cli(["sessions", "list", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    const list = jsonOf<{ sessions: { workItem: { ref: string }; status: string; control: { command: string } | null }[] }>(listed);
    expect(list.sessions).toEqual([expect.objectContaining({ workItem: expect.objectContaining({ ref: REF }), status: "active" })]);
    expect(list.sessions[0]?.control?.command).toBe("start");
    const table = await p.cli(["sessions", "list"]);
    expect(table.stdout).toMatch(new RegExp(`${REF.replace(/[#]/g, "\\$&")}\\s+active`));

    const why = await p.cli(["why", "#1", "--json"]);
    expect(why.code, why.stderr).toBe(0);
    expect(jsonOf<{ state: string; daemonRunning: boolean }>(why)).toMatchObject({ state: "running", daemonRunning: true });

    const rows = await rowsOf(url);
    const session = rows.find((row) => row.kind === "sessions" && row.item === REF);
    expect(session?.body).toMatchObject({ status: "active", workItem: { ref: REF } });
    expect(rows.find((row) => row.kind === "control" && row.item === REF)?.body).toMatchObject({ command: "start", actor: "alice" });
    expect(rows.some((row) => row.kind === "document" && row.item === "poll-state")).toBe(true);

    const stopped = await p.cli(["sessions", "stop", "--work-item", "#1"]);
    expect(stopped.code, stopped.stderr + stopped.stdout).toBe(0);
    await p.waitForEvent("the close", (r) => r.event === "session.closed" && r.work_item === REF);
    const after = await rowsOf(url);
    expect(after.find((row) => row.kind === "sessions" && row.item === REF)?.body).toMatchObject({ status: "closed" });
    expect(after.find((row) => row.kind === "control" && row.item === REF)?.body).toMatchObject({ command: "stop" });
    const closed = jsonOf<{ sessions: { status: string }[] }>(await p.cli(["sessions", "list", "--json"]));
    expect(closed.sessions.map((record) => record.status)).toEqual(["closed"]);

    // The state root keeps only what stays on the host: no session, control, graph, queue or poll record is a file.
    const files = jsonFiles(p.root).filter((file) => !file.startsWith("tracker/") && !file.startsWith("cache/"));
    expect(files.filter((file) => /^(sessions|graphs|queue|budget)\//.test(file))).toEqual([]);
    expect(files).not.toContain("sessions/poll-state.json");
    // The local tracker's project is in the database too.
    expect(files.filter((file) => file.startsWith("tracker/"))).toEqual([]);
  }, 90_000);

  it("shares a local project between two state roots on one database: an item opened from one is listed and routed from the other", async () => {
    const url = await postgres.database();
    const p = await postgres.project({ routing: { control: { requireStartCommand: true } }, state: { store: "postgres", url } });
    const other = await testProject({ state: { store: "postgres", url } });
    try {
      expect((await p.cli(["start", "--json"])).code).toBe(0);
      await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
      const opened = await other.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"]);
      expect(opened.code, opened.stderr).toBe(0);
      const listed = jsonOf<{ ref: string; title: string }[]>(await p.cli(["item", "list", "--json"]));
      expect(listed.map((item) => [item.ref, item.title])).toEqual([[REF, "Add a health check"]]);
      expect((await other.cli(["item", "comment", "#1", START, "--as", "alice"])).code).toBe(0);
      await p.waitForEvent("the spawn from the other root's comment", (r) => r.event === "session.spawned" && r.work_item === REF);
      expect((await p.cli(["sessions", "stop", "--work-item", "#1"])).code).toBe(0);
    } finally {
      await other.cleanup();
    }
  }, 90_000);
});
