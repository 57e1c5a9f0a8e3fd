import { describe, expect, it } from "vitest";
import { StartQueue, startQueueFile } from "../../src/registry/start-queue.js";
import { localSetup } from "./fixture.js";

/**
 * docs/fleet.md: a pause keeps a queued start's place, and its choices with it — the harness an
 * operator's start chose is still the one its session runs once the resume released it and a
 * slot freed. The real registry, control store, start queue and local tracker; tmux is the fake runner.
 */
describe("a queued start through a pause and its resume", () => {
  it("keeps its place and the harness its start chose, and starts it when the slot frees", async () => {
    const t = await localSetup({
      routing: {
        control: { requireStartCommand: true },
        limits: { maxLiveSessions: 1 },
        harnesses: { fake: { command: ["fake", "{prompt}"] }, other: { command: ["other", "{prompt}"] } },
      },
    });
    const queue = new StartQueue({ file: startQueueFile(t.paths.root) });
    const d = t.dispatcher({ startQueue: queue });
    const cli = (ref: string, command: "start" | "pause" | "resume" | "stop", harness?: string) =>
      d.control({ ref, command, source: "cli", actor: "operator", ...(harness !== undefined ? { harness } : {}) });
    const one = await t.open("one");
    const two = await t.open("two");
    expect(await cli(one.ref, "start")).toMatchObject({ applied: true, effect: "started" });
    expect(await cli(two.ref, "start", "other")).toMatchObject({ applied: true, effect: "start-pending" });
    expect(queue.read()).toMatchObject([{ ref: two.ref, harness: "other" }]);

    // The pause is recorded with the start's choice, and the start keeps its place.
    expect(await cli(two.ref, "pause")).toMatchObject({ applied: true, effect: "recorded" });
    expect(t.control.get(two.ref)).toMatchObject({ command: "pause", harness: "other" });
    expect(queue.read().map((entry) => entry.ref)).toEqual([two.ref]);
    // Paused: a freed slot does not start it.
    expect(await cli(one.ref, "stop")).toMatchObject({ applied: true, effect: "stopped" });
    expect(await d.startQueued()).toBe(0);
    expect(t.registry.get(two.ref)).toBeUndefined();
    expect(queue.read().map((entry) => entry.ref)).toEqual([two.ref]);

    // The resume releases it in turn, with its choice: it starts on the harness its start chose.
    expect(await cli(two.ref, "resume")).toMatchObject({ applied: true, effect: "start-pending" });
    expect(t.control.get(two.ref)).toMatchObject({ command: "resume", harness: "other" });
    expect(await d.startQueued()).toBe(1);
    await d.drain();
    expect(t.registry.get(two.ref)).toMatchObject({ status: "active", harness: "other" });
    expect(queue.read()).toEqual([]);
    expect(t.emitted("session.dequeued")).toEqual([expect.objectContaining({ work_item: two.ref, reason: "slot-free" })]);
  });

  it("starts a queued adoption with its boot note, which the queue kept", async () => {
    const t = await localSetup({
      routing: { control: { requireStartCommand: true }, limits: { maxLiveSessions: 1 }, harnesses: { fake: { command: ["fake", "{prompt}"] } } },
    });
    const queue = new StartQueue({ file: startQueueFile(t.paths.root) });
    const d = t.dispatcher({ startQueue: queue });
    const one = await t.open("one");
    const two = await t.open("two");
    const note = "This session was adopted from box-a. The last lines of its terminal: ...";
    expect(await d.control({ ref: one.ref, command: "start", source: "cli", actor: "operator" })).toMatchObject({ effect: "started" });
    expect(await d.control({ ref: two.ref, command: "start", source: "cli", actor: "the-loop", bootNote: note })).toMatchObject({
      applied: true,
      effect: "start-pending",
    });
    expect(queue.read()).toMatchObject([{ ref: two.ref, bootNote: note }]);
    expect(await d.control({ ref: one.ref, command: "stop", source: "cli", actor: "operator" })).toMatchObject({ effect: "stopped" });
    expect(await d.startQueued()).toBe(1);
    await d.drain();
    expect(t.registry.get(two.ref)).toMatchObject({ status: "active" });
    const spawned = t.runner.spawnRequests.at(-1);
    expect(spawned?.argv.join(" ")).toContain(note);
  });

  it("refuses a resume with nothing queued and no session, as before", async () => {
    const t = await localSetup({ routing: { limits: { maxLiveSessions: 1 } } });
    const d = t.dispatcher({ startQueue: new StartQueue({ file: startQueueFile(t.paths.root) }) });
    const item = await t.open("lonely");
    expect(await d.control({ ref: item.ref, command: "resume", source: "cli", actor: "operator" })).toMatchObject({
      applied: false,
      reason: "nothing-to-resume",
    });
  });
});
