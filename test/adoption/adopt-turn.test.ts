import { describe, expect, it } from "vitest";
import { Adopter } from "../../src/adoption/adopt.js";
import type { Dispatcher } from "../../src/dispatch/dispatcher.js";
import type { Ownership, TakenLease } from "../../src/fleet/ownership.js";
import { StartQueue, startQueueFile } from "../../src/registry/start-queue.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { policyOf } from "../../src/routing/router.js";
import { BUILTIN_TEMPLATES } from "../../src/sessions/prompts.js";
import { parseWorkItemRef } from "../../src/workitem/index.js";
import { localSetup } from "../dispatch/fixture.js";

/**
 * docs/scale.md, "In the turn that takes the lease": the dispatcher over the real registry, control
 * store, start queue and local tracker (tmux is the fake runner), with the real Adopter set as its
 * takeover and an ownership whose next take of an item answers it taken from the lost daemon
 * box-a — as LeasedOwnership.acquire does past the lease and the grace.
 */

/** Box-b's ownership: a take of an item in `lost` is a lease taken from box-a, once; every other take renews. */
function lostHost(): Ownership & { readonly lost: Set<string>; readonly taken: string[]; readonly released: string[] } {
  const lost = new Set<string>();
  const taken: string[] = [];
  const released: string[] = [];
  return {
    name: "box-b",
    shared: true,
    lost,
    taken,
    released,
    holds: () => true,
    acquire: async (items): Promise<TakenLease[]> => {
      taken.push(...items);
      return items.filter((item) => lost.delete(item)).map((item) => ({ item, from: "box-a" }));
    },
    release: async (item) => void released.push(item),
  };
}

async function setup(maxLiveSessions = 4) {
  const t = await localSetup({
    routing: { control: { requireStartCommand: true }, limits: { maxLiveSessions }, harnesses: { fake: { command: ["fake", "{prompt}"] } } },
  });
  const queue = new StartQueue({ file: startQueueFile(t.paths.root) });
  // The sessions box-a ran: started here, on the same records, before box-a was lost.
  const boxA = t.dispatcher({ startQueue: queue });
  const ownership = lostHost();
  const boxB = t.dispatcher({ startQueue: queue }, ownership);
  const comments: string[] = [];
  const adopter = new Adopter({
    leases: { fleet: async () => ({ daemons: [], leases: [], now: new Date() }) },
    tails: { read: async () => undefined },
    ownership,
    graceMs: 15_000,
    session: (ref) => t.registry.get(ref),
    closeSession: (ref, reason) => t.registry.close(ref, reason, t.now()),
    takeOver: (ref) => boxB.takeOver(ref),
    comment: async (ref, text) => {
      comments.push(text);
      await t.trackers.local.postComment(parseWorkItemRef(ref), text);
    },
    events: t.events,
    warn: (message) => {
      throw new Error(message);
    },
  });
  boxB.onTakeover(adopter.adoptTaken);
  const start = async (d: Dispatcher, title: string) => {
    const item = await t.open(title);
    expect(await d.control({ ref: item.ref, command: "start", source: "cli", actor: "operator" })).toMatchObject({ effect: "started" });
    await t.feed();
    return item;
  };
  /** `ref`'s next change on the feed, as box-b's poller hands it out. */
  const polled = async (ref: string): Promise<InboundEvent> => {
    const batch = (await t.feed()).filter((event) => event.workItems.some((item) => item.ref === ref));
    expect(batch).toHaveLength(1);
    return batch[0] as InboundEvent;
  };
  /** Box-a is lost past the lease and the grace: its watchdog has ended the item's harness and tmux session, and box-b's next take of it is a takeover. */
  const lose = async (item: { readonly ref: string; readonly target: string }): Promise<void> => {
    await t.runner.terminate(item.target, { killHarness: true, graceMs: 0, killSession: true });
    ownership.lost.add(item.ref);
  };
  return { ...t, queue, boxA, boxB, ownership, comments, start, polled, lose };
}

