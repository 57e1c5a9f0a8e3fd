import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import type { ControlCommand } from "../../src/config/schema.js";
import { ControlStore } from "../../src/control/store.js";
import type { ControlTransaction } from "../../src/control/store.js";
import type { ControlOutcome, ControlRequest } from "../../src/control/types.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { policyOf } from "../../src/routing/router.js";
import { closeSession } from "../../src/sessions/close.js";
import type { Dispatcher } from "../../src/dispatch/dispatcher.js";
import { BUILTIN_TEMPLATES, renderResumeNote } from "../../src/sessions/prompts.js";
import { SessionRegistry } from "../../src/registry/registry.js";
import { parseWorkItemRef } from "../../src/workitem/index.js";
import { ARM, ISSUE, PR, T0, ghEvent, githubSetup, localSetup, routed, target as ghTarget, tracked } from "./fixture.js";
import { waitFor } from "../support/wait.js";

/**
 * Execution control in the dispatcher (spec R2.3–2.5, R3, R4.5): comment keywords and the CLI's
 * `control()` over the real session registry, control store and local tracker, with tmux
 * replaced by the fake runner. Events come from the local tracker's change feed, as the poller
 * hands them out. The start gate is on (requireStartCommand) unless a test says otherwise.
 */

const KEYWORD = DEFAULT_CONTROL_KEYWORDS;

interface Overrides {
  readonly routing?: Record<string, unknown>;
  readonly tmux?: Record<string, unknown>;
}

async function setup(overrides: Overrides = {}) {
  const base = await localSetup({
    routing: { control: { requireStartCommand: true }, ...overrides.routing },
    tmux: { harnessKillGraceSeconds: 0, ...overrides.tmux },
  });
  const { feed, only, open } = base;
  /** A comment by `actor`, as the poller hands it out. */
  const say = async (ref: string, body: string, actor = "alice"): Promise<InboundEvent> => {
    await base.comment(ref, body, actor);
    return only();
  };
  /** Handles `event` on `d` and expects it settled. */
  const handled = async (d: Dispatcher, event: InboundEvent): Promise<void> => {
    expect(await d.handle(event)).toEqual({ settled: true });
  };
  /** A command in a comment, handled; the-loop's own comments it caused (the announcement) are read off the feed. */
  const command = async (d: Dispatcher, ref: string, name: ControlCommand, actor = "alice"): Promise<InboundEvent> => {
    const event = await say(ref, `${KEYWORD[name]}`, actor);
    await handled(d, event);
    await feed();
    return event;
  };
  const cli = (d: Dispatcher, ref: string, name: ControlCommand, extra: Partial<ControlRequest> = {}): Promise<ControlOutcome> =>
    d.control({ ref, command: name, source: "cli", actor: "operator", note: `the-loop sessions ${name}`, ...extra });
  /** An armed item whose session a start comment started. */
  const started = async (d: Dispatcher, title = "Parser crashes"): Promise<{ ref: string; target: string; url: string }> => {
    const item = await open(title);
    await handled(d, await only());
    await command(d, item.ref, "start");
    expect(base.runner.stateOf(item.target)).toBe("live");
    return item;
  };
  const commandEvents = () => base.emitted("control.command");
  return { ...base, say, handled, command, cli, started, commandEvents };
}

