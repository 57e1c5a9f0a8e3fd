import { afterEach, describe, expect, it } from "vitest";
import type { EventRecord } from "../../src/events/index.js";
import { StartQueue, startQueueFile } from "../../src/registry/start-queue.js";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";

/**
 * docs/fleet.md, the caps beyond maxLiveSessions through a real daemon, the local tracker and the
 * fake harness in tmux: routing.limits.perRepository (a local project by its name), the operator's
 * priority label (FIFO within priority, priority first), and a pause that keeps a queued start's
 * place until its resume releases it in turn.
 */

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

const is = (event: string, ref: string) => (record: EventRecord) => record.event === event && record.work_item === ref;

describe("perRepository, the priority label and a paused queued start (real daemon, fake harness)", () => {
  it("queues by the project's cap, puts the priority start first, and keeps a paused start's place until its resume", { timeout: 150_000 }, async () => {
    project = await testProject({ routing: { limits: { perRepository: { demo: 1 }, priorityLabel: "urgent" } } });
    const p = project;
    expect((await p.cli(["start", "--json"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    const queue = new StartQueue({ file: startQueueFile(p.root) });

    expect((await p.cli(["item", "new", "one", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("#1 spawned", is("session.spawned", "local:demo#1"));
    expect((await p.cli(["item", "new", "two", "--label", ARM, "--as", "alice"])).code).toBe(0);
    const second = await p.waitForEvent("#2 queued", is("session.queued", "local:demo#2"));
    expect([second.position, second.cap]).toEqual([1, "routing.limits.perRepository.demo 1"]);
    // The priority label puts #3 ahead of #2, which came first.
    expect((await p.cli(["item", "new", "three", "--label", ARM, "--label", "urgent", "--as", "alice"])).code).toBe(0);
    const third = await p.waitForEvent("#3 queued", is("session.queued", "local:demo#3"));
    expect(third.position).toBe(1);
    expect(queue.read().map((entry) => [entry.ref, entry.priority ?? false])).toEqual([
      ["local:demo#3", true],
      ["local:demo#2", false],
    ]);
    const status = jsonOf<{ limits?: unknown }>(await p.cli(["status", "--json"]));
    expect(status.limits).toMatchObject({ caps: [{ cap: "perRepository.demo", live: 1, limit: 1 }], queued: 2 });

    // A pause keeps #3's place; it is not started while paused, and #2 behind it takes the slot.
    const paused = await p.cli(["sessions", "pause", "--work-item", "#3"]);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toContain("keeps its place in the start queue (position 1)");
    expect(queue.read().map((entry) => entry.ref)).toEqual(["local:demo#3", "local:demo#2"]);
    const why = await p.cli(["why", "#3"]);
    expect(why.stdout).toContain("keeps its place in the start queue (position 1, 0 ahead) and is not started while paused");
    expect((await p.cli(["sessions", "close", "--work-item", "#1"])).code).toBe(0);
    await p.waitForEvent("#2 spawned", is("session.spawned", "local:demo#2"));
    expect(queue.read().map((entry) => entry.ref)).toEqual(["local:demo#3"]);
    expect((await p.events()).some(is("session.dequeued", "local:demo#3"))).toBe(false);

    // Its resume releases it in turn: it waits for the slot, then starts by itself.
    const resumed = await p.cli(["sessions", "resume", "--work-item", "#3", "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(jsonOf<{ effect: string }>(resumed).effect).toBe("start-pending");
    expect((await p.cli(["why", "#3"])).stdout).toContain("waiting for a slot: 0 ahead, cap routing.limits.perRepository.demo 1 reached");
    expect((await p.cli(["sessions", "close", "--work-item", "#2"])).code).toBe(0);
    const left = await p.waitForEvent("#3 dequeued", is("session.dequeued", "local:demo#3"));
    expect(left.reason).toBe("slot-free");
    await p.waitForEvent("#3 spawned", is("session.spawned", "local:demo#3"));
    expect(queue.read()).toEqual([]);
  });
});
