import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RoutingConfig } from "../../src/config/schema.js";
import { claimWithinLimits, queuedText, queuedToStart } from "../../src/dispatch/slots.js";
import type { LimitedClaim } from "../../src/dispatch/slots.js";
import { tmuxTargetFor } from "../../src/registry/record.js";
import type { SessionRecord } from "../../src/registry/record.js";
import { SessionRegistry } from "../../src/registry/registry.js";
import { StartQueue, startQueueFile } from "../../src/registry/start-queue.js";
import { ControlStore } from "../../src/control/store.js";
import { isSelfAuthored, parseWorkItemRef, workItemOf, workItemSlug } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";

const itemOf = (n: number): WorkItem => workItemOf(parseWorkItemRef(`local:demo#${n}`), { kind: "issue", url: `file:///demo/${n}`, id: `L_${n}` });

function recordOf(item: WorkItem): SessionRecord {
  const slug = workItemSlug(item.ref);
  const now = new Date().toISOString();
  return {
    version: 1,
    workItem: { ...item },
    harness: "fake",
    harnessSessionId: `s-${slug}`,
    cwd: `/work/${slug}`,
    status: "active",
    createdAt: now,
    lastEventAt: now,
    tmuxTarget: tmuxTargetFor(slug),
    recentDeliveries: [],
    url: item.url,
  };
}

/** Two processes' worth of the context claimWithinLimits reads: their own queue and registry objects over one state root. */
function contextOf(root: string, caps: Partial<RoutingConfig["limits"]>) {
  const limits: RoutingConfig["limits"] = { perHarness: {}, perRepository: {}, perNode: {}, ...caps };
  return {
    now: () => new Date(),
    routing: { limits } as RoutingConfig,
    options: {
      registry: new SessionRegistry({ dir: join(root, "sessions") }),
      startQueue: new StartQueue({ file: startQueueFile(root) }),
      control: new ControlStore({ dir: join(root, "sessions", "control") }),
    },
  };
}

