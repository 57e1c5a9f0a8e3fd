import { afterEach, describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { whereOwned } from "../../src/dispatch/owned.js";
import { LeasedOwnership } from "../../src/fleet/ownership.js";
import { configSchema } from "../../src/config/schema.js";
import { forwardCommand, routeOf } from "../../src/forwarding/commands.js";
import type { CommandForwarding } from "../../src/forwarding/commands.js";
import { Forwarder } from "../../src/forwarding/forwarder.js";
import { commandForwardingOn, leaseSettingsOf } from "../../src/forwarding/open.js";
import { ownerHandlers } from "../../src/forwarding/owner.js";
import type { ControlRequest } from "../../src/control/types.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { PostgresDatabase } from "../../src/state/postgres/database.js";
import { PostgresInbox } from "../../src/state/postgres/inbox.js";
import { PostgresLeases } from "../../src/state/postgres/leases.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { postgresServer } from "../support/postgres.js";
import { waitFor } from "../support/wait.js";

/**
 * Events and commands reach the daemon that owns their work item, on a real PostgreSQL server
 * (docs/scale.md, "Many daemons, one database"): each daemon here is its ownership (the real
 * leases), its inbox (the real table, LISTEN/NOTIFY) and a dispatch that runs an event only where
 * its item's owner is (whereOwned, the dispatcher's own gate) and otherwise forwards it.
 */

const cluster = postgresServer();
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const SETTLED = { settled: true } as const;
const ITEM: WorkItem = {
  ref: "local:demo#1",
  tracker: "local",
  host: "local",
  repository: "demo",
  number: 1,
  kind: "issue",
  url: "file:///demo/1",
  id: "demo-1",
};

function comment(deliveryId: string): InboundEvent {
  return {
    source: "poll",
    deliveryId,
    kind: "commented",
    trackerEvent: "local:commented",
    workItems: [ITEM],
    actor: "alice",
    body: "please look at this",
    labels: [],
    itemState: "open",
    occurredAt: "2026-12-02T00:00:00.000Z",
    excerpt: {},
  };
}

interface Daemon {
  readonly name: string;
  readonly database: PostgresDatabase;
  readonly ownership: LeasedOwnership;
  readonly forwarder: Forwarder;
  readonly commands: CommandForwarding;
  readonly events: MemoryEventSink;
  /** The delivery ids this daemon's dispatch carried out, with when. */
  readonly delivered: { id: string; at: number }[];
  readonly controlled: ControlRequest[];
  handle(event: InboundEvent): Promise<{ readonly settled: boolean }>;
  stop(): Promise<void>;
}

async function daemon(url: string, name: string, leaseMs = 30_000): Promise<Daemon> {
  const database = await PostgresDatabase.open({ url, name, lockTimeoutMs: 2_000 });
  const events = new MemoryEventSink();
  const leases = new PostgresLeases(database.pool);
  const ownership = await LeasedOwnership.join({
    leases,
    self: { name, host: `${name}.example`, pid: process.pid, instance: `${name}-1`, tmuxSocket: null },
    bounds: { leaseMs, heartbeatMs: 600_000 },
    events,
    warn: () => undefined,
    liveItems: () => [],
    runsHere: async () => false,
    closeStale: async () => false,
  });
  const base = { inbox: new PostgresInbox(database.pool), fleet: leases, leaseMs, events };
  const forwarder = new Forwarder({ ...base, name, sweepMs: 200, warn: () => undefined, listener: () => database.client("inbox") });
  const delivered: { id: string; at: number }[] = [];
  const controlled: ControlRequest[] = [];
  const handle = (event: InboundEvent): Promise<{ readonly settled: boolean }> =>
    whereOwned(
      ownership,
      events,
      event.workItems.map((item) => item.ref),
      async () => {
        delivered.push({ id: event.deliveryId, at: Date.now() });
        return SETTLED;
      },
      { value: SETTLED, work: "event", forward: (refusal) => forwarder.sendEvent(event, refusal) },
    );
  const control = (request: ControlRequest) =>
    whereOwned(ownership, events, [request.ref], async () => {
      controlled.push(request);
      return { applied: true as const, effect: "started" as const };
    });
  await forwarder.serve(
    ownerHandlers({
      handle,
      control,
      graphClaim: async () => {
        throw new Error("no claims here");
      },
      close: async () => undefined,
      unserved: () => undefined,
      harnessOf: () => undefined,
      configFile: null,
    }),
  );
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await forwarder.stop();
    await ownership.stop();
    await database.close();
  };
  cleanups.push(stop);
  return {
    name,
    database,
    ownership,
    forwarder,
    commands: { ...base, local: name, listener: () => database.client("forward"), waitMs: 5_000 },
    events,
    delivered,
    controlled,
    handle,
    stop,
  };
}

/** Polls `check` until it holds, for at most `ms`. */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  await waitFor(`a check to hold within ${ms} ms`, check, { timeoutMs: ms, intervalMs: 10 });
}

/** Polls the inbox until the row of `key` is done. */
async function untilDone(d: Daemon, key: string): Promise<void> {
  await waitFor(`${key} done`, async () => (await d.commands.inbox.byKey(key))?.doneAt != null, { intervalMs: 10 });
}

const named = (d: Daemon, type: string) => d.events.events.filter((event) => event.type === type);

