import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { LeasedOwnership, OwnedElsewhereError } from "../../src/fleet/ownership.js";
import { PostgresDatabase } from "../../src/state/postgres/database.js";
import { readFleetView } from "../../src/fleet/view.js";
import { PostgresLeases } from "../../src/state/postgres/leases.js";
import type { DaemonCapacity } from "../../src/state/postgres/leases.js";
import { MIGRATIONS, migrate } from "../../src/state/postgres/migrations.js";
import { postgresServer } from "../support/postgres.js";
import { waitFor } from "../support/wait.js";

/**
 * Daemons sharing one real PostgreSQL server own each work item one at a time (docs/scale.md):
 * a name taken twice is refused, a lease another live daemon holds is not taken, a lapsed one is,
 * and a daemon whose lease was taken closes its own session of the item at its next beat.
 */

const cluster = postgresServer();
const open: PostgresDatabase[] = [];
const joined: LeasedOwnership[] = [];

afterEach(async () => {
  for (const ownership of joined.splice(0)) await ownership.stop();
  for (const database of open.splice(0)) await database.close();
});

interface Daemon {
  readonly ownership: LeasedOwnership;
  readonly events: MemoryEventSink;
  readonly closed: string[];
  readonly clock: { ms: number };
  readonly database: PostgresDatabase;
}

async function daemon(
  url: string,
  name: string,
  options: { live?: string[]; adopted?: string[]; here?: string[]; leaseMs?: number; instance?: string; capacity?: () => DaemonCapacity } = {},
): Promise<Daemon> {
  const database = await PostgresDatabase.open({ url, name, lockTimeoutMs: 2_000 });
  open.push(database);
  const events = new MemoryEventSink();
  const closed: string[] = [];
  const clock = { ms: Date.now() };
  const ownership = await LeasedOwnership.join({
    leases: new PostgresLeases(database.pool),
    self: { name, host: `${name}.example`, pid: process.pid, instance: options.instance ?? `${name}-1`, tmuxSocket: `sock-${name}` },
    bounds: { leaseMs: options.leaseMs ?? 30_000, heartbeatMs: 600_000 },
    events,
    warn: () => undefined,
    liveItems: () => options.live ?? [],
    adoptedItems: () => options.adopted ?? [],
    runsHere: async (item) => (options.here ?? []).includes(item),
    closeStale: async (item) => {
      closed.push(item);
      return true;
    },
    nowMs: () => clock.ms,
    ...(options.capacity !== undefined ? { capacity: options.capacity } : {}),
  });
  joined.push(ownership);
  return { ownership, events, closed, clock, database };
}