describe("the start gate (R2.1, R2.3)", () => {
  it("arms on the label alone: an armed item waits for the start command and nothing is recorded", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.open("Armed only");
    const opened = await t.only();
    await t.handled(d, opened);

    expect(t.emitted("routing.dropped")).toEqual([
      { reason: "awaiting-start", delivery_id: opened.deliveryId, kind: "opened", work_item: ref, actor: "alice" },
    ]);
    expect(t.runner.spawnsOf(target)).toEqual([]);
    expect(t.registry.get(ref)).toBeUndefined();
    expect(t.control.get(ref)).toBeUndefined();

    // An ordinary comment does not start it either.
    await t.handled(d, await t.say(ref, "any news?"));
    expect(t.runner.spawnRequests).toEqual([]);
  });

  it("spawns on an authorized start: boot prompt from the bare keyword, announcement, record, control.command", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.open("Parser crashes");
    await t.handled(d, await t.only());

    const start = await t.say(ref, `${KEYWORD.start}\n\nAnd please also rewrite the tokenizer.`);
    await t.handled(d, start);

    const record = t.record(ref);
    expect(record).toMatchObject({ status: "active", recentDeliveries: [start.deliveryId] });
    expect(t.runner.spawnsOf(target)).toHaveLength(1);
    const prompt = t.runner.spawnsOf(target)[0]?.argv[1] ?? "";
    expect(prompt).toContain(`to work on ${ref}: Parser crashes`);
    expect(prompt).toContain("command: start");
    expect(prompt).toContain("source: comment");
    // The comment is a command, never harness input.
    expect(prompt).not.toContain("tokenizer");
    expect(t.runner.delivered).toEqual([]);

    const thread = await t.trackers.local.getItemWithComments(parseWorkItemRef(ref));
    expect(thread.comments.at(-1)?.body).toContain(`tmux attach -t ${target}`);
    expect(t.emitted("session.announced")).toHaveLength(1);

    expect(t.control.get(ref)).toEqual({
      version: 1,
      ref,
      command: "start",
      source: "comment",
      actor: "alice",
      requestedAt: T0.toISOString(),
      effect: "started",
      note: start.commentUrl,
      deliveryId: start.deliveryId,
      recentDeliveries: [start.deliveryId],
    });
    expect(t.emitted("routing.routed")).toMatchObject([{ delivery_id: start.deliveryId, decision: "control" }]);
    expect(t.commandEvents()).toEqual([
      { work_item: ref, command: "start", command_source: "comment", actor: "alice", effect: "started", delivery_id: start.deliveryId },
    ]);
    expect(t.emitted("session.spawned")).toMatchObject([{ work_item: ref, delivery_id: start.deliveryId }]);

    // The same comment redelivered after a restart is not applied again.
    await t.handled(t.dispatcher(), start);
    expect(t.emitted("routing.dropped")).toMatchObject([{ reason: "awaiting-start" }, { reason: "duplicate-delivery" }]);
    expect(t.runner.spawnRequests).toHaveLength(1);
  });

  it("refuses a start on an unarmed item, records nothing, and arming it later does not start it (R2.4)", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.open("Not armed", []);
    await t.handled(d, await t.only());

    const start = await t.command(d, ref, "start");
    expect(t.emitted("control.rejected")).toEqual([
      { work_item: ref, command: "start", command_source: "comment", actor: "alice", reason: "not-armed", delivery_id: start.deliveryId },
    ]);
    expect(t.commandEvents()).toEqual([]);
    expect(t.control.get(ref)).toBeUndefined();
    expect(t.runner.spawnRequests).toEqual([]);

    await t.trackers.local.addLabels(parseWorkItemRef(ref), [ARM], "alice");
    const labeled = await t.only();
    await t.handled(d, labeled);
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "awaiting-start", delivery_id: labeled.deliveryId });
    expect(t.runner.spawnsOf(target)).toEqual([]);
  });

  it("keeps a start whose spawn failed pending; the item's next event spawns without another comment (R2.5)", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.open("Flaky tmux");
    await t.handled(d, await t.only());
    t.runner.failSpawn(target, new Error("tmux new-session failed: server exited unexpectedly"));

    const start = await t.command(d, ref, "start");
    expect(t.record(ref)).toMatchObject({ status: "closed", closeReason: "spawn-failed" });
    expect(t.control.get(ref)).toMatchObject({ command: "start", effect: "start-pending", deliveryId: start.deliveryId });
    expect(t.commandEvents()).toEqual([
      {
        work_item: ref,
        command: "start",
        command_source: "comment",
        actor: "alice",
        effect: "start-pending",
        delivery_id: start.deliveryId,
        error: "tmux new-session failed: server exited unexpectedly",
      },
    ]);
    expect(t.emitted("session.spawn_failed")).toHaveLength(1);

    const next = await t.say(ref, "are you on it?");
    await t.handled(d, next);
    expect(t.record(ref)).toMatchObject({ status: "active", recentDeliveries: [next.deliveryId] });
    expect(t.runner.stateOf(target)).toBe("live");
    expect(t.control.get(ref)).toMatchObject({ command: "start", effect: "started", deliveryId: start.deliveryId });
  });

  it("retryPendingStarts starts every pending start that is still armed, and skips the rest", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const a = await t.open("Retry me");
    const b = await t.open("Disarmed since");
    for (const event of await t.feed()) await t.handled(d, event);
    for (const item of [a, b]) {
      t.runner.failSpawn(item.target);
      await t.command(d, item.ref, "start");
      expect(t.control.get(item.ref)).toMatchObject({ effect: "start-pending" });
    }
    await t.trackers.local.removeLabels(parseWorkItemRef(b.ref), [ARM], "alice");
    await t.feed();

    // A restarted daemon.
    const restarted = t.dispatcher();
    expect(await restarted.retryPendingStarts()).toBe(1);

    expect(t.runner.stateOf(a.target)).toBe("live");
    expect(t.record(a.ref).status).toBe("active");
    const spawned = t.emitted("session.spawned");
    expect(spawned).toHaveLength(1);
    expect(String(spawned[0]?.delivery_id)).toMatch(/^control-retry-[0-9a-f-]{36}$/);
    const prompt = t.runner.spawnsOf(a.target).at(-1)?.argv[1] ?? "";
    expect(prompt).toContain("commented by alice");
    expect(prompt).toContain("command: start");
    expect(t.control.get(a.ref)).toMatchObject({ effect: "started" });

    expect(t.runner.spawnsOf(b.target)).toHaveLength(1);
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: b.ref, reason: "spawn-policy" }]);
    expect(t.control.get(b.ref)).toMatchObject({ command: "start", effect: "start-pending" });

    // Nothing left to start: a live session is not started again.
    expect(await restarted.retryPendingStarts()).toBe(0);
    expect(t.runner.spawnsOf(a.target)).toHaveLength(2);
  });
});

