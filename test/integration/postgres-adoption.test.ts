import { describe, expect, it } from "vitest";
import { watchdogReactionMs } from "../../src/fleet/adopt-decide.js";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { queryRows } from "../support/postgres-project.js";
import { postgresServer } from "../support/postgres.js";
import { hasTmuxSession, LOST_HOST, lostHostProject, startedDaemon } from "../support/lost-host.js";
import { waitFor } from "../support/wait.js";

/**
 * Losing a host (docs/scale.md): two real daemons on two state roots, two tmux servers and one
 * real PostgreSQL server, the fake harness as the agent. Daemon A runs item #1 and has #2
 * paused; A is killed with `kill -9` (its process only). A's watchdog ends #1's harness within
 * the lease and its reaction time; once the lease and the grace have passed, daemon B adopts #1 —
 * a new session on B whose boot prompt says it was adopted and holds the transcript tail, a marked
 * comment, session.adopted — and leaves #2 paused.
 */

const server = postgresServer();
const START = "the-loop:start-execution";

interface SessionRow {
  item: string;
  body: { status: string; tmuxTarget: string; closeReason?: string; harnessSessionId: string };
}

describe("adoption of a lost daemon's items (two real daemons, real tmux, a real server)", () => {
  it("fences A's harness after kill -9, and B adopts its active item with the transcript tail, leaving the paused one paused", async () => {
    const url = await server.freshDatabase();
    const a = await lostHostProject(url, "box-a");
    const pid = await startedDaemon(a, "A");
    for (const title of ["Add a health check", "Tidy the docs"]) {
      expect((await a.cli(["item", "new", title, "--label", ARM, "--as", "alice"])).code).toBe(0);
    }
    for (const item of ["#1", "#2"]) expect((await a.cli(["item", "comment", item, START, "--as", "alice"])).code).toBe(0);
    await a.waitForEvent("#1 on A", (r) => r.event === "session.spawned" && r.work_item === "local:demo#1");
    await a.waitForEvent("#2 on A", (r) => r.event === "session.spawned" && r.work_item === "local:demo#2");
    expect((await a.cli(["sessions", "pause", "--work-item", "#2", "--no-comment"])).code).toBe(0);

    // The tail of #1's pane is in the database, and redacted: the URL (a secret) is nowhere in it.
    const tail = await waitFor(
      "#1's transcript tail",
      async () => (await queryRows<{ tail: string }>(url, "SELECT tail FROM the_loop_transcript_tails WHERE item = 'local:demo#1'"))[0]?.tail,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(tail).toContain("fake-harness: ready");
    const before = (await queryRows<SessionRow>(url, "SELECT item, body FROM the_loop_records WHERE kind = 'sessions' AND body IS NOT NULL")).find(
      (row) => row.item === "local:demo#1",
    );
    const oldTarget = before?.body.tmuxTarget ?? "";
    expect(await hasTmuxSession(a.socketName, oldTarget)).toBe(true);

    // B joins; A is killed -9 (its process only): its tmux server and harnesses run on.
    const b = await lostHostProject(url, "box-b");
    expect((await b.cli(["start", "--json"])).code).toBe(0);
    process.kill(pid, "SIGKILL");
    const killedAt = Date.now();

    // A's watchdog ends #1's harness within the lease and its reaction time.
    await waitFor("A's harness of #1 ended", async () => !(await hasTmuxSession(a.socketName, oldTarget)), {
      timeoutMs: LOST_HOST.leaseSeconds * 1000 + watchdogReactionMs(LOST_HOST.killGraceSeconds * 1000) + 2_000,
      intervalMs: 200,
    });
    const fencedMs = Date.now() - killedAt;

    // B adopts #1 after the lease and the grace.
    const adopted = await b.waitForEvent("the adoption", (r) => r.event === "session.adopted" && r.work_item === "local:demo#1", 60_000);
    expect(adopted).toMatchObject({ daemon: "box-b", from: "box-a", started: true });
    expect(Date.now() - killedAt).toBeGreaterThan(fencedMs);
    // Its new session started before the adoption was recorded: the second spawn of #1.
    expect((await b.events()).filter((r) => r.event === "session.spawned" && r.work_item === "local:demo#1")).toHaveLength(2);
    const boot = await waitFor("the boot line of B's harness", async () => (await b.transcript()).find((entry) => entry.type === "boot"), {
      timeoutMs: 15_000,
      intervalMs: 200,
    });
    const prompt = boot?.argv?.join(" ") ?? "";
    expect(prompt).toContain("This session was adopted");
    expect(prompt).toContain('the daemon "box-a"');
    expect(prompt).toContain("fake-harness: ready");
    expect(prompt).not.toContain(url);

    const rows = await queryRows<SessionRow>(url, "SELECT item, body FROM the_loop_records WHERE kind = 'sessions' AND body IS NOT NULL");
    const one = rows.find((row) => row.item === "local:demo#1");
    expect(one?.body.status).toBe("active");
    expect(one?.body.tmuxTarget).not.toBe(oldTarget);
    expect(await hasTmuxSession(b.socketName, one?.body.tmuxTarget ?? "")).toBe(true);
    const lease = await queryRows<{ owner: string }>(url, "SELECT owner FROM the_loop_leases WHERE item = 'local:demo#1'");
    expect(lease).toEqual([{ owner: "box-b" }]);

    const comments = jsonOf<{ comments: { body: string }[] }>(await b.cli(["item", "show", "#1", "--json"])).comments;
    expect(comments.some((comment) => comment.body.includes("`box-b` adopted it"))).toBe(true);

    // The paused item stays paused, and is not adopted.
    expect(rows.find((row) => row.item === "local:demo#2")?.body.status).toBe("paused");
    const events = await b.events();
    expect(events.filter((r) => r.event === "session.adopted").map((r) => r.work_item)).toEqual(["local:demo#1"]);

    // A returns: its own session of #1 is gone, B keeps the item, and A runs nothing of it.
    const back = await a.cli(["start", "--json"]);
    expect(back.code, back.stderr + back.stdout).toBe(0);
    // `start` answers once the daemon serves: its start went over the live sessions (the reclaim) before that.
    expect(await hasTmuxSession(a.socketName, oldTarget)).toBe(false);
    expect(await queryRows<{ owner: string }>(url, "SELECT owner FROM the_loop_leases WHERE item = 'local:demo#1'")).toEqual([{ owner: "box-b" }]);
    expect(await hasTmuxSession(b.socketName, one?.body.tmuxTarget ?? "")).toBe(true);
    expect((await b.cli(["sessions", "stop", "--work-item", "#1"])).code).toBe(0);
  }, 150_000);
});