describe("leases on a real server", () => {
  it("refuses a second live daemon of one name, and frees the name when it stops", async () => {
    const url = await cluster.freshDatabase();
    const first = await daemon(url, "box-a");
    await expect(daemon(url, "box-a", { instance: "box-a-2" })).rejects.toThrow(/a daemon named "box-a" already runs on this database \(host box-a\.example/);
    await first.ownership.stop();
    const again = await daemon(url, "box-a", { instance: "box-a-3" });
    expect(again.ownership.name).toBe("box-a");
  });

  it("gives each item one owner: the other is refused, naming the owner and its host, until the lease lapses", async () => {
    const url = await cluster.freshDatabase();
    const a = await daemon(url, "box-a", { leaseMs: 1_500 });
    const b = await daemon(url, "box-b", { leaseMs: 1_500 });
    await a.ownership.acquire(["local:demo#1"]);
    await b.ownership.acquire(["local:demo#2"]);
    expect(a.ownership.holds("local:demo#1")).toBe(true);
    const refused = await b.ownership.acquire(["local:demo#1"]).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OwnedElsewhereError);
    expect((refused as Error).message).toMatch(/owned by the daemon "box-a" on box-a\.example/);
    expect(b.ownership.holds("local:demo#1")).toBe(false);
    // Many takes at once from both sides: every item ends with exactly one owner.
    const items = Array.from({ length: 20 }, (_, n) => `local:demo#${n + 10}`);
    const outcomes = await Promise.all(
      items.flatMap((item) =>
        [a, b].map((d) =>
          d.ownership.acquire([item]).then(
            () => d.ownership.name,
            () => undefined,
          ),
        ),
      ),
    );
    for (let n = 0; n < items.length; n += 1) expect(outcomes.slice(2 * n, 2 * n + 2).filter(Boolean)).toHaveLength(1);
    // a stops beating (as kill -9 would): once its lease lapses, b takes the item, and says from whom.
    const deadline = Date.now() + 10_000;
    let taken = false;
    while (!taken && Date.now() < deadline)
      taken = await b.ownership.acquire(["local:demo#1"]).then(
        () => true,
        () => false,
      );
    expect(taken).toBe(true);
    expect(b.events.events.some((event) => event.type === "lease.taken" && event.fields.work_item === "local:demo#1" && event.fields.from === "box-a")).toBe(
      true,
    );
    // a's next beat finds the lease gone and closes its own session of the item.
    a.clock.ms += 1_000;
    await a.ownership.beat();
    expect(a.closed).toEqual(["local:demo#1"]);
    expect(a.ownership.holds("local:demo#1")).toBe(false);
    expect(a.events.events.find((event) => event.type === "lease.lost")?.fields).toMatchObject({ work_item: "local:demo#1", owner: "box-b", closed: true });
  });

  it("at start keeps its own leases, closes its sessions another daemon took, and leaves the others'", async () => {
    const url = await cluster.freshDatabase();
    const b = await daemon(url, "box-b");
    await b.ownership.acquire(["local:demo#2", "local:demo#3"]);
    const a1 = await daemon(url, "box-a");
    await a1.ownership.acquire(["local:demo#1"]);
    await a1.ownership.stop();
    const live = ["local:demo#1", "local:demo#2", "local:demo#3", "local:demo#4"];
    const a2 = await daemon(url, "box-a", { instance: "box-a-2", live, here: ["local:demo#1", "local:demo#2", "local:demo#4"] });
    expect(a2.ownership.holds("local:demo#1")).toBe(true);
    expect(a2.ownership.holds("local:demo#4")).toBe(true);
    expect(a2.ownership.holds("local:demo#2")).toBe(false);
    expect(a2.closed).toEqual(["local:demo#2"]);
    expect(b.ownership.holds("local:demo#3")).toBe(true);
  });

  it("back after a kill -9, closes its own sessions of the items another daemon took or adopted meanwhile", async () => {
    const url = await cluster.freshDatabase();
    // a1 is never stopped: killed, its leases and its tmux sessions left behind.
    const a1 = await daemon(url, "box-a", { leaseMs: 300 });
    await a1.ownership.acquire(["local:demo#1", "local:demo#2"]);
    const b = await daemon(url, "box-b");
    await waitFor("box-b to take the lapsed leases", async () => {
      try {
        await b.ownership.acquire(["local:demo#1", "local:demo#2"]);
        return true;
      } catch (error) {
        if (!(error instanceof OwnedElsewhereError)) throw error;
        return false;
      }
    });
    // demo#2 was adopted by box-b, whose session of it has ended since.
    await b.ownership.release("local:demo#2");
    const a2 = await daemon(url, "box-a", {
      instance: "box-a-2",
      leaseMs: 300,
      adopted: ["local:demo#2"],
      here: ["local:demo#1", "local:demo#2", "local:demo#3"],
    });
    expect(a2.closed).toEqual(["local:demo#1", "local:demo#2"]);
    expect(a2.ownership.holds("local:demo#1")).toBe(false);
    const lost = a2.events.events.filter((event) => event.type === "lease.lost").map((event) => event.fields);
    expect(lost).toEqual([
      expect.objectContaining({ work_item: "local:demo#1", daemon: "box-a", owner: "box-b", closed: true }),
      expect.objectContaining({ work_item: "local:demo#2", daemon: "box-a", closed: true }),
    ]);
    expect(b.ownership.holds("local:demo#1")).toBe(true);
  });

  it("gives up the lease of an item with no live session once it has been idle a lease's length", async () => {
    const url = await cluster.freshDatabase();
    const a = await daemon(url, "box-a");
    const b = await daemon(url, "box-b");
    await a.ownership.acquire(["local:demo#1"]);
    await a.ownership.beat();
    expect(a.ownership.holds("local:demo#1")).toBe(true);
    a.clock.ms += 30_000;
    await a.ownership.beat();
    expect(a.ownership.holds("local:demo#1")).toBe(false);
    await b.ownership.acquire(["local:demo#1"]);
    expect(b.ownership.holds("local:demo#1")).toBe(true);
  });
});

describe("each daemon's capacity on its row (a real server)", () => {
  it("is written at the join and at every beat, each daemon's own; a row from before it reads as not known", async () => {
    const url = await cluster.freshDatabase();
    // A database as a daemon before migration 8 left it, with that daemon's row: no capacity column yet.
    const old = new pg.Client({ connectionString: url });
    await old.connect();
    try {
      await migrate(
        old,
        "old",
        MIGRATIONS.filter((migration) => migration.version < 8),
      );
      await old.query("INSERT INTO the_loop_daemons (name, host, pid, instance, tmux_socket) VALUES ('box-old', 'old.example', 7, 'old-1', NULL)");
    } finally {
      await old.end();
    }
    let bCap: DaemonCapacity = { perDaemon: 5 };
    const a = await daemon(url, "box-a", { capacity: () => ({ perDaemon: 2 }) });
    const b = await daemon(url, "box-b", { capacity: () => bCap });
    await daemon(url, "box-c", { capacity: () => ({ perDaemon: null }) });
    const capacities = async (): Promise<Record<string, DaemonCapacity | null>> =>
      Object.fromEntries((await readFleetView(a.database.pool, 600_000)).daemons.map((row) => [row.name, row.capacity]));
    expect(await capacities()).toEqual({ "box-a": { perDaemon: 2 }, "box-b": { perDaemon: 5 }, "box-c": { perDaemon: null }, "box-old": null });
    // A reload moved box-b's cap: its next beat writes it.
    bCap = { perDaemon: 1 };
    await b.ownership.beat();
    expect((await capacities())["box-b"]).toEqual({ perDaemon: 1 });
    // A beat that gives none (an ownership without a capacity) leaves the row's as it is.
    await new PostgresLeases(a.database.pool).beat("box-a", "box-a-1", 30_000);
    expect((await capacities())["box-a"]).toEqual({ perDaemon: 2 });
  });
});