describe("pause, resume, stop on a live session (R3)", () => {
  it("pause drops later events as session-paused, without delivering or queueing them", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);

    const pause = await t.command(d, ref, "pause");
    expect(t.record(ref)).toMatchObject({ status: "paused" });
    expect(t.record(ref).recentDeliveries).toContain(pause.deliveryId);
    expect(t.control.get(ref)).toMatchObject({ command: "pause", effect: "paused", deliveryId: pause.deliveryId });
    expect(t.emitted("session.paused")).toEqual([{ work_item: ref, tmux_target: target, command_source: "comment", actor: "alice" }]);
    expect(t.commandEvents().at(-1)).toMatchObject({ command: "pause", effect: "paused" });

    const later = await t.say(ref, "please also fix the docs");
    await t.handled(d, later);
    expect(t.emitted("dispatch.dropped")).toEqual([{ work_item: ref, delivery_id: later.deliveryId, reason: "session-paused" }]);
    expect(t.runner.delivered).toEqual([]);
    // Control comments are never forwarded either.
    expect(t.runner.inputsOf(target)).toEqual([]);
  });

  it("resume tells the harness to re-read the thread, delivers what comes next and replays nothing (R3.3)", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target, url } = await t.started(d);
    await t.command(d, ref, "pause");
    await t.handled(d, await t.say(ref, "missed while paused"));

    const resume = await t.command(d, ref, "resume", "bob-not-allowed");
    // bob is not authorized: nothing happens.
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "unauthorized-actor", delivery_id: resume.deliveryId });
    expect(t.record(ref).status).toBe("paused");

    const resumed = await t.command(d, ref, "resume");
    expect(t.record(ref).status).toBe("active");
    expect(t.control.get(ref)).toMatchObject({ command: "resume", effect: "resumed", deliveryId: resumed.deliveryId });
    const note = renderResumeNote({ workItem: { ref, url }, actor: "alice", source: "comment" });
    expect(note).toContain(`re-read the work item's thread at ${url}`);
    expect(t.runner.inputsOf(target)).toEqual([note]);
    expect(t.emitted("session.resumed")).toEqual([{ work_item: ref, tmux_target: target, command_source: "comment", actor: "alice", notified: true }]);

    const next = await t.say(ref, "now with feeling");
    await t.handled(d, next);
    const inputs = t.runner.inputsOf(target);
    expect(inputs).toHaveLength(2);
    expect(inputs[1]).toContain("now with feeling");
    expect(inputs.join("\n")).not.toContain("missed while paused");
  });

  it("resume restarts a dead harness with the note as its prompt", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);
    await t.command(d, ref, "pause");
    t.runner.killPane(target);

    await t.command(d, ref, "resume");
    expect(t.runner.stateOf(target)).toBe("live");
    const respawn = t.runner.spawnsOf(target).at(-1);
    expect(respawn?.argv.slice(0, 2)).toEqual(["fake", "--resume"]);
    expect(respawn?.argv.at(-1)).toContain("was resumed by alice (comment)");
    expect(t.emitted("session.resumed")).toMatchObject([{ notified: true }]);
  });

  it("stop closes the session through the close path and keeps the item from starting again (R3.4)", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);

    const stop = await t.command(d, ref, "stop");
    expect(t.record(ref)).toMatchObject({ status: "closed", closeReason: "stopped" });
    expect(t.runner.terminated).toEqual([{ target, options: { killHarness: true, graceMs: 0, killSession: false } }]);
    expect(t.runner.stateOf(target)).toBe("dead");
    expect(t.emitted("session.closed")).toMatchObject([{ work_item: ref, reason: "stopped" }]);
    expect(t.control.get(ref)).toMatchObject({ command: "stop", effect: "stopped", deliveryId: stop.deliveryId });
    expect(t.control.get(ref)?.clearedAt).toBeUndefined();
    expect(t.emitted("control.cleared")).toEqual([]);

    const next = await t.say(ref, "hello?");
    await t.handled(d, next);
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "execution-stopped", delivery_id: next.deliveryId });
    expect(t.runner.spawnsOf(target)).toHaveLength(1);

    // The next start lifts it.
    await t.command(d, ref, "start");
    expect(t.record(ref).status).toBe("active");
    expect(t.runner.spawnsOf(target)).toHaveLength(2);
  });

  it("start on a paused session resumes it; start on an active one is a recorded no-op (R3.5)", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);

    const again = await t.command(d, ref, "start");
    expect(t.commandEvents().at(-1)).toMatchObject({ command: "start", effect: "noop", delivery_id: again.deliveryId });
    expect(t.control.get(ref)).toMatchObject({ command: "start", effect: "noop", deliveryId: again.deliveryId });
    expect(t.record(ref).recentDeliveries).toContain(again.deliveryId);
    expect(t.runner.spawnsOf(target)).toHaveLength(1);

    await t.command(d, ref, "pause");
    await t.command(d, ref, "start");
    expect(t.record(ref).status).toBe("active");
    expect(t.control.get(ref)).toMatchObject({ command: "start", effect: "resumed" });
    expect(t.runner.inputsOf(target)).toHaveLength(1);
    expect(t.runner.inputsOf(target)[0]).toContain("was resumed by alice");
    expect(t.runner.spawnsOf(target)).toHaveLength(1);
  });

  it("does not record resume or a refused start when there is no session to act on (R3.6)", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref } = await t.open("Nothing yet");
    await t.handled(d, await t.only());

    await t.command(d, ref, "resume");
    expect(t.emitted("control.rejected")).toMatchObject([{ command: "resume", reason: "nothing-to-resume" }]);
    expect(t.control.get(ref)).toBeUndefined();

    await t.trackers.local.setState(parseWorkItemRef(ref), "closed", "alice");
    await t.handled(d, await t.only());
    await t.command(d, ref, "start");
    expect(t.emitted("control.rejected").at(-1)).toMatchObject({ command: "start", reason: "item-closed" });
    expect(t.control.get(ref)).toBeUndefined();
    expect(t.runner.spawnRequests).toEqual([]);
  });

  it("resume on an active session is a no-op and leaves the start standing", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref } = await t.started(d);
    const before = t.control.get(ref);
    const resume = await t.command(d, ref, "resume");
    expect(t.commandEvents().at(-1)).toMatchObject({ command: "resume", effect: "noop" });
    expect(t.control.get(ref)).toEqual(before);
    expect(t.record(ref).recentDeliveries).toContain(resume.deliveryId);
  });

  it.each(["pause", "stop"] as const)("records %s with no session, so the item does not start on its next event", async (name) => {
    const t = await setup({ routing: { control: { requireStartCommand: false } } });
    const d = t.dispatcher();
    const { ref } = await t.open("Hold it", []);
    await t.handled(d, await t.only());

    await t.command(d, ref, name);
    expect(t.control.get(ref)).toMatchObject({ command: name, effect: "recorded" });
    expect(t.commandEvents()).toMatchObject([{ command: name, effect: "recorded" }]);

    // Armed afterwards, with the label alone enough to start: the disarming command still holds it.
    await t.trackers.local.addLabels(parseWorkItemRef(ref), [ARM], "alice");
    const labeled = await t.only();
    await t.handled(d, labeled);
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "execution-stopped", delivery_id: labeled.deliveryId });
    expect(t.runner.spawnRequests).toEqual([]);
  });

  it("a close event closes a paused session and clears the item's command, so a reopen waits for a new start (R3.8)", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);
    await t.command(d, ref, "pause");

    await t.trackers.local.setState(parseWorkItemRef(ref), "closed", "bob");
    await t.handled(d, await t.only());
    expect(t.record(ref)).toMatchObject({ status: "closed", closeReason: "item-closed" });
    expect(t.runner.terminated.map((entry) => entry.target)).toEqual([target]);
    expect(t.emitted("control.cleared")).toEqual([{ work_item: ref, command: "pause", cleared_by: "item-closed" }]);
    expect(t.control.get(ref)).toMatchObject({ command: "pause", clearedAt: T0.toISOString(), clearedBy: "item-closed" });

    await t.trackers.local.setState(parseWorkItemRef(ref), "open", "alice");
    const reopened = await t.only();
    await t.handled(d, reopened);
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "awaiting-start", delivery_id: reopened.deliveryId });
    expect(t.runner.spawnsOf(target)).toHaveLength(1);
  });

  it("`sessions close` clears a standing start too; a stopped item's record is not cleared by its own stop", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref } = await t.started(d);
    const closeOptions = { registry: t.registry, runner: t.runner, tmux: t.routing.tmux, events: t.events, now: () => T0, control: t.control };
    await closeSession(closeOptions, ref, "cli");
    expect(t.emitted("control.cleared")).toEqual([{ work_item: ref, command: "start", cleared_by: "cli" }]);

    const next = await t.say(ref, "still there?");
    await t.handled(d, next);
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "awaiting-start", delivery_id: next.deliveryId });
  });
});