describe("a takeover in the turn of an event or a command", () => {
  it("closes a lost daemon's item whose closing takes the lease: the old record closed item-closed, no new agent", async () => {
    const t = await setup();
    const item = await t.start(t.boxA, "Closed while its daemon is lost");
    const spawned = t.runner.spawnRequests.length;
    await t.lose(item);
    await t.trackers.local.setState(parseWorkItemRef(item.ref), "closed", "alice");
    expect(await t.boxB.handle(await t.polled(item.ref))).toEqual({ settled: true });
    await t.boxB.drain();

    expect(t.registry.get(item.ref)).toMatchObject({ status: "closed", closeReason: "item-closed" });
    expect(t.runner.spawnRequests).toHaveLength(spawned);
    expect(t.comments).toEqual([]);
    const types = t.events.events.map((event) => event.type);
    expect(types.indexOf("session.adopted")).toBeLessThan(types.indexOf("session.closed"));
    expect(t.emitted("session.adopted")).toEqual([
      { work_item: item.ref, daemon: "box-b", from: "box-a", tail_lines: 0, started: false, closed_as: "item-closed" },
    ]);
    expect(t.emitted("session.closed")).toEqual([expect.objectContaining({ work_item: item.ref, reason: "item-closed" })]);
  });

  it("stops a lost daemon's item whose stop takes the lease: closed stopped, no new agent, the stop stands", async () => {
    const t = await setup();
    const item = await t.start(t.boxA, "Stopped while its daemon is lost");
    const spawned = t.runner.spawnRequests.length;
    await t.lose(item);
    expect(await t.boxB.control({ ref: item.ref, command: "stop", source: "cli", actor: "operator" })).toMatchObject({ applied: true, effect: "stopped" });
    await t.boxB.drain();

    expect(t.registry.get(item.ref)).toMatchObject({ status: "closed", closeReason: "stopped" });
    expect(t.runner.spawnRequests).toHaveLength(spawned);
    expect(t.control.get(item.ref)).toMatchObject({ command: "stop" });
    expect(t.emitted("session.adopted")).toEqual([expect.objectContaining({ work_item: item.ref, started: false, closed_as: "stopped" })]);
    expect(t.emitted("session.closed")).toEqual([expect.objectContaining({ work_item: item.ref, reason: "stopped" })]);
  });

  it("adopts a lost daemon's item whose pause takes the lease, then pauses the adopted session", async () => {
    const t = await setup();
    const item = await t.start(t.boxA, "Paused while its daemon is lost");
    const spawned = t.runner.spawnRequests.length;
    await t.lose(item);
    expect(await t.boxB.control({ ref: item.ref, command: "pause", source: "cli", actor: "operator" })).toMatchObject({ applied: true });
    await t.boxB.drain();

    expect(t.runner.spawnRequests).toHaveLength(spawned + 1);
    expect(t.registry.get(item.ref)).toMatchObject({ status: "paused" });
    expect(t.emitted("session.adopted")).toEqual([expect.objectContaining({ work_item: item.ref, started: true })]);
  });

  it("holds a comment whose turn adopted the item into the start queue, turn after turn, and delivers it once the start is carried out", async () => {
    const t = await setup();
    const orphan = await t.start(t.boxA, "Commented on while its daemon is lost");
    const other = await t.start(t.boxB, "Takes the last slot");
    // Box-b's caps are full without the orphan's session: its adoption waits in the start queue.
    const routing = { ...t.routing, limits: { ...t.routing.limits, maxLiveSessions: 1 } };
    t.boxB.reconfigure({ routing, policy: policyOf(routing), templates: BUILTIN_TEMPLATES });
    await t.lose(orphan);
    await t.comment(orphan.ref, "Please also handle the empty file.");
    const comment = await t.polled(orphan.ref);

    expect(await t.boxB.handle(comment)).toEqual({ settled: false, held: true });
    expect(t.registry.get(orphan.ref)).toMatchObject({ status: "closed", closeReason: "adopted" });
    expect(t.queue.read()).toEqual([expect.objectContaining({ ref: orphan.ref, bootNote: expect.stringContaining("box-a") })]);
    expect(t.emitted("session.adopted")).toEqual([expect.objectContaining({ work_item: orphan.ref, started: false, queued: true })]);
    // Handed out again while the start waits: held again, not failed, and its lease given up again for a daemon with room.
    expect(await t.boxB.handle(comment)).toEqual({ settled: false, held: true });
    expect(await t.boxB.handle(comment)).toEqual({ settled: false, held: true });
    expect(t.ownership.released.filter((ref) => ref === orphan.ref).length).toBeGreaterThanOrEqual(3);
    expect(t.runner.delivered).toEqual([]);

    // A slot frees, the queued adoption starts, and the comment reaches its agent.
    expect(await t.boxB.control({ ref: other.ref, command: "stop", source: "cli", actor: "operator" })).toMatchObject({ effect: "stopped" });
    expect(await t.boxB.startQueued()).toBe(1);
    expect(t.registry.get(orphan.ref)).toMatchObject({ status: "active" });
    expect(await t.boxB.handle(comment)).toEqual({ settled: true });
    await t.boxB.drain();
    expect(t.runner.delivered.map((paste) => paste.text)).toEqual([expect.stringContaining("Please also handle the empty file.")]);
  });

  it("leaves the lease given up after the heartbeat's look adopted the item into the start queue", async () => {
    const t = await setup();
    const orphan = await t.start(t.boxA, "Adopted by the look");
    await t.start(t.boxB, "Takes the last slot");
    const routing = { ...t.routing, limits: { ...t.routing.limits, maxLiveSessions: 1 } };
    t.boxB.reconfigure({ routing, policy: policyOf(routing), templates: BUILTIN_TEMPLATES });
    await t.lose(orphan);
    const before = t.ownership.taken.length;
    await t.boxB.takeOver(orphan.ref);
    expect(t.emitted("session.adopted")).toEqual([expect.objectContaining({ work_item: orphan.ref, queued: true })]);
    expect(t.ownership.taken.slice(before)).toEqual([orphan.ref]);
    expect(t.ownership.released).toEqual([orphan.ref]);
  });

  it("decides a held comment as any event once the queued adoption is stopped", async () => {
    const t = await setup();
    const orphan = await t.start(t.boxA, "Stopped in the queue");
    await t.start(t.boxB, "Takes the last slot");
    const routing = { ...t.routing, limits: { ...t.routing.limits, maxLiveSessions: 1 } };
    t.boxB.reconfigure({ routing, policy: policyOf(routing), templates: BUILTIN_TEMPLATES });
    await t.lose(orphan);
    await t.comment(orphan.ref, "One more thing.");
    const comment = await t.polled(orphan.ref);
    expect(await t.boxB.handle(comment)).toEqual({ settled: false, held: true });

    expect(await t.boxB.control({ ref: orphan.ref, command: "stop", source: "cli", actor: "operator" })).toMatchObject({ applied: true });
    expect(t.queue.read()).toEqual([]);
    expect(await t.boxB.handle(comment)).toEqual({ settled: true });
    await t.boxB.drain();
    expect(t.runner.delivered).toEqual([]);
  });
});
