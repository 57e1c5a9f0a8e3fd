import { describe, expect, it } from "vitest";
import { DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import { HookChain } from "../../src/hooks/chain.js";
import { policyOf } from "../../src/routing/router.js";
import { BUILTIN_TEMPLATES } from "../../src/sessions/prompts.js";
import type { HookExecutor } from "../../src/hooks/types.js";
import { isSelfAuthored } from "../../src/workitem/marker.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { closeSession } from "../../src/sessions/close.js";
import type { Dispatcher } from "../../src/dispatch/dispatcher.js";
import { parseWorkItemRef } from "../../src/workitem/index.js";
import { Scripted } from "./hook-fixture.js";
import { ISSUE, PR, ghEvent, githubSetup, localSetup, routed, target } from "./fixture.js";
import { waitFor } from "../support/wait.js";

/**
 * The lifecycle points on the session side under concurrency: what a hook's run may hold up, and
 * what a refusal does when another process acted on the item while the hook was deciding.
 */

const KEYWORD = DEFAULT_CONTROL_KEYWORDS;

function gate(): { readonly wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

const refOf = (context: Record<string, unknown>): string => (context.workItem as { ref: string }).ref;

async function within<T>(promise: Promise<T>, ms = 10_000): Promise<T | "still waiting"> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"still waiting">((resolve) => (timer = setTimeout(() => resolve("still waiting"), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function setup(routing: Record<string, unknown> = {}) {
  const base = await localSetup({ routing: { control: { requireStartCommand: true }, ...routing } });
  const hooked = (...executors: HookExecutor[]): Dispatcher => base.dispatcher({ hooks: new HookChain(executors, base.events) });
  const thread = async (ref: string) => (await base.trackers.local.getItemWithComments(parseWorkItemRef(ref))).comments;
  const refusals = async (ref: string) => (await thread(ref)).filter((comment) => isSelfAuthored(comment.body) && comment.body.includes("lifecycle hook"));
  /** `the-loop sessions close`, from another process. */
  const cliClose = (ref: string) =>
    closeSession(
      { registry: base.registry, runner: base.runner, tmux: base.routing.tmux, events: base.events, now: base.now, control: base.control },
      ref,
      "cli",
    );
  return { ...base, hooked, thread, refusals, cliClose };
}

describe("a hook holds up only its own work item (R6.2)", () => {
  for (const point of ["work_item_start", "session_spawn", "session_spawned"] as const) {
    it(`another item's spawn goes ahead while ${point} is still deciding, with one slot in the pool`, async () => {
      const t = await setup({ control: { requireStartCommand: false }, maxConcurrentDispatches: 1 });
      const slow = gate();
      const a = await t.open("Slow one");
      const b = await t.open("Other one");
      const [openedA, openedB] = (await t.feed()) as [InboundEvent, InboundEvent];
      const hook = new Scripted("slow", { [point]: async (c: Record<string, unknown>) => (refOf(c) === a.ref ? slow.wait.then(() => undefined) : undefined) });
      const d = t.hooked(hook);

      const first = d.handle(openedA);
      await waitFor(`the hook at ${point}`, () => hook.at(point).length === 1);
      const second = await within(d.handle(openedB));

      expect(second).toEqual({ settled: true });
      expect(t.runner.spawnsOf(b.target)).toHaveLength(1);
      slow.open();
      expect(await first).toEqual({ settled: true });
      expect(t.runner.spawnsOf(a.target)).toHaveLength(1);
    });
  }

  it("another item's spawn goes ahead while work_item_complete is still deciding, with one slot in the pool", async () => {
    const t = await setup({ control: { requireStartCommand: false }, maxConcurrentDispatches: 1 });
    const slow = gate();
    const hook = new Scripted("slow", { work_item_complete: async () => slow.wait.then(() => undefined) });
    const d = t.hooked(hook);
    const a = await t.open("Done soon");
    expect(await d.handle(await t.only())).toEqual({ settled: true });
    await t.trackers.local.setState(parseWorkItemRef(a.ref), "closed", "alice");
    const closedA = (await t.feed()).find((event) => event.kind === "closed") as InboundEvent;
    const b = await t.open("Next one");
    const openedB = await t.only();

    const first = d.handle(closedA);
    await waitFor("the hook at work_item_complete", () => hook.at("work_item_complete").length === 1);
    const second = await within(d.handle(openedB));

    expect(second).toEqual({ settled: true });
    expect(t.runner.spawnsOf(b.target)).toHaveLength(1);
    slow.open();
    expect(await first).toEqual({ settled: true });
  });

  it("with no hooks declared, one slot still runs one spawn at a time", async () => {
    const t = await setup({ control: { requireStartCommand: false }, maxConcurrentDispatches: 1 });
    const d = t.dispatcher();
    // A session already running, whose deliveries take no slot.
    const running = await t.open("Running");
    expect(await d.handle(await t.only())).toEqual({ settled: true });
    // Its announcement, which is no event for these sessions.
    await t.feed();
    const a = await t.open("First");
    const b = await t.open("Second");
    const [openedA, openedB] = (await t.feed()) as [InboundEvent, InboundEvent];
    const held = t.runner.holdSpawn(a.target);
    const first = d.handle(openedA);
    await held.entered;
    const second = d.handle(openedB);
    await waitFor("the second spawn's turn to begin", () => routed(t.events, openedB));
    // A comment handed in after it, delivered to its end through the registry's lock, while the second spawn waits for the slot.
    await t.comment(running.ref, "One more thing.");
    expect(await d.handle(await t.only())).toEqual({ settled: true });
    expect(t.runner.inputsOf(running.target)).toHaveLength(1);
    expect(t.registry.get(b.ref)).toBeUndefined();
    expect(t.runner.spawnsOf(b.target)).toEqual([]);
    held.release();
    await Promise.all([first, second]);
    expect(t.runner.maxConcurrentSpawns).toBe(1);
    expect(t.runner.spawnsOf(b.target)).toHaveLength(1);
  });
});

describe("a refusal meets a session another process started while the hook decided", () => {
  it("an event's refused start: the event goes to that session, nothing is disarmed or commented", async () => {
    const t = await setup({ control: { requireStartCommand: false } });
    const other = t.dispatcher();
    const a = await t.open("Raced");
    const opened = await t.only();
    await t.comment(a.ref, "Use the v2 parser.");
    const comment = await t.only();
    const policy = new Scripted("policy", {
      work_item_start: async (c) => {
        expect(await other.handle(opened)).toEqual({ settled: true });
        return { ...c, proceed: false, reason: "not now" };
      },
    });
    const d = t.hooked(policy);

    expect(await d.handle(comment)).toEqual({ settled: true });

    expect(t.registry.get(a.ref)).toMatchObject({ status: "active" });
    expect(t.runner.inputsOf(a.target).join("\n")).toContain("Use the v2 parser.");
    expect(t.control.get(a.ref)).toBeUndefined();
    expect(await t.refusals(a.ref)).toEqual([]);
    expect(t.emitted("hooks.refused")).toEqual([]);
  });

  it("a start command's refusal: the start is taken as a start of the running session, nothing is disarmed or commented", async () => {
    const t = await setup();
    const other = t.dispatcher();
    const a = await t.open("Raced");
    expect(await other.handle(await t.only())).toEqual({ settled: true });
    await t.comment(a.ref, KEYWORD.start);
    const start = await t.only();
    const policy = new Scripted("policy", {
      work_item_start: async (c) => {
        expect(await other.control({ ref: a.ref, command: "start", source: "cli", actor: "operator" })).toMatchObject({ applied: true, effect: "started" });
        return { ...c, proceed: false, reason: "not now" };
      },
    });
    const d = t.hooked(policy);

    expect(await d.handle(start)).toEqual({ settled: true });

    expect(t.registry.get(a.ref)).toMatchObject({ status: "active" });
    expect(t.control.get(a.ref)).toMatchObject({ command: "start", source: "comment", deliveryId: start.deliveryId, effect: "noop" });
    expect(await t.refusals(a.ref)).toEqual([]);
    expect(t.emitted("hooks.refused")).toEqual([]);
    expect(t.emitted("control.rejected")).toEqual([]);
  });
});

describe("a refusal never overwrites a newer command", () => {
  it("a start another process recorded while the hook decided stays standing", async () => {
    const t = await setup();
    const other = t.dispatcher();
    const a = await t.open("Raced");
    expect(await other.handle(await t.only())).toEqual({ settled: true });
    await t.comment(a.ref, KEYWORD.start);
    const start = await t.only();
    // The other process's start is honoured, and its spawn fails: the start stands, pending.
    t.runner.failSpawn(a.target);
    const policy = new Scripted("policy", {
      work_item_start: async (c) => {
        expect(await other.control({ ref: a.ref, command: "start", source: "cli", actor: "operator" })).toMatchObject({
          applied: true,
          effect: "start-pending",
        });
        return { ...c, proceed: false, reason: "not now" };
      },
    });
    const d = t.hooked(policy);

    expect(await d.handle(start)).toEqual({ settled: true });

    expect(t.control.get(a.ref)).toMatchObject({ command: "start", source: "cli", actor: "operator", effect: "start-pending" });
    // This start was refused all the same, and says so, without claiming the item is disarmed.
    const refusals = await t.refusals(a.ref);
    expect(refusals).toHaveLength(1);
    expect(refusals[0]?.body).not.toContain("is disarmed");
    expect(t.emitted("hooks.refused")).toMatchObject([{ point: "work_item_start", hook: "policy", delivery_id: start.deliveryId }]);
    // The refused start is remembered all the same: redelivered (after a restart), it is not taken again.
    expect(await t.hooked(policy).handle(start)).toEqual({ settled: true });
    expect(policy.at("work_item_start")).toHaveLength(1);
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "duplicate-delivery", delivery_id: start.deliveryId });
    // The standing start is still retried.
    expect(await t.dispatcher().retryPendingStarts()).toBe(1);
  });
});

describe("a refused launch closes only its own claim", () => {
  it("leaves the session another process claimed after closing this one", async () => {
    const t = await setup({ control: { requireStartCommand: false } });
    const other = t.dispatcher();
    const a = await t.open("Raced");
    const opened = await t.only();
    const veto = new Scripted("veto", {
      session_spawn: async (c) => {
        await t.cliClose(a.ref);
        t.tick();
        expect(await other.handle(opened)).toEqual({ settled: true });
        return { ...c, proceed: false, reason: "not approved" };
      },
    });
    const d = t.hooked(veto);

    expect(await d.handle(opened)).toEqual({ settled: true });

    expect(t.registry.get(a.ref)).toMatchObject({ status: "active" });
    expect(t.runner.stateOf(a.target)).toBe("live");
    // Only `the-loop sessions close` ended anything, before the other process's session started.
    expect(t.runner.terminated).toHaveLength(1);
    expect(t.emitted("session.closed")).toMatchObject([{ reason: "cli" }]);
    expect(t.control.get(a.ref)?.source).not.toBe("hook");
  });
});

describe("input_received fires once per input", () => {
  it("for a comment whose pull request's launch is refused and that goes to the linked work item's session instead", async () => {
    const g = await githubSetup({ control: { requireStartCommand: false } });
    const other = g.dispatcher();
    const observer = new Scripted("observer", {
      input_received: () => undefined,
      session_spawn: async (c) => {
        expect(await other.handle(ghEvent({ on: ISSUE }))).toEqual({ settled: true });
        return { ...c, proceed: false, reason: "PRs are worked from their issue" };
      },
    });
    const d = g.dispatcher({ hooks: new HookChain([observer], g.events) });
    const event = ghEvent({ on: PR, linked: [[ISSUE, "closing-reference"]], commentId: "c-9", kind: "commented" });

    expect(await d.handle({ ...event, workItems: [PR, ISSUE] })).toEqual({ settled: true });

    expect(g.runner.delivered.map((delivery) => delivery.target)).toEqual([target(ISSUE)]);
    expect(observer.at("input_received").filter((c) => c.deliveryId === event.deliveryId)).toHaveLength(1);
  });
});

describe("a refused launch's checkout", () => {
  it("is released even where a closed session's harness is left running: none ever ran in it", async () => {
    const g = await githubSetup({ control: { requireStartCommand: false } }, { killHarnessOnClose: false });
    const veto = new Scripted("veto", { session_spawn: (c) => ({ ...c, proceed: false, reason: "harness not approved" }) });
    const d = g.dispatcher({ hooks: new HookChain([veto], g.events), workspaces: g.workspaces });

    expect(await d.handle(ghEvent({ on: ISSUE }))).toEqual({ settled: true });

    expect(g.record(ISSUE)).toMatchObject({ status: "closed", closeReason: "hook-refused" });
    expect(g.workspaces.released.map((released) => released.ref)).toEqual([ISSUE.ref]);
    expect(g.emitted("workspace.kept")).toEqual([]);
  });
});

describe("with no hooks declared, as before the hooks (R7.2)", () => {
  it("a spawn announces by the settings it started with, whatever a reload changes while it runs", async () => {
    const t = await setup({ control: { requireStartCommand: false } });
    const d = t.dispatcher();
    const a = await t.open("Announced");
    const held = t.runner.holdSpawn(a.target);
    const spawning = d.handle(await t.only());
    await held.entered;
    const quiet = { ...t.routing, announce: { ...t.routing.announce, enabled: false } };
    d.reconfigure({ routing: quiet, policy: policyOf(quiet), templates: BUILTIN_TEMPLATES });
    held.release();

    expect(await spawning).toEqual({ settled: true });
    expect(t.emitted("session.announced")).toHaveLength(1);
  });
});