describe("comments that are not one command", () => {
  it("drops an ambiguous comment as control.ambiguous: nothing executed, nothing delivered (R1.4)", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);

    const event = await t.say(ref, `${KEYWORD.pause} or maybe ${KEYWORD.stop}?`);
    await t.handled(d, event);
    expect(t.emitted("control.ambiguous")).toEqual([{ work_item: ref, commands: ["stop", "pause"], actor: "alice", delivery_id: event.deliveryId }]);
    expect(t.emitted("routing.dropped").map((fields) => fields.delivery_id)).not.toContain(event.deliveryId);
    expect(t.emitted("dispatch.queued").map((fields) => fields.delivery_id)).not.toContain(event.deliveryId);
    expect(t.runner.inputsOf(target)).toEqual([]);
    expect(t.record(ref).status).toBe("active");
    expect(t.control.get(ref)).toMatchObject({ command: "start" });
  });

  it("stops on a damaged control record: dispatch.failed, asks for a retry, nothing spawned", async () => {
    const t = await setup({ routing: { control: { requireStartCommand: false } } });
    const d = t.dispatcher();
    const { ref, target } = await t.open("Damaged");
    const file = t.control.pathFor(ref);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, "{ not json");

    const opened = await t.only();
    expect(await d.handle(opened)).toEqual({ settled: false });
    expect(t.emitted("dispatch.failed")).toMatchObject([{ work_item: ref, delivery_id: opened.deliveryId, action: "route", will_retry: true }]);
    expect(String(t.emitted("dispatch.failed")[0]?.error)).toContain("is damaged");
    expect(t.runner.spawnsOf(target)).toEqual([]);
    expect(t.registry.get(ref)).toBeUndefined();

    // The CLI refuses too, naming the file.
    await expect(t.cli(d, ref, "start")).rejects.toThrow(/control record .* is damaged/);
    expect(t.runner.spawnRequests).toEqual([]);
  });
});

describe("control() from the CLI (R4.1, R4.5, R4.7)", () => {
  it("start spawns here with the daemon's own boot prompt, workspace settings and announcement", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.open("From the shell");
    await t.feed();

    const outcome = await t.cli(d, ref, "start");
    expect(outcome).toEqual({ applied: true, effect: "started", session: { tmuxTarget: target, status: "active" } });
    const record = t.record(ref);
    expect(record.recentDeliveries).toHaveLength(1);
    expect(record.recentDeliveries[0]).toMatch(/^cli-start-[0-9a-f-]{36}$/);
    const prompt = t.runner.spawnsOf(target)[0]?.argv[1] ?? "";
    expect(prompt).toContain(`to work on ${ref}: From the shell`);
    expect(prompt).toContain("started from the CLI by operator");
    expect(prompt).toContain("source: cli");
    expect(t.emitted("session.announced")).toHaveLength(1);
    expect(t.control.get(ref)).toMatchObject({
      command: "start",
      source: "cli",
      actor: "operator",
      effect: "started",
      note: "the-loop sessions start",
      deliveryId: record.recentDeliveries[0],
    });
    expect(t.commandEvents()).toEqual([
      { work_item: ref, command: "start", command_source: "cli", actor: "operator", effect: "started", delivery_id: record.recentDeliveries[0] },
    ]);
  });

  it("pause, resume and stop do what their keywords do, and report the session", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.open("From the shell");
    await t.feed();
    await t.cli(d, ref, "start");

    expect(await t.cli(d, ref, "pause")).toEqual({ applied: true, effect: "paused", session: { tmuxTarget: target, status: "paused" } });
    expect(await t.cli(d, ref, "pause")).toEqual({ applied: true, effect: "noop", session: { tmuxTarget: target, status: "paused" } });
    expect(await t.cli(d, ref, "resume")).toEqual({ applied: true, effect: "resumed", session: { tmuxTarget: target, status: "active" } });
    expect(t.runner.inputsOf(target)).toEqual([expect.stringContaining("was resumed by operator (cli)")]);
    expect(t.emitted("session.resumed")).toMatchObject([{ command_source: "cli", actor: "operator", notified: true }]);
    expect(await t.cli(d, ref, "stop")).toEqual({ applied: true, effect: "stopped", session: { tmuxTarget: target, status: "closed" } });
    expect(t.record(ref)).toMatchObject({ status: "closed", closeReason: "stopped" });
    expect(t.control.get(ref)).toMatchObject({ command: "stop", source: "cli", effect: "stopped" });
    expect(t.commandEvents().map((fields) => [fields.command, fields.command_source, fields.effect])).toEqual([
      ["start", "cli", "started"],
      ["pause", "cli", "paused"],
      ["pause", "cli", "noop"],
      ["resume", "cli", "resumed"],
      ["stop", "cli", "stopped"],
    ]);
    expect(await t.cli(d, ref, "stop")).toEqual({ applied: true, effect: "recorded", session: { tmuxTarget: target, status: "closed" } });
  });

  it("refuses with a message that says why and how to fix it", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref } = await t.open("Unarmed", []);
    await t.feed();

    expect(await t.cli(d, ref, "start")).toEqual({
      applied: false,
      reason: "not-armed",
      message: `${ref} is not armed: add the label "${ARM}" first (routing.autoExecuteLabel), or set routing.spawnOnUnmatched: always`,
    });
    expect(await t.cli(d, ref, "resume")).toMatchObject({ applied: false, reason: "nothing-to-resume" });
    expect(t.emitted("control.rejected")).toMatchObject([
      { command: "start", command_source: "cli", actor: "operator", reason: "not-armed" },
      { command: "resume", command_source: "cli", reason: "nothing-to-resume" },
    ]);
    expect(t.control.get(ref)).toBeUndefined();

    const never = await setup({ routing: { spawnOnUnmatched: "never" } });
    const other = await never.open("Never");
    expect(await never.cli(never.dispatcher(), other.ref, "start")).toMatchObject({
      applied: false,
      reason: "not-armed",
      message: expect.stringContaining("routing.spawnOnUnmatched is never"),
    });
  });

  it("reports a start whose spawn failed as start-pending, with the error", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.open("Flaky");
    t.runner.failSpawn(target, new Error("no tmux server"));
    const outcome = await t.cli(d, ref, "start");
    expect(outcome).toEqual({
      applied: true,
      effect: "start-pending",
      problem: "no tmux server",
      session: { tmuxTarget: target, status: "closed" },
    });
    expect(t.control.get(ref)).toMatchObject({ command: "start", source: "cli", effect: "start-pending" });
  });

  it("waits for the item's queued events and is waited for by drain()", async () => {
    const t = await setup({ routing: { control: { requireStartCommand: false } } });
    const d = t.dispatcher();
    const { ref, target } = await t.open("Busy");
    const gate = t.runner.holdSpawn(target);
    const spawning = tracked(d.handle(await t.only()));
    await gate.entered;

    const pausing = tracked(t.cli(d, ref, "pause"));
    // A pause of an item nobody holds, given after it, is carried out to its end meanwhile.
    const idle = await t.open("Idle");
    expect(await t.cli(d, idle.ref, "pause")).toMatchObject({ applied: true });
    expect(pausing.done()).toBe(false);
    expect(t.commandEvents().filter((fields) => fields.work_item === ref)).toEqual([]);
    const drained = tracked(d.drain());
    gate.release();
    expect(await spawning.promise).toEqual({ settled: true });
    expect(await pausing.promise).toMatchObject({ applied: true, effect: "paused" });
    expect(await drained.promise).toBe(2);
    expect(t.record(ref).status).toBe("paused");
  });
});

