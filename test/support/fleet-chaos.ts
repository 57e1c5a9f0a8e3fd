import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { stringify } from "yaml";
import { DEFAULT_AUTO_EXECUTE_LABEL } from "../../src/config/schema.js";
import { LIVE_STATUSES } from "../../src/registry/record.js";
import type { SessionStatus } from "../../src/registry/record.js";
import { fakeHarnessRouting } from "./fake-project.js";
import { DIR_MARKER, endProcesses, markedProcesses } from "./processes.js";
import { endTmuxServer } from "./tmux-server.js";
import { waitFor } from "./wait.js";

/**
 * The fleet's chaos run (docs/scale.md, "The chaos run"), shared by its test
 * (test/integration/fleet-chaos.test.ts) and its bench (bench/fleet-chaos.ts), and free of the
 * test runner so the bench can drive it. Several real daemons, each with a state folder and a
 * tmux server of its own, on one database and one local project, the fake harness as the agent,
 * every command through the built CLI as an operator types it. Each item goes: `item new` with the
 * arming label (any daemon's CLI) → its session spawns somewhere → an authorized comment → that
 * comment reaches an agent → `item close` → its session ends. Halfway through, the daemon running
 * the most agents is killed with `kill -9`; once its items are adopted (or the bound passed) it is
 * started again. Every tmux server is sampled throughout for an item live on two at once.
 */

const run = promisify(execFile);
const BIN = fileURLToPath(new URL("../../bin/the-loop.js", import.meta.url));

/** The lease settings of a lost host's tests (lost-host.ts), so adoption happens within the run. */
export const CHAOS_LEASE = { leaseSeconds: 6, heartbeatSeconds: 2, adoptGraceSeconds: 8, killGraceSeconds: 1 } as const;
/** What an orphaned item's adoption may take past the lease bound (the lease and the grace). */
export const ADOPTION_SLACK_MS = 5_000;

export interface ChaosOptions {
  /** A fresh database on a real server. */
  readonly url: string;
  readonly items: number;
  /** Items in flight at once. */
  readonly workers: number;
  readonly daemons: number;
  /** routing.limits: the fleet's cap and each daemon's. */
  readonly maxLiveSessions: number;
  readonly perDaemon: number;
  /** Set on every process the CLI starts (the test run's markers), beside each daemon's own folder. */
  readonly env?: Readonly<Record<string, string>>;
  readonly log?: (line: string) => void;
}

export interface ChaosFigures {
  readonly items: number;
  readonly daemons: number;
  readonly finished: number;
  readonly lostItems: readonly string[];
  readonly comments: number;
  readonly lostComments: readonly string[];
  readonly samples: number;
  /** Items seen with a live agent on two tmux servers, or two on one, in one sample. */
  readonly doubles: readonly string[];
  readonly killed: string;
  readonly orphaned: readonly string[];
  readonly adoptions: readonly { readonly item: string; readonly afterKillMs: number }[];
  /** Orphans closed by their operator before an adoption: ended by the next owner instead. */
  readonly closedOrphans: readonly { readonly item: string; readonly afterKillMs: number }[];
  readonly notAdopted: readonly string[];
  readonly adoptionBoundMs: number;
  readonly events: number;
  readonly eventsPerSecond: number;
  /** Events by the daemon that recorded them (its process), `cli` for the operators' commands, else the host column. */
  readonly eventsBy: Readonly<Record<string, number>>;
  /** CLI commands that failed and were typed again (once). */
  readonly cliRetries: number;
  /**
   * The most connections the-loop's processes held on the server at once, in any sample, and the
   * most each name held (a daemon's pool, listener and lock connections; `cli`, every CLI at once;
   * `watchdog`, every watchdog): against the server's max_connections.
   */
  readonly peakConnections: { readonly total: number; readonly byName: Readonly<Record<string, number>>; readonly maxConnections: number };
  readonly wallMs: number;
}

/** What the run must show (issue: 0 doubles, 0 lost items or comments, every orphan adopted in bound); empty when it holds. */
export function chaosBreaches(figures: ChaosFigures): string[] {
  const breaches: string[] = [];
  if (figures.doubles.length > 0) breaches.push(`items live twice at once: ${figures.doubles.join(", ")}`);
  if (figures.lostItems.length > 0) breaches.push(`items not finished: ${figures.lostItems.join(", ")}`);
  if (figures.lostComments.length > 0) breaches.push(`comments no agent received: ${figures.lostComments.join(", ")}`);
  if (figures.orphaned.length === 0) breaches.push(`the killed daemon ${figures.killed} ran no agent: nothing was orphaned`);
  if (figures.notAdopted.length > 0) breaches.push(`orphans not adopted: ${figures.notAdopted.join(", ")}`);
  const late = [...figures.adoptions, ...figures.closedOrphans].filter((orphan) => orphan.afterKillMs > figures.adoptionBoundMs);
  if (late.length > 0) breaches.push(`adopted or closed past ${figures.adoptionBoundMs} ms: ${late.map((a) => `${a.item} ${a.afterKillMs} ms`).join(", ")}`);
  return breaches;
}

