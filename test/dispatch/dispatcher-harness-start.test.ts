import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { processStartTicks } from "../../src/daemon/pidfile.js";
import { ControlStore } from "../../src/control/store.js";
import type { InboundEvent, InboundKind } from "../../src/routing/inbound.js";
import type { DispatcherOptions } from "../../src/dispatch/dispatcher.js";
import { tmuxTargetFor } from "../../src/registry/record.js";
import type { SessionRecord } from "../../src/registry/record.js";
import { SessionRegistry } from "../../src/registry/registry.js";
import { listSessionRecords, listSessionSummaries } from "../../src/registry/listing.js";
import { workItemSlug } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { FakeRunner } from "../support/fake-runner.js";
import { ARM, T0, dispatcherSetup, tracked } from "./fixture.js";
import { waitFor } from "../support/wait.js";
import { sessionRecord } from "../support/builders.js";

/**
 * Two processes on one state root and one work item (the daemon and `the-loop sessions start`):
 * one has claimed the item's session and is still starting its harness when the other's event
 * arrives and finds the record live but no pane in tmux. That pane is not dead, it is not there
 * yet: the claimer's start is waited for (the record's harnessStartedAt mark), never raced with a
 * respawn of its own. Tmux is the fake runner; both dispatchers share it, as they share a server.
 */

async function setup(routing: Record<string, unknown> = {}) {
  let clock = T0;
  const base = await dispatcherSetup({ routing: { announce: { enabled: false }, ...routing }, runner: new FakeRunner(), now: () => clock });
  /** The daemon: the process that claims. */
  const daemon = (options: Partial<DispatcherOptions> = {}) => base.dispatcher(options);
  /** The registry of the last dispatcher `other` made. */
  let otherRegistry: ReadCountingRegistry | undefined;
  /** Another process on the same state root: its own registry and control store objects. */
  const other = (options: Partial<DispatcherOptions> = {}) => {
    otherRegistry = new ReadCountingRegistry({ dir: base.paths.registryDir });
    return base.dispatcher({ registry: otherRegistry, control: new ControlStore({ dir: base.paths.controlDir }), ...options });
  };
  /**
   * The other process's delivery to `target` found no pane and is now waiting for the claimer's
   * mark: it has read the record again, twice, since it missed. A respawn comes only after that
   * wait gives up, so from here on, a spawn that has not happened is one it did not make.
   */
  const waitingForClaimer = async (item: WorkItem, target: string): Promise<void> => {
    const registry = otherRegistry;
    if (registry === undefined) throw new Error("no other dispatcher was made");
    const readsAtMiss = await waitFor(`a delivery to ${target} that finds no pane`, () => base.runner.missed.includes(target) && registry.readsOf(item.ref));
    await waitFor("the waiting delivery to read the record again", () => registry.readsOf(item.ref) >= readsAtMiss + 2);
  };
  const open = async (title: string): Promise<{ item: WorkItem; target: string }> => {
    const opened = await base.trackers.local.openItem({ project: "demo", title, labels: [ARM], actor: "alice", body: `Details of ${title}.` });
    return { item: opened.item, target: tmuxTargetFor(workItemSlug(opened.item.ref)) };
  };
  let deliveries = 0;
  const event = (item: WorkItem, kind: InboundKind = "commented"): InboundEvent => {
    deliveries += 1;
    return {
      source: "cli",
      deliveryId: `race-${deliveries}`,
      kind,
      trackerEvent: `cli:${kind}`,
      workItems: [item],
      actor: "alice",
      body: kind === "commented" ? `comment number ${deliveries}` : null,
      labels: [ARM],
      ...(kind === "labeled" ? { label: ARM } : {}),
      itemState: "open",
      title: "Racing",
      occurredAt: T0.toISOString(),
      excerpt: { body: `excerpt of ${deliveries}` },
    };
  };
  const setClock = (at: Date): void => {
    clock = at;
  };
  /** What a claimer leaves before it starts the harness: a live record, no mark, no pane. */
  const claimedBy = async (item: WorkItem, target: string, claimer: SessionRecord["claimedBy"]): Promise<void> => {
    await new SessionRegistry({ dir: base.paths.registryDir }).claim(item, () =>
      sessionRecord(item, {
        harness: "fake",
        harnessSessionId: "11111111-2222-4333-8444-555555555555",
        cwd: base.spawnCwd,
        createdAt: T0.toISOString(),
        tmuxTarget: target,
        recentDeliveries: ["race-0"],
        ...(claimer === undefined ? {} : { claimedBy: claimer }),
      }),
    );
  };
  return { ...base, daemon, other, waitingForClaimer, open, event, setClock, claimedBy };
}