describe("commands from two processes", () => {
  it("a CLI start and a comment start racing in two dispatchers claim exactly one session", async () => {
    const t = await setup();
    const daemon = t.dispatcher();
    // Another process on the same state root: its own registry and control store objects.
    const cliProcess = t.dispatcher({
      registry: new SessionRegistry({ dir: t.paths.registryDir }),
      control: new ControlStore({ dir: t.paths.controlDir }),
    });
    const items = [await t.open("One"), await t.open("Two"), await t.open("Three")];
    for (const event of await t.feed()) await t.handled(daemon, event);
    for (const item of items) await t.trackers.local.addComment(parseWorkItemRef(item.ref), KEYWORD.start, "alice");
    const starts = await t.feed();

    const results = await Promise.all(items.flatMap((item, index) => [t.cli(cliProcess, item.ref, "start"), daemon.handle(starts[index] as InboundEvent)]));
    expect(results.filter((result) => "settled" in result)).toEqual(items.map(() => ({ settled: true })));

    for (const item of items) {
      expect(t.runner.spawnsOf(item.target)).toHaveLength(1);
      expect(t.record(item.ref).status).toBe("active");
      const effects = t
        .commandEvents()
        .filter((fields) => fields.work_item === item.ref)
        .map((fields) => fields.effect);
      expect(effects.sort()).toEqual(["noop", "started"]);
    }
  });

  it("a pause from another process while an event waits to be pasted drops the event as session-paused (R3.2)", async () => {
    // A just-started harness gets a startup grace before its first input: the event waits in it.
    const t = await setup({ tmux: { startupGraceSeconds: 1 } });
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);
    await t.feed();
    const cliProcess = t.dispatcher({
      registry: new SessionRegistry({ dir: t.paths.registryDir }),
      control: new ControlStore({ dir: t.paths.controlDir }),
    });

    const later = await t.say(ref, "one more thing");
    // The grace runs on the fake clock: the pause comes while the delivery waits in it, however
    // long the pause takes to apply.
    vi.useFakeTimers();
    try {
      const delivering = d.handle(later);
      await waitFor("the delivery's turn to begin", () => routed(t.events, later));
      await waitFor("the delivery to wait out the startup grace", () => vi.getTimerCount() > 0);
      expect(await t.cli(cliProcess, ref, "pause")).toMatchObject({ applied: true, effect: "paused" });
      await vi.advanceTimersByTimeAsync(1_000);
      expect(await delivering).toEqual({ settled: true });
    } finally {
      vi.useRealTimers();
    }

    expect(t.runner.inputsOf(target)).toEqual([]);
    expect(t.emitted("dispatch.dropped").at(-1)).toEqual({ work_item: ref, delivery_id: later.deliveryId, reason: "session-paused" });
    expect(t.emitted("dispatch.succeeded")).toEqual([]);
  });

  it("a stop from another process between the spawn decision and the claim holds the spawn", async () => {
    const t = await setup({ routing: { control: { requireStartCommand: false } } });
    const d = t.dispatcher();
    const { ref, target } = await t.open("Racing a stop");
    const opened = await t.only();

    // The other process holds the item's control lock and writes a stop once the daemon has decided.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const other = new ControlStore({ dir: t.paths.controlDir });
    const stopping = other.transaction(ref, async (tx) => {
      locked();
      await released;
      await tx.write({
        version: 1,
        ref,
        command: "stop",
        source: "cli",
        actor: "operator",
        requestedAt: T0.toISOString(),
        effect: "recorded",
        deliveryId: "cli-stop-1",
      });
    });
    await isLocked;
    const handling = d.handle(opened);
    await waitFor("the spawn's turn to begin", () => t.emitted("routing.routed").some((fields) => fields.decision === "spawn"));
    release();
    await stopping;

    expect(await handling).toEqual({ settled: true });
    expect(t.emitted("dispatch.dropped")).toEqual([{ work_item: ref, delivery_id: opened.deliveryId, reason: "execution-stopped" }]);
    expect(t.runner.spawnsOf(target)).toEqual([]);
    expect(t.registry.get(ref)).toBeUndefined();
  });
});