interface Daemon {
  readonly name: string;
  readonly dir: string;
  readonly home: string;
  readonly socketName: string;
  readonly transcript: string;
  pid?: number;
}

interface EventRow {
  readonly id: string;
  readonly ts: Date;
  readonly host: string;
  readonly body: Record<string, unknown>;
}

/** How old a read of the transcripts may be when another waiting item asks. */
const TRANSCRIPT_LOOK_MS = 200;

const ref = (n: number): string => `local:demo#${n}`;
/** The comment for item n: unique, never a prefix of another's. */
const ping = (n: number): string => `chaos ping for item ${n}, end`;

export async function runFleetChaos(options: ChaosOptions): Promise<ChaosFigures> {
  const log = options.log ?? (() => undefined);
  const daemons = await Promise.all(Array.from({ length: options.daemons }, (_, i) => daemonFolder(options, `box-${String.fromCharCode(97 + i)}`)));
  const db = new pg.Pool({ connectionString: options.url, max: 3 });
  const events: EventRow[] = [];
  let lastEvent = "0";
  const readEvents = async (): Promise<EventRow[]> => {
    const { rows } = await db
      .query<EventRow>("SELECT id, ts, host, body FROM the_loop_events WHERE id > $1 ORDER BY id", [lastEvent])
      // No table until the first daemon migrated the database: no events yet.
      .catch(() => ({ rows: [] as EventRow[] }));
    // Two looks at once read the same rows: each row is kept once.
    for (const row of rows) {
      if (BigInt(row.id) <= BigInt(lastEvent)) continue;
      events.push(row);
      lastEvent = row.id;
    }
    return events;
  };
  const eventFor = async (name: string, item: string, extra: (body: Record<string, unknown>) => boolean = () => true) =>
    (await readEvents()).find((row) => row.body.event === name && row.body.work_item === item && extra(row.body));
  // Every waiting item asks: the three transcripts are read once per look, shared by all who ask meanwhile.
  let transcripts: { readonly at: number; readonly text: Promise<string> } | undefined;
  const received = (): Promise<string> => {
    if (transcripts === undefined || Date.now() - transcripts.at > TRANSCRIPT_LOOK_MS) {
      transcripts = { at: Date.now(), text: Promise.all(daemons.map((d) => readFile(d.transcript, "utf8").catch(() => ""))).then((texts) => texts.join("\n")) };
    }
    return transcripts.text;
  };
  let retried = 0;
  const cli = async (d: Daemon, args: readonly string[]): Promise<string> => {
    const once = () => run(process.execPath, [BIN, ...args], { cwd: d.dir, env: cliEnv(options, d), maxBuffer: 8 << 20 });
    try {
      return (await once()).stdout;
    } catch (error) {
      // As an operator would: a command that failed (a lock wait that timed out on a loaded machine) is typed again, once, and counted.
      retried += 1;
      log(
        `${args.join(" ")} failed, typed again: ${String((error as { stderr?: string }).stderr ?? error)
          .trim()
          .slice(0, 300)}`,
      );
      return (await once()).stdout;
    }
  };

  const startedAt = Date.now();
  /** When each item's session was seen ended, and when its close was asked for. */
  const finished = new Map<string, number>();
  const closing = new Map<string, number>();
  const daemonOfPid = new Map<number, string>();
  const lostComments = new Set<string>();
  let killed: Daemon | undefined;
  let killAt = 0;
  let killing = false;
  let orphaned: string[] = [];
  /** An item's events, timed from the kill (or the start), for a run that went wrong. */
  const story = (item: string): string => {
    const at = (ms: number) => `${((ms - (killAt || startedAt)) / 1000).toFixed(1)}s`;
    const lines = events
      .filter((row) => row.body.work_item === item)
      .map((row) => `${at(row.ts.getTime())} ${row.host} ${JSON.stringify(row.body).slice(0, 400)}`);
    return `its events:\n  ${lines.join("\n  ")}`;
  };
  let restarted: Promise<void> | undefined;
  /** The killed daemon until it is back: its operator's CLI is gone with it. */
  let down: Daemon | undefined;
  let sampling = true;
  const doubles = new Set<string>();
  let samples = 0;
  let lastSample = new Map<string, string[]>();
  const peak = { total: 0, byName: {} as Record<string, number> };
  const sampler = (async () => {
    while (sampling) {
      lastSample = await liveAgents(daemons);
      samples += 1;
      const connections = await connectionsNow(db);
      peak.total = Math.max(peak.total, connections.total);
      for (const [name, count] of connections.byName) peak.byName[name] = Math.max(peak.byName[name] ?? 0, count);
      for (const [item, where] of lastSample) {
        if (where.length < 2 || doubles.has(item)) continue;
        doubles.add(item);
        log(`${item} live on ${where.join(" and ")} at ${Date.now() - (killAt || startedAt)} ms (from the kill, or the start)`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();

  try {
    for (const d of daemons) {
      d.pid = (JSON.parse(await cli(d, ["start", "--json"])) as { pid: number }).pid;
      daemonOfPid.set(d.pid, d.name);
    }
    await waitFor("the local project's baseline", async () => (await readEvents()).some((row) => row.body.event === "poll.baseline"), {
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    log(`${daemons.length} daemons up in ${Date.now() - startedAt} ms`);

    const adoptionBoundMs = (CHAOS_LEASE.leaseSeconds + CHAOS_LEASE.adoptGraceSeconds) * 1000 + ADOPTION_SLACK_MS;
    const killHalfway = async (): Promise<void> => {
      const sample = await liveAgents(daemons);
      const byDaemon = daemons.map((d) => [...sample].filter(([, where]) => where.includes(d.socketName)).map(([item]) => item));
      const most = byDaemon.reduce((best, items, i) => (items.length > (byDaemon[best]?.length ?? -1) ? i : best), 0);
      killed = daemons[most];
      if (killed?.pid === undefined) return;
      orphaned = byDaemon[most] ?? [];
      process.kill(killed.pid, "SIGKILL");
      killAt = Date.now();
      down = killed;
      log(`kill -9 of ${killed.name} at ${killAt - startedAt} ms, running ${orphaned.length}: ${orphaned.join(", ")}`);
      const victim = killed;
      restarted = (async () => {
        const adopted = async () => {
          for (const item of orphaned) if (!(await eventFor("session.adopted", item, (body) => body.from === victim.name))) return false;
          return true;
        };
        await waitFor("the orphans adopted", adopted, { timeoutMs: adoptionBoundMs + 10_000, intervalMs: 200 }).catch(() => undefined);
        victim.pid = (JSON.parse(await cli(victim, ["start", "--json"])) as { pid: number }).pid;
        daemonOfPid.set(victim.pid, victim.name);
        down = undefined;
        log(`${victim.name} started again at ${Date.now() - startedAt} ms`);
      })();
    };

    const ITEM_BOUND_MS = 90_000;
    let next = 0;
    const worker = async (w: number): Promise<void> => {
      for (;;) {
        const index = next++;
        if (index >= options.items) return;
        // Each command from another daemon's operator, in turn: the one typed on goes round.
        const up = (turn: number): Daemon => {
          const running = daemons.filter((one) => one !== down);
          return running[turn % running.length] ?? daemons[0]!;
        };
        const created = JSON.parse(
          await cli(up(index + w), ["item", "new", `Chaos task ${index + 1}`, "--label", DEFAULT_AUTO_EXECUTE_LABEL, "--as", "alice", "--json"]),
        ) as { number: number };
        const n = created.number;
        const item = ref(n);
        try {
          await waitFor(`${item} spawned`, () => eventFor("session.spawned", item), { timeoutMs: ITEM_BOUND_MS, intervalMs: 200 });
          await cli(up(n + w + 1), ["item", "comment", `#${n}`, ping(n), "--as", "alice"]);
          const commentedAt = Date.now();
          await waitFor(`${item}'s comment delivered`, async () => (await received()).includes(ping(n)), { timeoutMs: ITEM_BOUND_MS, intervalMs: 250 }).catch(
            () => {
              lostComments.add(item);
              log(
                `${item}'s comment, posted at ${((commentedAt - (killAt || startedAt)) / 1000).toFixed(1)} s (from the kill), reached no agent; ${story(item)}`,
              );
            },
          );
          // An orphan is closed only once adopted, so its adoption is measured, not preempted.
          if (orphaned.includes(item)) {
            await waitFor(`${item} adopted`, () => eventFor("session.adopted", item), { timeoutMs: adoptionBoundMs + 10_000, intervalMs: 200 }).catch(
              () => undefined,
            );
          }
          closing.set(item, Date.now());
          await cli(up(n + w + 2), ["item", "close", `#${n}`, "--as", "alice"]);
          await waitFor(`${item}'s session ended`, () => sessionEnded(db, item), { timeoutMs: ITEM_BOUND_MS, intervalMs: 200 });
          finished.set(item, Date.now());
        } catch (error) {
          const seen = events
            .filter((row) => row.body.work_item === item)
            .map(
              (row) =>
                `${row.host} ${String(row.body.event)}${row.body.event === "session.spawn_failed" ? ` (${String(row.body.error ?? row.body.reason)})` : ""}`,
            );
          log(`${item}: ${(error as Error).message}; its events: ${seen.join(", ") || "none"}`);
          if (finished.size === 0 && seen.length === 0) log(await daemonLogs(daemons));
        }
        if (!killing && finished.size >= Math.floor(options.items / 2)) {
          // Claimed before the first await, so only one worker kills.
          killing = true;
          await killHalfway();
        }
      }
    };
    await Promise.all(Array.from({ length: options.workers }, (_, w) => worker(w)));
    await restarted;
    // The returned daemon runs nothing twice either: a few more samples with every daemon up.
    const settled = samples + 8;
    await waitFor("the last samples", () => samples >= settled, { timeoutMs: 30_000, intervalMs: 100 });

    const all = await readEvents();
    for (const item of [...doubles, ...orphaned.filter((one) => !all.some((r) => r.body.event === "session.adopted" && r.body.work_item === one))]) {
      log(`${item}: ${story(item)}`);
    }
    const adoptions = orphaned.flatMap((item) => {
      const row = all.find((r) => r.body.event === "session.adopted" && r.body.work_item === item && r.body.from === killed?.name);
      return row === undefined ? [] : [{ item, afterKillMs: row.ts.getTime() - killAt }];
    });
    // An orphan its operator closed (before the kill or after it) before any daemon adopted it is not adopted but closed by the
    // next owner, once the lease bound passed: its session's end is held to the same bound.
    const closedOrphans = orphaned.flatMap((item) => {
      const asked = closing.get(item);
      const ended = finished.get(item);
      if (asked === undefined || ended === undefined || adoptions.some((a) => a.item === item)) return [];
      return [{ item, afterKillMs: ended - killAt }];
    });
    const during = all.filter((row) => row.ts.getTime() >= startedAt);
    const spanSeconds = Math.max(0.001, ((during.at(-1)?.ts.getTime() ?? startedAt) - (during[0]?.ts.getTime() ?? startedAt)) / 1000);
    const eventsBy: Record<string, number> = {};
    for (const row of during) {
      const by = row.body.source === "cli" ? "cli" : (daemonOfPid.get(Number(row.body.pid)) ?? row.host);
      eventsBy[by] = (eventsBy[by] ?? 0) + 1;
    }
    const allItems = Array.from({ length: options.items }, (_, i) => ref(i + 1));
    return {
      items: options.items,
      daemons: daemons.length,
      finished: finished.size,
      lostItems: allItems.filter((item) => !finished.has(item)),
      comments: options.items,
      lostComments: [...lostComments],
      samples,
      doubles: [...doubles],
      killed: killed?.name ?? "none",
      orphaned,
      adoptions,
      closedOrphans,
      notAdopted: orphaned.filter((item) => ![...adoptions, ...closedOrphans].some((a) => a.item === item)),
      adoptionBoundMs,
      events: during.length,
      eventsPerSecond: during.length / spanSeconds,
      eventsBy,
      cliRetries: retried,
      peakConnections: { ...peak, maxConnections: await maxConnections(db) },
      wallMs: Date.now() - startedAt,
    };
  } finally {
    sampling = false;
    await sampler;
    await Promise.all(daemons.map((d) => stopDaemon(d, options)));
    await db.end();
  }
}

/** A daemon's folder: its config on the shared database, its own tmux server and transcript. */
async function daemonFolder(options: ChaosOptions, name: string): Promise<Daemon> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), `the-loop-chaos-${name}-`)));
  // Beside the folder, as an operator's home is beside their projects: a session may never see a home.
  const home = await realpath(await mkdtemp(join(tmpdir(), `the-loop-chaos-${name}-home-`)));
  const harnessDir = join(dir, "harness");
  const transcript = join(harnessDir, "transcript.jsonl");
  // Named as the tests name their sockets, so the leak guard finds a server a run left behind.
  const socketName = `loop-test-chaos-${process.pid}-${name}`;
  await Promise.all([mkdir(harnessDir), mkdir(join(dir, ".the-loop"))]);
  const { leaseSeconds, heartbeatSeconds, adoptGraceSeconds, killGraceSeconds } = CHAOS_LEASE;
  const config = {
    version: 1,
    integrations: { local: { project: "demo" } },
    routing: {
      ...fakeHarnessRouting(transcript, harnessDir),
      limits: { maxLiveSessions: options.maxLiveSessions, perDaemon: options.perDaemon },
      tmux: { socketName, harnessKillGraceSeconds: killGraceSeconds, startupGraceSeconds: 0.3 },
    },
    polling: { enabled: true, intervalSeconds: 0.25, sources: [{ provider: "local" }] },
    state: { store: "postgres", url: options.url, daemonName: name, leaseSeconds, heartbeatSeconds, adoptGraceSeconds },
  };
  await writeFile(join(dir, ".the-loop", "cli-config.yaml"), stringify(config));
  return { name, dir, home, socketName, transcript };
}

function cliEnv(options: ChaosOptions, d: Daemon): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: d.home, USER: "tester", LOGNAME: "tester", NO_COLOR: "1", TZ: "UTC", ...options.env, [DIR_MARKER]: d.dir };
}