describe("forwarding on a real server", () => {
  it("hands an event a non-owner received to the owner, which carries it out within a second, once", async () => {
    const url = await cluster.freshDatabase();
    const a = await daemon(url, "box-a");
    const b = await daemon(url, "box-b");
    await a.ownership.acquire([ITEM.ref]);
    const sentAt = Date.now();
    await b.handle(comment("d-1"));
    await until(() => a.delivered.length === 1, 1_000);
    const latency = (a.delivered[0]?.at ?? 0) - sentAt;
    expect(latency).toBeLessThan(1_000);
    expect(b.delivered).toEqual([]);
    expect(named(b, "forward.sent")[0]?.fields).toMatchObject({
      work_item: ITEM.ref,
      daemon: "box-b",
      owner: "box-a",
      kind: "event",
      outcome: "recorded",
      delivery_id: "d-1",
    });
    expect(named(a, "forward.received")[0]?.fields).toMatchObject({ work_item: ITEM.ref, daemon: "box-a", from: "box-b", kind: "event", delivery_id: "d-1" });
    expect(named(b, "lease.refused")).toEqual([]);
    // The same delivery again — at B, or at a third receiver — is recorded once: A carries it out once.
    await untilDone(a, "event:d-1");
    await b.handle(comment("d-1"));
    await b.handle(comment("d-1"));
    await until(() => named(b, "forward.sent").length === 3);
    expect(named(b, "forward.sent").map((event) => event.fields.outcome)).toEqual(["recorded", "done-already", "done-already"]);
    await b.handle(comment("d-2"));
    await until(() => a.delivered.length === 2);
    expect(a.delivered.map((delivery) => delivery.id)).toEqual(["d-1", "d-2"]);
  });

  it("keeps a row for a stopped owner until its lease lapses; the next owner takes it", async () => {
    const url = await cluster.freshDatabase();
    const a = await daemon(url, "box-a", 1_500);
    const b = await daemon(url, "box-b", 1_500);
    await a.ownership.acquire([ITEM.ref]);
    await a.stop();
    await b.handle(comment("d-9"));
    expect(named(b, "forward.sent")[0]?.fields).toMatchObject({ owner: "box-a", outcome: "recorded" });
    // Within the lease nobody runs it; once it lapsed, B's sweep readdresses the row to itself and its dispatch takes the item.
    await until(() => b.delivered.length === 1);
    expect(b.delivered.map((delivery) => delivery.id)).toEqual(["d-9"]);
    expect(named(b, "forward.readdressed")[0]?.fields).toMatchObject({ work_item: ITEM.ref, daemon: "box-b", from: "box-a", to: "box-b" });
    expect(named(b, "lease.taken").at(-1)?.fields).toMatchObject({ work_item: ITEM.ref, daemon: "box-b", from: "box-a" });
    expect(a.delivered).toEqual([]);
  });

  it("sends a CLI command to the item's owner and answers the owner's answer; refuses, naming the owner, when it does not take it in time", async () => {
    const url = await cluster.freshDatabase();
    const a = await daemon(url, "box-a");
    const b = await daemon(url, "box-b");
    await a.ownership.acquire([ITEM.ref]);
    const route = await routeOf(b.commands, ITEM.ref);
    expect(route).toEqual({ kind: "owner", owner: "box-a", host: "box-a.example" });
    expect(await routeOf(a.commands, ITEM.ref)).toEqual({ kind: "here" });
    const request = { ref: ITEM.ref, command: "start" as const, source: "cli" as const, actor: "carol", note: "the-loop sessions start" };
    const answer = await forwardCommand(b.commands, route as Extract<typeof route, { kind: "owner" }>, { command: "control", request });
    expect(answer).toEqual({ applied: true, effect: "started" });
    expect(a.controlled).toEqual([request]);
    expect(b.controlled).toEqual([]);
    // The owner checks the command again: an actor that is not a plain name is refused, nothing runs.
    await expect(
      forwardCommand(b.commands, route as Extract<typeof route, { kind: "owner" }>, { command: "control", request: { ...request, actor: "carol\u0007" } }),
    ).rejects.toThrow(/the daemon "box-a" on box-a\.example refused the forwarded control of local:demo#1: the forwarded command's actor/);
    expect(a.controlled).toHaveLength(1);
    // An owner that does not take it: the command is withdrawn, never runs, and the caller is told who owns the item.
    await a.forwarder.stop();
    await expect(
      forwardCommand({ ...b.commands, waitMs: 500 }, route as Extract<typeof route, { kind: "owner" }>, { command: "control", request }),
    ).rejects.toThrow(/local:demo#1 is owned by the daemon "box-a" on box-a\.example, which did not take the forwarded control within 1 s: nothing was done/);
    expect(a.controlled).toHaveLength(1);
  });

  it("waits state.forwardWaitSeconds for the owner to take a command, as the config sets it", async () => {
    const url = await cluster.freshDatabase();
    const a = await daemon(url, "box-a");
    const b = await daemon(url, "box-b");
    await a.ownership.acquire([ITEM.ref]);
    await a.forwarder.stop();
    // The CLI's and the daemon's socket's forwarding, from a config that shortens the wait: the waiter's bound is the config's.
    const { state } = configSchema.parse({ state: { store: "postgres", url, forwardWaitSeconds: 2 } });
    const forwarding = commandForwardingOn(b.database, { ...leaseSettingsOf(state), name: "box-b", events: b.events });
    expect(forwarding.waitMs).toBe(2_000);
    const route = await routeOf(forwarding, ITEM.ref);
    const request = { ref: ITEM.ref, command: "pause" as const, source: "cli" as const, actor: "carol" };
    await expect(forwardCommand(forwarding, route as Extract<typeof route, { kind: "owner" }>, { command: "control", request })).rejects.toThrow(
      /local:demo#1 is owned by the daemon "box-a" on box-a\.example, which did not take the forwarded control within 2 s: nothing was done/,
    );
    expect(a.controlled).toEqual([]);
  });
});