describe("reconfigure()", () => {
  it("swaps the routing settings, the policy and the templates for the next event", async () => {
    const t = await setup({ routing: { control: { requireStartCommand: false } } });
    const d = t.dispatcher();
    const first = await t.open("Label is enough");
    await t.handled(d, await t.only());
    expect(t.runner.stateOf(first.target)).toBe("live");
    await t.feed();

    const routing = { ...t.routing, control: { ...t.routing.control, requireStartCommand: true } };
    d.reconfigure({ routing, policy: policyOf(routing), templates: { ...BUILTIN_TEMPLATES, boot: "BOOT {{work_item}}" } });

    const second = await t.open("Now it needs a start");
    await t.handled(d, await t.only());
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "awaiting-start", work_item: second.ref });
    await t.command(d, second.ref, "start");
    expect(t.runner.spawnsOf(second.target)[0]?.argv[1]).toBe(`BOOT ${second.ref}`);
  });
});

describe("reactions on control comments (GitHub)", () => {
  const onIssue = (body: string, commentId: string): InboundEvent => ({ ...ghEvent({ on: ISSUE, commentId }), body });

  it("reacts completed to an applied command and failed to a refused or ambiguous one", async () => {
    const g = await githubSetup({ control: { requireStartCommand: true } });
    const d = g.dispatcher();
    expect(await d.handle(onIssue(KEYWORD.resume, "c-resume"))).toEqual({ settled: true });
    expect(await d.handle(onIssue(KEYWORD.pause, "c-pause"))).toEqual({ settled: true });
    expect(await d.handle(onIssue(`${KEYWORD.pause} ${KEYWORD.start}`, "c-both"))).toEqual({ settled: true });
    // A start lifts the pause: the item is armed and has no session, so it spawns.
    expect(await d.handle(onIssue(KEYWORD.start, "c-start"))).toEqual({ settled: true });
    await d.drain();

    expect(g.github.reactions.map((reaction) => [reaction.target.commentId, reaction.content])).toEqual([
      ["c-resume", "confused"],
      ["c-pause", "hooray"],
      ["c-both", "confused"],
      ["c-start", "eyes"],
      ["c-start", "hooray"],
    ]);
    expect(g.runner.stateOf(ghTarget(ISSUE))).toBe("live");
    expect(g.runner.delivered).toEqual([]);
  });
});

/**
 * The durable steps of a command (registry and control-record writes), counted so a test can end
 * the process right before the n-th one: `left` steps may still happen, then every step throws, as
 * if the process had been killed with SIGKILL there (nothing after it reaches the disk). `failOnce`
 * makes one named step fail once, as a lock timeout would, and the process carries on.
 */
class Steps {
  left = Number.POSITIVE_INFINITY;
  failOnce: string | undefined;
  readonly taken: string[] = [];
  take(step: string): void {
    if (this.failOnce === step) {
      this.failOnce = undefined;
      throw new Error(`${step} timed out`);
    }
    if (this.left <= 0) throw new Error(`killed before ${step}`);
    this.left -= 1;
    this.taken.push(step);
  }
}

class StepRegistry extends SessionRegistry {
  constructor(
    dir: string,
    private readonly steps: Steps,
  ) {
    super({ dir, lock: { timeoutMs: 5_000 } });
  }
  override async claim(...args: Parameters<SessionRegistry["claim"]>): ReturnType<SessionRegistry["claim"]> {
    this.steps.take("registry.claim");
    return super.claim(...args);
  }
  override async update(...args: Parameters<SessionRegistry["update"]>): ReturnType<SessionRegistry["update"]> {
    this.steps.take("registry.update");
    return super.update(...args);
  }
  override async close(...args: Parameters<SessionRegistry["close"]>): ReturnType<SessionRegistry["close"]> {
    this.steps.take("registry.close");
    return super.close(...args);
  }
  override async setStatus(...args: Parameters<SessionRegistry["setStatus"]>): ReturnType<SessionRegistry["setStatus"]> {
    this.steps.take("registry.setStatus");
    return super.setStatus(...args);
  }
}

class StepControl extends ControlStore {
  constructor(
    dir: string,
    private readonly steps: Steps,
  ) {
    super({ dir, lock: { timeoutMs: 5_000 } });
  }
  override transaction<T>(ref: string, work: (tx: ControlTransaction) => Promise<T>): Promise<T> {
    return super.transaction(ref, (tx) =>
      work({
        read: () => tx.read(),
        write: async (record) => {
          this.steps.take("control.write");
          await tx.write(record);
        },
        remove: async () => {
          this.steps.take("control.remove");
          await tx.remove();
        },
      }),
    );
  }
}