/** A registry that counts its reads of each record: a delivery waiting for a claimer's mark polls it. */
class ReadCountingRegistry extends SessionRegistry {
  private readonly reads = new Map<string, number>();

  override get(ref: string): SessionRecord | undefined {
    this.reads.set(ref, this.readsOf(ref) + 1);
    return super.get(ref);
  }

  readsOf(ref: string): number {
    return this.reads.get(ref) ?? 0;
  }
}

const HAS_PROC = existsSync("/proc/self/stat");
/**
 * Far longer than any test here may run (vitest's timeout), so a test that passes with it proves
 * the delivery took over without waiting the bound out — no wall-clock assertion needed.
 */
const LONG_BOUND_MS = 600_000;

type Setup = Awaited<ReturnType<typeof setup>>;

/** The waiting delivery took the session over: one respawned harness, running. */
function expectTookOver(t: Setup, target: string): void {
  expect(t.emitted("session.respawned")).toHaveLength(1);
  expect(t.runner.stateOf(target)).toBe("live");
}

/** The pid of a process that has run and exited (and been reaped): nothing runs under it now. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await once(child, "exit");
  const pid = child.pid;
  if (pid === undefined) throw new Error("the child process did not start");
  return pid;
}

/** A process that runs until it is killed. */
async function liveProcess(): Promise<{ readonly pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  await once(child, "spawn");
  const pid = child.pid;
  if (pid === undefined) throw new Error("the child process did not start");
  const exited = once(child, "exit");
  return {
    pid,
    async stop() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

describe("a delivery into a session whose claimer is still starting its harness", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("waits for the claimer's harness instead of respawning it, then delivers into it", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    const gate = t.runner.holdSpawn(target);
    const spawning = tracked(t.daemon().handle(t.event(item, "labeled")));
    // The daemon has claimed the session and is inside runner.spawn.
    await gate.entered;
    expect(t.record(item.ref).status).toBe("active");
    expect(t.record(item.ref).harnessStartedAt).toBeUndefined();

    const later = t.event(item);
    const delivering = tracked(t.other().handle(later));
    await t.waitingForClaimer(item, target);
    // No second harness: the other process waits for the claimer's.
    expect(t.runner.spawnsOf(target)).toHaveLength(1);
    expect(delivering.done()).toBe(false);
    expect(spawning.done()).toBe(false);

    gate.release();
    expect(await spawning.promise).toEqual({ settled: true });
    expect(await delivering.promise).toEqual({ settled: true });

    expect(t.runner.spawnsOf(target)).toHaveLength(1);
    expect(t.runner.inputsOf(target)).toHaveLength(1);
    expect(t.runner.inputsOf(target)[0]).toContain(`excerpt of 2`);
    const record = t.record(item.ref);
    expect(record.status).toBe("active");
    expect(record.harnessStartedAt).toBe(T0.toISOString());
    expect(record.recentDeliveries).toContain(later.deliveryId);
    expect(t.emitted("session.spawned")).toHaveLength(1);
    expect(t.emitted("session.respawned")).toEqual([]);
    expect(t.emitted("session.spawn_failed")).toEqual([]);
    expect(t.emitted("dispatch.succeeded")).toEqual([{ work_item: item.ref, delivery_id: later.deliveryId, tmux_target: target }]);
  });

  it("hands the event back for another try when the claimer's spawn fails", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    const gate = t.runner.holdSpawn(target);
    t.runner.failSpawn(target);
    const spawning = t.daemon().handle(t.event(item, "labeled"));
    await gate.entered;

    const other = t.other();
    const later = t.event(item);
    const delivering = tracked(other.handle(later));
    await t.waitingForClaimer(item, target);
    expect(delivering.done()).toBe(false);
    gate.release();
    // The claimer's spawn failed with an ordinary error: it is retried too.
    expect(await spawning).toEqual({ settled: false });
    expect(await delivering.promise).toEqual({ settled: false });

    expect(t.runner.spawnsOf(target)).toHaveLength(1);
    expect(t.runner.stateOf(target)).toBe("absent");
    expect(t.record(item.ref)).toMatchObject({ status: "closed", closeReason: "spawn-failed" });
    expect(t.emitted("session.respawned")).toEqual([]);
    expect(t.emitted("dispatch.failed").at(-1)).toMatchObject({
      work_item: item.ref,
      delivery_id: later.deliveryId,
      action: "deliver",
      will_retry: true,
    });

    // Handed out again, the same event starts the session itself.
    expect(await other.handle(later)).toEqual({ settled: true });
    expect(t.runner.stateOf(target)).toBe("live");
    expect(t.record(item.ref)).toMatchObject({ status: "active", recentDeliveries: [later.deliveryId] });
    expect(t.emitted("session.spawned")).toHaveLength(1);
  });

  it("respawns once the bound passes with the record still unmarked and naming no claimer: the claimer died after its claim", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    // What a process killed between its claim and its spawn leaves behind.
    const claimer = new SessionRegistry({ dir: t.paths.registryDir });
    await claimer.claim(item, () =>
      sessionRecord(item, {
        harness: "fake",
        harnessSessionId: "11111111-2222-4333-8444-555555555555",
        cwd: t.spawnCwd,
        createdAt: T0.toISOString(),
        tmuxTarget: target,
        recentDeliveries: ["race-0"],
      }),
    );

    // The bound is what is tested: the waiting delivery's pauses and its deadline run on the fake
    // clock. No child process here, and the records' locks are free, so nothing else takes a timer.
    vi.useFakeTimers();
    const later = t.event(item);
    const delivering = tracked(t.other({ harnessStartWaitMs: 400 }).handle(later));
    await waitFor("the delivery to find no pane", () => t.runner.missed.includes(target));
    await vi.advanceTimersByTimeAsync(399);
    expect(delivering.done()).toBe(false);
    expect(t.runner.spawnsOf(target)).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(await delivering.promise).toEqual({ settled: true });

    expect(t.runner.stateOf(target)).toBe("live");
    expect(t.runner.spawnsOf(target)).toHaveLength(1);
    expect(t.emitted("session.respawned")).toHaveLength(1);
    expect(t.record(item.ref)).toMatchObject({ status: "active", harnessStartedAt: T0.toISOString() });
    expect(t.record(item.ref).recentDeliveries).toContain(later.deliveryId);
  });

  it("respawns at once when the claimer is known dead: its pid runs no process", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    await t.claimedBy(item, target, { pid: await deadPid() });

    const later = t.event(item);
    expect(await t.other({ harnessStartWaitMs: LONG_BOUND_MS }).handle(later)).toEqual({ settled: true });

    expect(t.runner.stateOf(target)).toBe("live");
    expect(t.runner.spawnsOf(target)).toHaveLength(1);
    expect(t.emitted("session.respawned")).toHaveLength(1);
    expect(t.record(item.ref)).toMatchObject({ status: "active", harnessStartedAt: T0.toISOString() });
    expect(t.record(item.ref).recentDeliveries).toContain(later.deliveryId);
  });

  it.runIf(HAS_PROC)("respawns at once when the claimer's pid now belongs to another process (start ticks differ)", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    // This process's pid, from a process before it: what a daemon restarted as pid 1 in a container finds.
    await t.claimedBy(item, target, { pid: process.pid, startTicks: (processStartTicks(process.pid) ?? 0) + 1 });

    expect(await t.other({ harnessStartWaitMs: LONG_BOUND_MS }).handle(t.event(item))).toEqual({ settled: true });
    expectTookOver(t, target);
  });

  it("keeps waiting while the claimer runs, and delivers once it marks the harness started", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    const claimer = await liveProcess();
    try {
      await t.claimedBy(item, target, { pid: claimer.pid, startTicks: processStartTicks(claimer.pid) });

      const later = t.event(item);
      const delivering = tracked(t.other({ harnessStartWaitMs: LONG_BOUND_MS }).handle(later));
      await t.waitingForClaimer(item, target);
      expect(delivering.done()).toBe(false);
      expect(t.runner.spawnsOf(target)).toEqual([]);

      // The claimer's harness comes up, and its mark after it.
      t.runner.startPane(target);
      const markedAt = new Date(T0.getTime() + 1_000).toISOString();
      await new SessionRegistry({ dir: t.paths.registryDir }).update(item.ref, (record) => ({ ...record, harnessStartedAt: markedAt }));
      expect(await delivering.promise).toEqual({ settled: true });

      expect(t.runner.spawnsOf(target)).toEqual([]);
      expect(t.runner.inputsOf(target)).toHaveLength(1);
      expect(t.emitted("session.respawned")).toEqual([]);
      expect(t.record(item.ref)).toMatchObject({ status: "active", harnessStartedAt: markedAt });
      expect(t.record(item.ref).recentDeliveries).toContain(later.deliveryId);
    } finally {
      await claimer.stop();
    }
  });

  it("takes over as soon as the claimer it waits for dies", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    const claimer = await liveProcess();
    await t.claimedBy(item, target, { pid: claimer.pid, startTicks: processStartTicks(claimer.pid) });

    const delivering = tracked(t.other({ harnessStartWaitMs: LONG_BOUND_MS }).handle(t.event(item)));
    await t.waitingForClaimer(item, target);
    expect(delivering.done()).toBe(false);
    await claimer.stop();
    expect(await delivering.promise).toEqual({ settled: true });
    expectTookOver(t, target);
  });

  it("keeps waiting while the claimer is this very process", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    await t.claimedBy(item, target, { pid: process.pid, startTicks: processStartTicks(process.pid) });

    const other = t.other({ harnessStartWaitMs: LONG_BOUND_MS });
    const delivering = tracked(other.handle(t.event(item)));
    await t.waitingForClaimer(item, target);
    expect(delivering.done()).toBe(false);
    expect(t.runner.spawnsOf(target)).toEqual([]);
    // Handed back when this process drains, never respawned.
    expect(await other.drain()).toBe(1);
    expect(await delivering.promise).toEqual({ settled: false });
    expect(t.emitted("session.respawned")).toEqual([]);
  });

  it("records the claiming process on the session it claims", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    const gate = t.runner.holdSpawn(target);
    const spawning = t.daemon().handle(t.event(item, "labeled"));
    await gate.entered;
    const ticks = processStartTicks(process.pid);
    expect(t.record(item.ref).claimedBy).toEqual(ticks === undefined ? { pid: process.pid } : { pid: process.pid, startTicks: ticks });
    gate.release();
    expect(await spawning).toEqual({ settled: true });
    expect(t.record(item.ref).claimedBy?.pid).toBe(process.pid);
  });

  it("takes an unmarked record older than the bound for one written before the mark existed: respawns at once", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    const claimer = new SessionRegistry({ dir: t.paths.registryDir });
    const yesterday = new Date(T0.getTime() - 24 * 3600_000).toISOString();
    await claimer.claim(item, () =>
      sessionRecord(item, {
        harness: "fake",
        harnessSessionId: "11111111-2222-4333-8444-555555555555",
        cwd: t.spawnCwd,
        createdAt: yesterday,
        tmuxTarget: target,
        recentDeliveries: ["race-0"],
      }),
    );
    // The harness of that session died (a reboot took the tmux server). The default bound is
    // longer than the test may run, so passing proves it was not waited out.
    expect(await t.other().handle(t.event(item))).toEqual({ settled: true });
    expectTookOver(t, target);
  });

  it("a claimer whose spawn finds the harness another process started for it keeps the session", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    const gate = t.runner.holdSpawn(target);
    const first = t.event(item, "labeled");
    const spawning = tracked(t.daemon().handle(first));
    await gate.entered;

    // The claimer is slower than the bound: the other process takes it for dead and starts the
    // harness. The bound passes on the fake clock; the claimer is held by the test, not by a timer.
    vi.useFakeTimers();
    const later = t.event(item);
    const taking = t.other({ harnessStartWaitMs: 100 }).handle(later);
    await waitFor("the delivery to find no pane", () => t.runner.missed.includes(target));
    await vi.advanceTimersByTimeAsync(100);
    expect(await taking).toEqual({ settled: true });
    vi.useRealTimers();
    expect(t.emitted("session.respawned")).toHaveLength(1);
    expect(t.record(item.ref).harnessStartedAt).toBeDefined();
    expect(spawning.done()).toBe(false);

    gate.release();
    expect(await spawning.promise).toEqual({ settled: true });
    // Its spawn met the live harness; the session it claimed runs, so it is not closed.
    expect(t.record(item.ref).status).toBe("active");
    expect(t.runner.stateOf(target)).toBe("live");
    expect(t.emitted("session.spawn_failed")).toEqual([]);
    expect(t.emitted("dispatch.dropped")).toContainEqual({
      work_item: item.ref,
      delivery_id: first.deliveryId,
      reason: "harness-started-elsewhere",
    });
  });

  it("stops waiting when its dispatcher drains, and hands the event back", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    const gate = t.runner.holdSpawn(target);
    const spawning = t.daemon().handle(t.event(item, "labeled"));
    await gate.entered;

    const other = t.other();
    const delivering = tracked(other.handle(t.event(item)));
    await t.waitingForClaimer(item, target);
    expect(delivering.done()).toBe(false);
    expect(await other.drain()).toBe(1);
    expect(await delivering.promise).toEqual({ settled: false });
    expect(t.runner.spawnsOf(target)).toHaveLength(1);

    gate.release();
    expect(await spawning).toEqual({ settled: true });
    expect(t.record(item.ref).status).toBe("active");
  });

  it("marks a respawned harness too, and a listing reads marked records", async () => {
    const t = await setup();
    const { item, target } = await t.open("Racing");
    const d = t.daemon();
    expect(await d.handle(t.event(item, "labeled"))).toEqual({ settled: true });
    const startedAt = t.record(item.ref).harnessStartedAt;
    expect(startedAt).toBe(T0.toISOString());

    t.runner.killPane(target);
    const respawnAt = new Date(T0.getTime() + 60_000);
    t.setClock(respawnAt);
    expect(await d.handle(t.event(item))).toEqual({ settled: true });
    expect(t.emitted("session.respawned")).toHaveLength(1);
    expect(t.record(item.ref).harnessStartedAt).toBe(respawnAt.toISOString());

    const listing = listSessionRecords(t.paths.registryDir);
    expect(listing.problems).toEqual([]);
    expect(listing.records.map((record) => record.harnessStartedAt)).toEqual([respawnAt.toISOString()]);
    expect(listSessionSummaries(t.paths.registryDir).summaries.map((summary) => summary.ref)).toEqual([item.ref]);
  });
});
