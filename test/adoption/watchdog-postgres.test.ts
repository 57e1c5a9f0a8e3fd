import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { startWatchdog, watchdogProgram } from "../../src/adoption/watchdog.js";
import { watchdogReactionMs } from "../../src/fleet/adopt-decide.js";
import { TmuxRunner } from "../../src/harness/tmux.js";
import { PostgresDatabase } from "../../src/state/postgres/database.js";
import { EVENTS_TABLE } from "../../src/state/postgres/event-migration.js";
import { PostgresLeases } from "../../src/state/postgres/leases.js";
import { postgresServer } from "../support/postgres.js";
import { alive } from "../support/real-agent.js";
import { waitFor } from "../support/wait.js";

/**
 * A session's watchdog on a real server and a real tmux (docs/scale.md, "Fencing"): it keeps the
 * harness while its owner renews the lease, ends it within its reaction time once the lease
 * lapsed or another daemon took it, and exits when the harness ends on its own. The URL reaches
 * it on stdin: never in its argv or environment.
 */

const run = promisify(execFile);
const cluster = postgresServer();
const ITEM = "local:demo#1";
const KILL_GRACE_MS = 500;
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setupOf(): Promise<{
  url: string;
  database: PostgresDatabase;
  leases: PostgresLeases;
  runner: TmuxRunner;
  socketName: string;
  target: string;
  dir: string;
}> {
  const url = await cluster.freshDatabase();
  const database = await PostgresDatabase.open({ url, name: "test", lockTimeoutMs: 2_000 });
  cleanups.push(() => database.close());
  const socketName = `loop-test-wd-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const runner = new TmuxRunner({ socketName, remainOnExit: false });
  const dir = await mkdtemp(join(tmpdir(), "watchdog-"));
  cleanups.push(async () => {
    // The server may be gone already: its last session ended.
    await run("tmux", ["-L", socketName, "kill-server"]).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });
  return { url, database, leases: new PostgresLeases(database.pool), runner, socketName, target: "loop-wd-demo-1", dir };
}

const take = (leases: PostgresLeases, owner: string, leaseMs: number): Promise<unknown> =>
  leases.decideLease(ITEM, leaseMs, () => ({ write: { owner }, answer: undefined }));

/** A harness (`sleep`) in tmux on the item's lease, owned by box-a for `leaseMs`, with its watchdog; the watchdog's pid. */
async function watched(setup: Awaited<ReturnType<typeof setupOf>>, leaseMs: number, logFile?: string): Promise<number> {
  const { url, leases, runner, socketName, target, dir } = setup;
  await take(leases, "box-a", leaseMs);
  await runner.spawn({ target, cwd: dir, argv: ["sleep", "600"], env: {} });
  const pid = await startWatchdog(
    { url, item: ITEM, owner: "box-a", target, socketName, killGraceMs: KILL_GRACE_MS, leaseMs, ...(logFile !== undefined ? { logFile } : {}) },
    watchdogProgram(),
  );
  cleanups.unshift(async () => {
    if (alive(pid)) process.kill(pid, "SIGKILL");
  });
  return pid;
}

/** A watchdog started, as a spawn starts it, before there is any session: on box-a's lease for `leaseMs`, waiting `appearWithinMs` for it; its pid. */
async function watchingAhead(setup: Awaited<ReturnType<typeof setupOf>>, leaseMs: number, appearWithinMs: number): Promise<number> {
  const { url, leases, socketName, target } = setup;
  await take(leases, "box-a", leaseMs);
  const pid = await startWatchdog(
    { url, item: ITEM, owner: "box-a", target, socketName, killGraceMs: KILL_GRACE_MS, leaseMs, appearWithinMs },
    watchdogProgram(),
  );
  cleanups.unshift(async () => {
    if (alive(pid)) process.kill(pid, "SIGKILL");
  });
  return pid;
}

/** The session.fenced rows the watchdogs wrote: the writer's name and the event's body. */
async function fencedRows(database: PostgresDatabase): Promise<{ host: string; body: Record<string, unknown> }[]> {
  const { rows } = await database.pool.query<{ host: string; body: Record<string, unknown> }>(
    `SELECT host, body FROM ${EVENTS_TABLE} WHERE event = 'session.fenced' ORDER BY id`,
  );
  return rows;
}

/**
 * When the watchdog's connection last started reading the lease (ms since the epoch), or
 * undefined before its first look: pg_stat_activity keeps each backend's last query and its start.
 */
async function lastLookAt(database: PostgresDatabase): Promise<number | undefined> {
  const { rows } = await database.pool.query<{ started: Date }>(
    `SELECT query_start AS started FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'the-loop watchdog box-a' AND query LIKE 'SELECT owner%'`,
  );
  return rows[0]?.started.getTime();
}

/**
 * Waits for two looks of the watchdog started after `since`, calling `meanwhile` on each poll.
 * The second proves the first kept the harness: after a verdict to end it, the watchdog writes
 * session.fenced and exits, and reads the lease no more.
 */
async function twoLooksAfter(database: PostgresDatabase, since: number, meanwhile: () => Promise<unknown> = () => Promise.resolve()): Promise<void> {
  const looks = new Set<number>();
  await waitFor(
    "two looks of the watchdog at the lease",
    async () => {
      await meanwhile();
      const at = await lastLookAt(database);
      if (at !== undefined && at > since) looks.add(at);
      return looks.size >= 2;
    },
    { timeoutMs: 20_000, intervalMs: 500 },
  );
}

const ended = (setup: Awaited<ReturnType<typeof setupOf>>) => async (): Promise<boolean> => (await setup.runner.probe(setup.target)) === "absent";

describe("a session's watchdog (a real server, real tmux)", () => {
  it("keeps the harness while the lease is renewed, and ends it within its reaction time once the lease lapsed", async () => {
    const setup = await setupOf();
    const { url, leases, runner, target, dir } = setup;
    const logFile = join(dir, "watchdog.log");
    const pid = await watched(setup, 3_000, logFile);

    // The URL is in neither its argv nor its environment.
    const [cmdline, environ] = await Promise.all([readFile(`/proc/${pid}/cmdline`, "utf8"), readFile(`/proc/${pid}/environ`, "utf8")]);
    expect(cmdline).not.toContain("postgres");
    expect(environ).not.toContain(url);

    // Renewed (at each poll, well within the 3 s lease) past its first end, until the watchdog has
    // looked twice since then: the harness runs on.
    const firstEnd = Date.now() + 3_000;
    await twoLooksAfter(setup.database, firstEnd, () => take(leases, "box-a", 3_000));
    expect(await runner.probe(target)).toBe("live");

    // No more beats: the lease lapses 3 s after the last, and the harness ends within the reaction time after that.
    const lastBeat = Date.now();
    await waitFor("the harness ended", ended(setup), { timeoutMs: 3_000 + watchdogReactionMs(KILL_GRACE_MS), intervalMs: 100 });
    expect(Date.now() - lastBeat).toBeGreaterThan(1_000);
    await waitFor("the watchdog exited", () => !alive(pid));
    expect(await readFile(logFile, "utf8")).toMatch(/ended the harness \(SIGTERM\) and its tmux session: the lease of "box-a" lapsed/);
  }, 60_000);

  it("ends the harness at its next look once another daemon owns the item", async () => {
    const setup = await setupOf();
    const { leases, runner, target } = setup;
    const since = Date.now();
    await watched(setup, 60_000);
    await twoLooksAfter(setup.database, since);
    expect(await runner.probe(target)).toBe("live");
    await take(leases, "box-b", 60_000);
    await waitFor("the harness ended", ended(setup), { timeoutMs: watchdogReactionMs(KILL_GRACE_MS), intervalMs: 100 });
    // Recorded by the watchdog itself, under its daemon's name: there even when that daemon is dead.
    const [fenced, ...more] = await waitFor("session.fenced", async () => {
      const rows = await fencedRows(setup.database);
      return rows.length > 0 ? rows : undefined;
    });
    expect(more).toEqual([]);
    expect(fenced?.host).toBe("box-a");
    expect(fenced?.body).toMatchObject({
      event: "session.fenced",
      level: "warning",
      source: "daemon",
      work_item: ITEM,
      daemon: "box-a",
      tmux_target: target,
      reason: 'the daemon "box-b" owns the item now',
      signal: "SIGTERM",
    });
  }, 60_000);

  it("exits once the harness it watches is gone, leaving the lease alone", async () => {
    const setup = await setupOf();
    const { runner, target } = setup;
    const pid = await watched(setup, 60_000);
    await runner.terminate(target, { killHarness: true, graceMs: 500, killSession: true });
    await waitFor("the watchdog exited", () => !alive(pid));
    expect(await fencedRows(setup.database)).toEqual([]);
  }, 60_000);

  it("started before its session, as a spawn starts it: ends a harness that comes up after the lease lapsed", async () => {
    const setup = await setupOf();
    const { runner, target, dir } = setup;
    const pid = await watchingAhead(setup, 1_500, 60_000);
    // No session yet, and the lease lapses: a daemon killed between its watchdog and its harness.
    await waitFor("the lease lapsed", async () => {
      const { rows } = await setup.database.pool.query<{ lapsed: boolean }>("SELECT expires_at < now() AS lapsed FROM the_loop_leases WHERE item = $1", [ITEM]);
      return rows[0]?.lapsed === true;
    });
    expect(alive(pid)).toBe(true);
    await runner.spawn({ target, cwd: dir, argv: ["sleep", "600"], env: {} });
    await waitFor("the late harness ended", ended(setup), { timeoutMs: watchdogReactionMs(KILL_GRACE_MS), intervalMs: 100 });
    await waitFor("the watchdog exited", () => !alive(pid));
    expect((await fencedRows(setup.database)).map((row) => row.body.reason)).toEqual(['the lease of "box-a" lapsed']);
  }, 60_000);

  it("started before a session that never comes: gives up once its wait for it passed", async () => {
    const setup = await setupOf();
    const pid = await watchingAhead(setup, 60_000, 1_000);
    await waitFor("the watchdog exited", () => !alive(pid), { timeoutMs: 20_000, intervalMs: 100 });
    expect(await fencedRows(setup.database)).toEqual([]);
  }, 60_000);
});