describe("durability: a command killed between its record and its session change", () => {
  async function stepped(overrides: Overrides = {}) {
    const t = await setup(overrides);
    const steps = new Steps();
    const d = t.dispatcher({
      registry: new StepRegistry(t.paths.registryDir, steps),
      control: new StepControl(t.paths.controlDir, steps),
    });
    return { ...t, steps, d };
  }

  it.each([0, 1, 2, 3])("a stop killed after %i durable steps is completed by the restarted daemon: harness ended, nothing respawned", async (survived) => {
    const t = await stepped();
    const { ref, target } = await t.started(t.d);
    await t.feed();
    const stop = await t.say(ref, KEYWORD.stop);
    t.steps.left = survived;
    await t.d.handle(stop);

    // The restarted daemon: pending starts at start-up, then the poller hands out the unsettled stop again.
    const restarted = t.dispatcher();
    await restarted.retryPendingStarts();
    await t.handled(restarted, stop);

    expect(t.runner.spawnsOf(target)).toHaveLength(1);
    expect(t.record(ref)).toMatchObject({ status: "closed", closeReason: "stopped" });
    expect(t.runner.stateOf(target)).not.toBe("live");
    expect(t.control.get(ref)).toMatchObject({ command: "stop", deliveryId: stop.deliveryId });
    expect(t.control.get(ref)?.clearedAt).toBeUndefined();

    // And it stays stopped.
    const next = await t.say(ref, "hello?");
    await t.handled(restarted, next);
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "execution-stopped", delivery_id: next.deliveryId });
    expect(t.runner.spawnsOf(target)).toHaveLength(1);
  });

  it.each([0, 1, 2, 3])("a start on a stopped item killed after %i durable steps is honoured after the restart, once", async (survived) => {
    const t = await stepped();
    const { ref, target } = await t.open("Stopped first");
    await t.handled(t.d, await t.only());
    await t.command(t.d, ref, "stop");
    expect(t.control.get(ref)).toMatchObject({ command: "stop", effect: "recorded" });

    const start = await t.say(ref, KEYWORD.start);
    t.steps.left = survived;
    await t.d.handle(start);

    const restarted = t.dispatcher();
    await restarted.retryPendingStarts();
    await t.handled(restarted, start);

    expect(t.runner.spawnsOf(target)).toHaveLength(1);
    expect(t.runner.stateOf(target)).toBe("live");
    expect(t.record(ref).status).toBe("active");
    expect(t.control.get(ref)).toMatchObject({ command: "start", effect: "started", deliveryId: start.deliveryId });
  });

  it("a start killed before its claim, whose spawn at the restart fails, says start-pending and stands", async () => {
    const t = await stepped();
    const { ref, target } = await t.open("Killed before the claim");
    await t.handled(t.d, await t.only());
    const start = await t.say(ref, KEYWORD.start);
    t.steps.left = 1;
    expect(await t.d.handle(start)).toEqual({ settled: false });
    expect(t.registry.get(ref)).toBeUndefined();

    t.runner.failSpawn(target, new Error("no tmux server"));
    expect(await t.dispatcher().retryPendingStarts()).toBe(0);
    expect(t.control.get(ref)).toMatchObject({ command: "start", effect: "start-pending", deliveryId: start.deliveryId });

    // The item's next event starts it, and the record says so.
    await t.handled(t.dispatcher(), await t.say(ref, "still there?"));
    expect(t.runner.stateOf(target)).toBe("live");
    expect(t.control.get(ref)).toMatchObject({ command: "start", effect: "started" });
  });

  it("the restarted daemon's finishing of an interrupted stop is in the event log as that stop, with its source", async () => {
    const t = await stepped();
    const { ref, target } = await t.started(t.d);
    await t.feed();
    const stop = await t.say(ref, KEYWORD.stop);
    t.steps.left = 1;
    expect(await t.d.handle(stop)).toEqual({ settled: false });
    expect(t.commandEvents().filter((fields) => fields.command === "stop")).toEqual([]);

    await t.dispatcher().retryPendingStarts();
    expect(t.commandEvents().at(-1)).toEqual({
      work_item: ref,
      command: "stop",
      command_source: "comment",
      actor: "alice",
      effect: "stopped",
      delivery_id: stop.deliveryId,
    });
    expect(t.emitted("session.closed")).toMatchObject([{ work_item: ref, reason: "stopped", tmux_target: target }]);
  });

  it("a stop whose harness cannot be ended is reported as applied with the problem, not as a failure a retry would fix", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);
    const terminate = t.runner.terminate.bind(t.runner);
    let fail = true;
    t.runner.terminate = async (...args) => {
      if (fail) {
        fail = false;
        throw new Error("tmux set-option failed: server busy");
      }
      return terminate(...args);
    };

    const stop = await t.say(ref, KEYWORD.stop);
    // The session is closed and the stop recorded: a retry would be dropped as a redelivery.
    expect(await d.handle(stop)).toEqual({ settled: true });
    expect(t.record(ref)).toMatchObject({ status: "closed", closeReason: "stopped" });
    expect(t.control.get(ref)).toMatchObject({ command: "stop", effect: "stopped" });
    expect(t.emitted("dispatch.failed")).toEqual([]);
    expect(t.commandEvents().at(-1)).toMatchObject({ command: "stop", effect: "stopped", delivery_id: stop.deliveryId });
    expect(String(t.commandEvents().at(-1)?.error)).toContain("server busy");
    expect(t.runner.stateOf(target)).toBe("live");

    // From the CLI: applied, with the problem, not an exception saying it could not be carried out.
    const other = await t.started(d, "Second");
    fail = true;
    expect(await t.cli(d, other.ref, "stop")).toMatchObject({ applied: true, effect: "stopped", problem: expect.stringContaining("server busy") });
  });

  it("a stop whose session change fails is not left recorded: the retried comment stops the session", async () => {
    // Label-alone start: the item has no control record to restore, so the stop's must go again.
    const t = await stepped({ routing: { control: { requireStartCommand: false } } });
    const { ref, target } = await t.open("Label alone");
    await t.handled(t.d, await t.only());
    expect(t.runner.stateOf(target)).toBe("live");
    await t.feed();

    const stop = await t.say(ref, KEYWORD.stop);
    t.steps.failOnce = "registry.close";
    expect(await t.d.handle(stop)).toEqual({ settled: false });
    expect(t.record(ref).status).toBe("active");
    expect(t.control.get(ref)).toBeUndefined();
    expect(t.commandEvents()).toEqual([]);

    await t.handled(t.d, stop);
    expect(t.record(ref)).toMatchObject({ status: "closed", closeReason: "stopped" });
    expect(t.runner.stateOf(target)).toBe("dead");
    expect(t.control.get(ref)).toMatchObject({ command: "stop", effect: "stopped", deliveryId: stop.deliveryId });
  });

  it("a start whose claim fails leaves the item's stop standing, and the retried comment starts it", async () => {
    const t = await stepped();
    const { ref, target } = await t.open("Stopped, then started");
    await t.handled(t.d, await t.only());
    const stop = await t.command(t.d, ref, "stop");

    const start = await t.say(ref, KEYWORD.start);
    t.steps.failOnce = "registry.claim";
    expect(await t.d.handle(start)).toEqual({ settled: false });
    expect(t.control.get(ref)).toMatchObject({ command: "stop", deliveryId: stop.deliveryId });
    expect(t.registry.get(ref)).toBeUndefined();

    await t.handled(t.d, start);
    expect(t.runner.stateOf(target)).toBe("live");
    expect(t.control.get(ref)).toMatchObject({ command: "start", effect: "started", deliveryId: start.deliveryId });
  });
});