/** Every item with a live agent, and the tmux servers it is live on (once per live pane). */
/** the-loop's connections on the server now (each names itself `the-loop <name>…`), in all and by name. */
async function connectionsNow(db: pg.Pool): Promise<{ total: number; byName: Map<string, number> }> {
  const { rows } = await db
    .query<{ name: string; count: number }>(
      `SELECT split_part(application_name, ' ', 2) AS name, count(*)::int AS count FROM pg_stat_activity
       WHERE datname = current_database() AND application_name LIKE 'the-loop %' GROUP BY 1`,
    )
    .catch(() => ({ rows: [] as { name: string; count: number }[] }));
  return { total: rows.reduce((sum, row) => sum + row.count, 0), byName: new Map(rows.map((row) => [row.name, row.count])) };
}

async function maxConnections(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ max_connections: string }>("SHOW max_connections");
  return Number(rows[0]?.max_connections ?? 0);
}

async function liveAgents(daemons: readonly Daemon[]): Promise<Map<string, string[]>> {
  const live = new Map<string, string[]>();
  await Promise.all(
    daemons.map(async (d) => {
      // No server (nothing runs on it yet, or it ended with its last session): no agents.
      const stdout = await run("tmux", ["-L", d.socketName, "list-panes", "-a", "-F", "#{session_name} #{pane_dead}"]).then(
        (result) => result.stdout,
        () => "",
      );
      for (const line of stdout.split("\n")) {
        const [session, dead] = line.split(" ");
        // loop-<root tag>-<slug>: the slug names the item whichever root runs it.
        if (session === undefined || dead !== "0" || !session.startsWith("loop-")) continue;
        const slug = session.replace(/^loop-[0-9a-f]{8}-/, "");
        const item = /^local-demo-(\d+)-/.exec(slug);
        const key = item ? ref(Number(item[1])) : slug;
        live.set(key, [...(live.get(key) ?? []), d.socketName]);
      }
    }),
  );
  return live;
}

