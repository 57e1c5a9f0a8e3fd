import { afterEach, describe, expect, it } from "vitest";
import type { RoutingConfig } from "../../src/config/schema.js";
import { configSchema } from "../../src/config/schema.js";
import { claimWithinLimits, queuedToStart } from "../../src/dispatch/slots.js";
import type { LimitedClaim } from "../../src/dispatch/slots.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { LeasedOwnership } from "../../src/fleet/ownership.js";
import { deriveStatePaths } from "../../src/state/layout.js";
import { PostgresLeases } from "../../src/state/postgres/leases.js";
import { openStores } from "../../src/stores/stores.js";
import type { Stores } from "../../src/stores/stores.js";
import { parseWorkItemRef, workItemOf } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { sessionRecord } from "../support/builders.js";
import { postgresServer } from "../support/postgres.js";
import { tempDir } from "../support/temp.js";

/**
 * routing.limits over every daemon on one real PostgreSQL server (docs/scale.md, "Fleet caps
 * across daemons"): the caps count every daemon's live sessions, read from the database under
 * the start queue's lock, so two daemons never both take the last slot; routing.limits.perDaemon
 * is each daemon's own capacity, and a start one daemon has no room for waits in the shared queue
 * — its lease given up — for a daemon with room to take.
 */

const cluster = postgresServer();
const opened: { close(): Promise<void> }[] = [];

afterEach(async () => {
  for (const closable of opened.splice(0).reverse()) await closable.close();
});

interface Daemon {
  readonly name: string;
  readonly stores: Stores;
  readonly ownership: LeasedOwnership;
  readonly events: MemoryEventSink;
  /** What claimWithinLimits and queuedToStart read of a dispatcher's context. */
  readonly ctx: Parameters<typeof claimWithinLimits>[0] & Parameters<typeof queuedToStart>[0];
  /** A start as the dispatcher runs it: the item's lease first, then the claim within the caps. */
  start(item: WorkItem): Promise<LimitedClaim>;
}

async function daemon(url: string, name: string, caps: Partial<RoutingConfig["limits"]>): Promise<Daemon> {
  const config = configSchema.parse({ state: { store: "postgres", daemonName: name } });
  const stores = await openStores(config, deriveStatePaths(config, await tempDir()), { name, env: { THE_LOOP_STATE_URL: url } });
  opened.push(stores);
  const database = stores.backend.database;
  if (database === undefined) throw new Error("the stores are not on the database");
  const events = new MemoryEventSink();
  const ownership = await LeasedOwnership.join({
    leases: new PostgresLeases(database.pool),
    self: { name, host: `${name}.example`, pid: process.pid, instance: `${name}-1`, tmuxSocket: null },
    bounds: { leaseMs: 30_000, heartbeatMs: 600_000 },
    events,
    warn: () => undefined,
    liveItems: () => [],
    runsHere: async () => false,
    closeStale: async () => false,
  });
  opened.push({ close: () => ownership.stop() });
  const limits: RoutingConfig["limits"] = { perHarness: {}, perRepository: {}, perNode: {}, ...caps };
  const ctx = {
    now: () => new Date(),
    routing: { limits } as RoutingConfig,
    ownership,
    options: { registry: stores.registry, startQueue: stores.startQueue, control: stores.control },
  };
  return {
    name,
    stores,
    ownership,
    events,
    ctx,
    async start(item) {
      await ownership.acquire([item.ref]);
      return claimWithinLimits(ctx, item.ref, "claude", { labels: [] }, () => stores.registry.claim(item, () => sessionRecord(item)));
    },
  };
}

/** Each daemon's mirror holds every write made so far, by either daemon (each has seen its own NOTIFY round trip). */
async function mirrored(...daemons: readonly Daemon[]): Promise<void> {
  await Promise.all(daemons.map((one) => one.stores.backend.database?.sync()));
}

const itemOf = (n: number): WorkItem =>
  workItemOf(parseWorkItemRef(`local:demo#${n}`), { kind: "issue", url: `the-loop://local/demo/items/${n}.json`, id: `L_${n}` });
const claimed = (results: readonly LimitedClaim[]): number => results.filter((result) => "claimed" in result && result.claimed).length;

describe("fleet caps across daemons on a real server", () => {
  it("counts every daemon's sessions: of ten starts racing from two daemons for maxLiveSessions 3, three claim and seven queue", async () => {
    const url = await cluster.freshDatabase();
    const a = await daemon(url, "box-a", { maxLiveSessions: 3 });
    const b = await daemon(url, "box-b", { maxLiveSessions: 3 });
    const results = await Promise.all(Array.from({ length: 10 }, (_, n) => (n % 2 === 0 ? a : b).start(itemOf(n + 1))));
    expect(claimed(results)).toBe(3);
    const queued = results.flatMap((result) => ("queued" in result ? [result.queued] : []));
    expect(queued.map((place) => place.position).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(queued.every((place) => place.cap.cap === "maxLiveSessions")).toBe(true);
    expect((await a.stores.registry.listNow({ status: "live" })).records).toHaveLength(3);
    // box-a's mirror learns of box-b's queued starts by NOTIFY: read it once that has arrived.
    await mirrored(a, b);
    expect(a.stores.startQueue.read()).toHaveLength(7);
    // A queued start holds no lease: whichever daemon has room when a slot frees takes it.
    const queuedRefs = results.flatMap((result, n) => ("queued" in result ? [itemOf(n + 1).ref] : []));
    expect(queuedRefs.some((ref) => a.ownership.holds(ref) || b.ownership.holds(ref))).toBe(false);
    // Nothing frees: neither daemon takes a start from the queue.
    expect(queuedToStart(a.ctx)).toEqual([]);
    expect(queuedToStart(b.ctx)).toEqual([]);
  });

  it("routing.limits.perDaemon: a start the daemon at its capacity queues is taken by the daemon with room", async () => {
    const url = await cluster.freshDatabase();
    const a = await daemon(url, "box-a", { perDaemon: 1 });
    const b = await daemon(url, "box-b", { perDaemon: 1 });
    expect(await a.start(itemOf(1))).toMatchObject({ claimed: true });
    // box-a has no room: the start waits in the shared queue, and box-a lets its lease go.
    expect(await a.start(itemOf(2))).toMatchObject({ queued: { position: 1, cap: { cap: "perDaemon", limit: 1 } } });
    expect(a.ownership.holds(itemOf(2).ref)).toBe(false);
    expect(a.events.events.filter((event) => event.type === "lease.released").map((event) => event.fields.work_item)).toEqual([itemOf(2).ref]);
    await mirrored(a, b);
    // box-a's look at the queue finds no room; box-b's finds the start and carries it out.
    expect(queuedToStart(a.ctx)).toEqual([]);
    expect(queuedToStart(b.ctx)).toEqual([itemOf(2).ref]);
    expect(await b.start(itemOf(2))).toMatchObject({ claimed: true });
    expect(b.stores.startQueue.read()).toEqual([]);
    // Both at their capacity now: a third start waits for either to free a slot.
    expect(await b.start(itemOf(3))).toMatchObject({ queued: { position: 1, cap: { cap: "perDaemon" } } });
    await a.stores.registry.close(itemOf(1).ref, "cli", new Date());
    await mirrored(a, b);
    expect(queuedToStart(b.ctx)).toEqual([]);
    expect(queuedToStart(a.ctx)).toEqual([itemOf(3).ref]);
  });
});