describe("a close racing a command", () => {
  it("clears only the command that stood when the session closed, not one given while its harness was ending", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);

    // `the-loop sessions close` in another process, slow to end the harness.
    let entered!: () => void;
    const inTerminate = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const terminate = t.runner.terminate.bind(t.runner);
    t.runner.terminate = async (...args) => {
      entered();
      await released;
      return terminate(...args);
    };
    const closeOptions = { registry: t.registry, runner: t.runner, tmux: t.routing.tmux, events: t.events, now: () => T0, control: t.control };
    const closing = closeSession(closeOptions, ref, "cli");
    await inTerminate;

    // The item has no live session any more: the pause is recorded as its state.
    expect(await t.cli(d, ref, "pause")).toMatchObject({ applied: true, effect: "recorded" });
    release();
    await closing;

    expect(t.runner.stateOf(target)).not.toBe("live");
    expect(t.control.get(ref)).toMatchObject({ command: "pause", effect: "recorded", source: "cli" });
    expect(t.control.get(ref)?.clearedAt).toBeUndefined();
    expect(t.emitted("control.cleared")).toEqual([]);

    const next = await t.say(ref, "anyone?");
    await t.handled(d, next);
    expect(t.emitted("routing.dropped").at(-1)).toMatchObject({ reason: "execution-stopped", delivery_id: next.deliveryId });
  });
});

describe("a close with a damaged control record", () => {
  it("still closes the session and ends its harness, then names the file", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target } = await t.started(d);
    await writeFile(t.control.pathFor(ref), "{ not json");

    const closeOptions = { registry: t.registry, runner: t.runner, tmux: t.routing.tmux, events: t.events, now: () => T0, control: t.control };
    await expect(closeSession(closeOptions, ref, "cli")).rejects.toThrow(/control record .* is damaged/);
    expect(t.record(ref)).toMatchObject({ status: "closed", closeReason: "cli" });
    expect(t.runner.stateOf(target)).not.toBe("live");
    expect(t.emitted("session.closed")).toMatchObject([{ work_item: ref, reason: "cli" }]);
  });
});

describe("reconfigure() during a command", () => {
  it("a start records the harness it starts, even when the default harness changes while it waits for the lock", async () => {
    const t = await setup({
      routing: {
        harnesses: { fake: { command: ["fake", "{prompt}"] }, other: { command: ["other", "{prompt}"] } },
        control: { requireStartCommand: true },
      },
    });
    const control = new WatchedControlStore({ dir: t.paths.controlDir });
    const d = t.dispatcher({ control });
    const { ref, target } = await t.open("Reloaded mid-start");
    await t.feed();

    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = new ControlStore({ dir: t.paths.controlDir }).transaction(ref, async () => {
      locked();
      await released;
    });
    await isLocked;
    const starting = t.cli(d, ref, "start");
    await waitFor("the start to wait for the item's control lock", () => control.transactions.includes(ref));
    const routing = { ...t.routing, defaultHarness: "other" };
    d.reconfigure({ routing, policy: policyOf(routing), templates: BUILTIN_TEMPLATES });
    release();
    await holding;

    expect(await starting).toMatchObject({ applied: true, effect: "started" });
    const program = t.runner.spawnsOf(target)[0]?.argv[0];
    expect(t.record(ref).harness).toBe(program);
  });
});

describe("the resume note", () => {
  it("sends the agent back to the pull requests linked to the session too: their events were dropped as well", async () => {
    const g = await githubSetup();
    const d = g.dispatcher();
    expect(await d.handle(ghEvent({ on: PR, linked: [[ISSUE, "closing-reference"]] }))).toEqual({ settled: true });
    expect(g.record(ISSUE).pullRequests?.map((link) => link.ref)).toEqual([PR.ref]);

    const onIssue = (body: string, commentId: string): InboundEvent => ({ ...ghEvent({ on: ISSUE, commentId }), body });
    expect(await d.handle(onIssue(KEYWORD.pause, "c-pause"))).toEqual({ settled: true });
    expect(await d.handle({ ...ghEvent({ on: PR, linked: [[ISSUE, "closing-reference"]], commentId: "c-review" }) })).toEqual({
      settled: true,
    });
    expect(g.emitted("dispatch.dropped").at(-1)).toMatchObject({ work_item: ISSUE.ref, reason: "session-paused" });
    expect(await d.handle(onIssue(KEYWORD.resume, "c-resume"))).toEqual({ settled: true });

    const note = g.runner.inputsOf(ghTarget(ISSUE)).at(-1) ?? "";
    expect(note).toContain(`re-read the work item's thread at ${ISSUE.url}`);
    expect(note).toContain(PR.ref);
    expect(note).toContain(PR.url);
  });
});

/** A control store that notes each item a transaction is asked for on, before it waits for the item's lock. */
class WatchedControlStore extends ControlStore {
  readonly transactions: string[] = [];

  override transaction<T>(ref: string, work: (tx: ControlTransaction) => Promise<T>): Promise<T> {
    this.transactions.push(ref);
    return super.transaction(ref, work);
  }
}
