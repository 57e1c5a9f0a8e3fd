import { afterEach, describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

describe("a local change reaches the running daemon at once (real daemon, tmux, the fake harness)", () => {
  it("spawns on an item armed by `item new` long before the next poll, and the CLI says what happens next", async () => {
    // The next poll after the baseline is 30 s away: a spawn within the 10 s bound was woken by the change.
    project = await testProject({ polling: { intervalSeconds: 30 } });
    const p = project;
    const before = await p.cli(["item", "new", "Before the daemon", "--as", "alice"]);
    expect(before.code, before.stderr).toBe(0);
    expect(before.stderr).toContain("no daemon is running: nothing happens until `the-loop start`");

    const started = await p.cli(["start"]);
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");

    const created = await p.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toBe("created local:demo#2: Add a health check\n");
    expect(created.stderr).toContain("the daemon picks this up now; follow it with `the-loop sessions list` or `the-loop why local:demo#2`");
    const spawned = await p.waitForEvent("the spawn, well before the next poll", (r) => r.event === "session.spawned", 10_000);
    expect(spawned.work_item).toBe("local:demo#2");

    const commented = await p.cli(["item", "comment", "#2", "Use port 8080, please.", "--as", "alice"]);
    expect(commented.code, commented.stderr).toBe(0);
    await p.waitForEvent("the delivery, well before the next poll", (r) => r.event === "dispatch.succeeded", 10_000);
    // JSON output stays machine-readable: no note with it.
    const json = await p.cli(["item", "comment", "#2", "and one more", "--as", "alice", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stderr).toBe("");
  });

  it("spawns on a start comment long before the next poll, as the README's quick start does", async () => {
    project = await testProject({ polling: { intervalSeconds: 30 }, routing: { control: { requireStartCommand: true } } });
    const p = project;
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"])).code).toBe(0);
    const started = await p.cli(["item", "comment", "#1", "the-loop:start-execution", "--as", "alice"]);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stderr).toContain("the daemon picks this up now");
    const spawned = await p.waitForEvent("the spawn, well before the next poll", (r) => r.event === "session.spawned", 10_000);
    expect(spawned.work_item).toBe("local:demo#1");
  });
});
