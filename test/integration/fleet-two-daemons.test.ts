import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { postgresServer } from "../support/postgres.js";
import { queryRows } from "../support/postgres-project.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * Two daemons through the built CLI (docs/scale.md): two state roots, two tmux servers, one real
 * PostgreSQL server and one local project both share. Starts are asked for from both sides; the
 * tmux servers of both are sampled throughout, and no item ever has a session on both — while
 * both run, after `kill -9` of one (its agents run on until its watchdog ends them, and the other
 * adopts them), and after it is started again.
 */

const run = promisify(execFile);
const server = postgresServer();
const START = "the-loop:start-execution";
const ITEMS = [1, 2, 3, 4];

async function project(url: string, name: string): Promise<TestProject> {
  return testProject({
    routing: { control: { requireStartCommand: true } },
    state: { store: "postgres", url, daemonName: name, leaseSeconds: 6, heartbeatSeconds: 2, adoptGraceSeconds: 8 },
  });
}

/** The work items with a tmux session on a server, by their slug (`loop-<root tag>-<slug>`). */
async function slugsOn(socketName: string): Promise<Set<string>> {
  try {
    const { stdout } = await run("tmux", ["-L", socketName, "list-sessions", "-F", "#{session_name}"]);
    return new Set(
      stdout
        .split("\n")
        .filter((name) => name.startsWith("loop-"))
        .map((name) => name.replace(/^loop-[0-9a-f]{8}-/, "")),
    );
  } catch {
    // No server (nothing runs on it yet, or it ended): no sessions.
    return new Set();
  }
}

/** Whether the daemon of `pid` finished a poll cycle with no change to hand out, among the events from `from` on: it has settled everything it read. */
async function settledSince(p: TestProject, pid: number, from: number): Promise<boolean> {
  return (await p.events()).slice(from).some((r) => r.event === "poll.cycle" && r.pid === pid && r.changes === 0);
}

/** The heartbeats the daemon `name` has written since it started, as far as seen: each distinct heartbeat_at past started_at is one. */
async function heartbeatsOf(url: string, name: string, seen: Set<number>): Promise<number> {
  const rows = await queryRows<{ at: Date }>(url, `SELECT heartbeat_at AS at FROM the_loop_daemons WHERE name = '${name}' AND heartbeat_at > started_at`);
  for (const row of rows) seen.add(row.at.getTime());
  return seen.size;
}

/** Samples both servers until `done` holds: every slug seen on both at once, and how many samples were taken. */
async function sample(a: TestProject, b: TestProject, done: () => Promise<boolean>, boundMs: number): Promise<{ both: string[]; samples: number }> {
  const both = new Set<string>();
  let samples = 0;
  await waitFor(
    "the sampled phase to end",
    async () => {
      const [onA, onB] = await Promise.all([slugsOn(a.socketName), slugsOn(b.socketName)]);
      samples++;
      for (const slug of onA) if (onB.has(slug)) both.add(slug);
      return done();
    },
    { timeoutMs: boundMs, intervalMs: 250 },
  );
  return { both: [...both], samples };
}

describe("two daemons on one database through the CLI", () => {
  it("never has one item live on both daemons' tmux servers: starts from both sides, kill -9 of one, its restart", async () => {
    const url = await server.freshDatabase();
    const a = await project(url, "box-a");
    const b = await project(url, "box-b");
    const names = new Map([
      [a, "box-a"],
      [b, "box-b"],
    ]);
    const startedA = await a.cli(["start", "--json"]);
    expect(startedA.code, startedA.stderr + startedA.stdout).toBe(0);
    const startedB = await b.cli(["start", "--json"]);
    expect(startedB.code, startedB.stderr + startedB.stdout).toBe(0);
    await a.waitForEvent("the local source's first sight", (r) => r.event === "poll.baseline");
    for (const n of ITEMS) expect((await (n % 2 === 0 ? b : a).cli(["item", "new", `Task ${n}`, "--label", ARM, "--as", "alice"])).code).toBe(0);
    // Starts asked for from both sides: comments on the shared project, from either state root.
    for (const n of ITEMS) expect((await (n % 2 === 0 ? a : b).cli(["item", "comment", `#${n}`, START, "--as", "alice"])).code).toBe(0);

    const spawned = async (): Promise<Set<string>> => new Set((await a.events()).filter((r) => r.event === "session.spawned").map((r) => String(r.work_item)));
    // Sampled until every item runs, and then until each daemon has finished a poll cycle with
    // nothing left to hand out (both have settled every start comment, the loser's included) and
    // has beaten its heartbeat twice more (each has looked for lost daemons' items with every item
    // owned). The first heartbeat seen may be older than that: three are counted.
    const pidOf = (started: typeof startedA): number => jsonOf<{ pid: number }>(started).pid;
    let allFrom: number | undefined;
    const beatsA = new Set<number>();
    const beatsB = new Set<number>();
    const whileBoth = await sample(
      a,
      b,
      async () => {
        allFrom ??= (await spawned()).size === ITEMS.length ? (await a.events()).length : undefined;
        if (allFrom === undefined) return false;
        const [settledA, settledB, beatenA, beatenB] = await Promise.all([
          settledSince(a, pidOf(startedA), allFrom),
          settledSince(a, pidOf(startedB), allFrom),
          heartbeatsOf(url, "box-a", beatsA),
          heartbeatsOf(url, "box-b", beatsB),
        ]);
        return settledA && settledB && beatenA >= 3 && beatenB >= 3;
      },
      60_000,
    );
    expect(whileBoth.both).toEqual([]);

    // The daemon that runs sessions is killed -9 (its process only); the other adopts them.
    const sessionsOf = async (p: TestProject): Promise<number> => (await slugsOn(p.socketName)).size;
    const [victim, survivor, victimStart] = (await sessionsOf(a)) > 0 ? [a, b, startedA] : [b, a, startedB];
    const orphaned = await sessionsOf(victim);
    process.kill(pidOf(victimStart), "SIGKILL");
    const adopted = async (): Promise<number> => (await survivor.events()).filter((r) => r.event === "session.adopted").length;
    const throughLoss = await sample(a, b, async () => (await adopted()) >= orphaned, 90_000);
    expect(throughLoss.both).toEqual([]);
    expect(await sessionsOf(victim)).toBe(0);
    expect(await sessionsOf(survivor)).toBe(ITEMS.length);

    // The killed daemon comes back: still one session per item, all on the survivor.
    // Sampled until it has settled what it reads again and beaten its heartbeat twice: its look
    // for lost daemons' items runs at every heartbeat, so it has looked at the survivor's leases.
    const backFrom = (await victim.events()).length;
    const back = await victim.cli(["start", "--json"]);
    expect(back.code, back.stderr + back.stdout).toBe(0);
    const beats = new Set<number>();
    const afterReturn = await sample(
      a,
      b,
      async () => (await settledSince(victim, pidOf(back), backFrom)) && (await heartbeatsOf(url, names.get(victim) ?? "", beats)) >= 2,
      30_000,
    );
    expect(afterReturn.both).toEqual([]);
    expect(await sessionsOf(survivor)).toBe(ITEMS.length);
    expect(await sessionsOf(victim)).toBe(0);
    console.log(
      `samples: ${whileBoth.samples} while both ran, ${throughLoss.samples} through the loss (${orphaned} orphaned), ${afterReturn.samples} after the return`,
    );
  }, 240_000);
});