/** Whether the item's session record is there and no longer live. */
async function sessionEnded(db: pg.Pool, item: string): Promise<boolean> {
  const { rows } = await db.query<{ status: string }>("SELECT body->>'status' AS status FROM the_loop_records WHERE kind = 'sessions' AND item = $1", [item]);
  const status = rows[0]?.status;
  return status !== undefined && !LIVE_STATUSES.has(status as SessionStatus);
}

/** The end of every daemon's own log, for a run that went wrong. */
async function daemonLogs(daemons: readonly Daemon[]): Promise<string> {
  const tails = await Promise.all(
    daemons.map(async (d) => `${d.name}:\n${(await readFile(join(d.dir, ".the-loop", "logs", "daemon.out"), "utf8").catch(() => "(none)")).slice(-2_000)}`),
  );
  return tails.join("\n");
}

/** Stops a daemon, ends whatever its CLI runs left running, its tmux server, and removes its folder. */
async function stopDaemon(d: Daemon, options: ChaosOptions): Promise<void> {
  await new Promise<void>((resolve) => {
    const child = spawn(process.execPath, [BIN, "stop", "--timeout", "20"], { cwd: d.dir, env: cliEnv(options, d), stdio: "ignore" });
    child.on("exit", () => resolve());
    child.on("error", () => resolve());
  });
  await endProcesses(markedProcesses({ [DIR_MARKER]: d.dir }), 3_000);
  await endTmuxServer(d.socketName);
  await rm(d.dir, { recursive: true, force: true });
  await rm(d.home, { recursive: true, force: true });
}