describe("claimWithinLimits: the caps at the claim, under the queue's lock", () => {
  it("of six starts racing over two processes with maxLiveSessions 2, exactly two claim and four queue at places 1 to 4", async () => {
    const root = await tempDir();
    const processes = [contextOf(root, { maxLiveSessions: 2 }), contextOf(root, { maxLiveSessions: 2 })];
    const results: LimitedClaim[] = await Promise.all(
      [1, 2, 3, 4, 5, 6].map((n) => {
        const ctx = processes[n % 2]!;
        const item = itemOf(n);
        return claimWithinLimits(ctx, item.ref, "fake", { labels: [] }, () => ctx.options.registry.claim(item, () => recordOf(item)));
      }),
    );
    const claimed = results.filter((result) => "claimed" in result && result.claimed);
    const queued = results.flatMap((result) => ("queued" in result ? [result.queued] : []));
    expect(claimed).toHaveLength(2);
    expect(queued.map((place) => place.position).sort()).toEqual([1, 2, 3, 4]);
    expect(queued.every((place) => place.fresh && place.cap.cap === "maxLiveSessions")).toBe(true);
    expect(processes[0]!.options.startQueue.read()).toHaveLength(4);
    expect(processes[0]!.options.registry.list({ status: "live" }).records).toHaveLength(2);
  });

  it("keeps a queued item's place when it asks again, and lets the head through once a slot frees", async () => {
    const root = await tempDir();
    const ctx = contextOf(root, { maxLiveSessions: 1 });
    const claim = (n: number) =>
      claimWithinLimits(ctx, itemOf(n).ref, "fake", { labels: [] }, () => ctx.options.registry.claim(itemOf(n), () => recordOf(itemOf(n))));
    expect(await claim(1)).toMatchObject({ claimed: true });
    expect(await claim(2)).toMatchObject({ queued: { position: 1, ahead: 0, fresh: true } });
    expect(await claim(3)).toMatchObject({ queued: { position: 2, ahead: 1, fresh: true } });
    expect(await claim(3)).toMatchObject({ queued: { position: 2, fresh: false } });
    await ctx.options.registry.close(itemOf(1).ref, "cli", new Date());
    // #3 asks first, but #2 is ahead of it and takes the slot in turn.
    expect(await claim(3)).toMatchObject({ queued: { position: 2 } });
    expect(await claim(2)).toMatchObject({ claimed: true });
    expect(ctx.options.startQueue.read().map((entry) => entry.ref)).toEqual([itemOf(3).ref]);
  });

  it("keeps a queued start's boot note and branch (an adoption's) with its place, and stores none for a start without them", async () => {
    const root = await tempDir();
    const ctx = contextOf(root, { maxLiveSessions: 1 });
    const claim = (n: number, bootNote?: string, branch?: string) =>
      claimWithinLimits(ctx, itemOf(n).ref, "fake", { labels: [], bootNote, branch }, () => ctx.options.registry.claim(itemOf(n), () => recordOf(itemOf(n))));
    expect(await claim(1)).toMatchObject({ claimed: true });
    expect(await claim(2, "You were adopted from box-a.", "health")).toMatchObject({ queued: { position: 1, fresh: true } });
    expect(await claim(3)).toMatchObject({ queued: { position: 2, fresh: true } });
    // Read back from the stored queue, as the dequeue reads it.
    const stored = new StartQueue({ file: startQueueFile(root) }).read();
    expect(stored.map((entry) => [entry.ref, entry.bootNote, entry.branch])).toEqual([
      [itemOf(2).ref, "You were adopted from box-a.", "health"],
      [itemOf(3).ref, undefined, undefined],
    ]);
  });

  it("puts a start with the priority label ahead of every start without it, FIFO among each", async () => {
    const root = await tempDir();
    const ctx = contextOf(root, { maxLiveSessions: 1, priorityLabel: "urgent" });
    const claim = (n: number, labels: string[] = []) =>
      claimWithinLimits(ctx, itemOf(n).ref, "fake", { labels }, () => ctx.options.registry.claim(itemOf(n), () => recordOf(itemOf(n))));
    expect(await claim(1)).toMatchObject({ claimed: true });
    expect(await claim(2)).toMatchObject({ queued: { position: 1, ahead: 0 } });
    expect(await claim(3, ["Urgent"])).toMatchObject({ queued: { position: 1, ahead: 0, fresh: true } });
    expect(await claim(4, ["urgent"])).toMatchObject({ queued: { position: 2, ahead: 1, fresh: true } });
    expect(await claim(5)).toMatchObject({ queued: { position: 4, ahead: 3 } });
    const entries = ctx.options.startQueue.read();
    expect(entries.map((entry) => [entry.ref, entry.priority ?? false])).toEqual([
      [itemOf(3).ref, true],
      [itemOf(4).ref, true],
      [itemOf(2).ref, false],
      [itemOf(5).ref, false],
    ]);
    // The slot frees: the first priority start takes it, not the oldest start.
    await ctx.options.registry.close(itemOf(1).ref, "cli", new Date());
    expect(await claim(2)).toMatchObject({ queued: { position: 3 } });
    expect(await claim(3)).toMatchObject({ claimed: true });
  });

  it("lets a paused queued start keep its place while the start behind it takes the slot", async () => {
    const root = await tempDir();
    const ctx = contextOf(root, { maxLiveSessions: 1 });
    const claim = (n: number) =>
      claimWithinLimits(ctx, itemOf(n).ref, "fake", { labels: [] }, () => ctx.options.registry.claim(itemOf(n), () => recordOf(itemOf(n))));
    expect(await claim(1)).toMatchObject({ claimed: true });
    expect(await claim(2)).toMatchObject({ queued: { position: 1 } });
    expect(await claim(3)).toMatchObject({ queued: { position: 2 } });
    const at = new Date().toISOString();
    await ctx.options.control.transaction(itemOf(2).ref, (tx) =>
      tx.write({
        version: 1,
        ref: itemOf(2).ref,
        command: "pause",
        source: "cli",
        actor: "op",
        requestedAt: at,
        effect: "recorded",
        deliveryId: "d-pause",
        recentDeliveries: [],
      }),
    );
    await ctx.options.registry.close(itemOf(1).ref, "cli", new Date());
    expect(queuedToStart(ctx)).toEqual([itemOf(3).ref]);
    expect(await claim(3)).toMatchObject({ claimed: true });
    expect(ctx.options.startQueue.read().map((entry) => entry.ref)).toEqual([itemOf(2).ref]);
  });

  it("with no cap and nothing queued is the claim alone", async () => {
    const ctx = contextOf(await tempDir(), {});
    for (const n of [1, 2, 3]) {
      expect(
        await claimWithinLimits(ctx, itemOf(n).ref, "fake", { labels: [] }, () => ctx.options.registry.claim(itemOf(n), () => recordOf(itemOf(n)))),
      ).toMatchObject({
        claimed: true,
      });
    }
    expect(ctx.options.startQueue.read()).toEqual([]);
  });

  it("says, in a marked comment, the place and the cap", () => {
    const text = queuedText("local:demo#2", { position: 1, ahead: 0, cap: { cap: "maxLiveSessions", limit: 2 }, fresh: true });
    expect(isSelfAuthored(text)).toBe(true);
    expect(text).toContain("position 1 in the start queue (0 ahead), because routing.limits.maxLiveSessions 2 is reached");
  });
});
