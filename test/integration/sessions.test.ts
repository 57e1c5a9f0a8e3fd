import { afterEach, describe, expect, it } from "vitest";
import { SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface SessionsJson {
  sessions: { workItem: { ref: string }; status: string; tmuxTarget: string; recentDeliveries: string[] }[];
}

describe("sessions, end to end through the daemon (real tmux, the fake harness)", () => {
  it("spawns on an armed item, delivers authorized comments, drops the rest, closes with the item", async () => {
    project = await testProject();
    const p = project;
    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    expect(jsonOf<{ services: string[] }>(started).services).toEqual(["poller"]);
    expect((await p.cli(["status"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");

    expect((await p.cli(["item", "new", "Add a health check", "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the unarmed item to be dropped", (r) => r.event === "routing.dropped" && r.reason === "spawn-policy");

    expect((await p.cli(["item", "label", "#1", "--add", ARM, "--as", "alice"])).code).toBe(0);
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    expect(spawned.work_item).toBe("local:demo#1");
    const boot = await waitFor("the boot line", async () => (await p.transcript()).find((e) => e.type === "boot"));
    const bootPrompt = boot.argv?.at(-1) ?? "";
    expect(bootPrompt).toContain("local:demo#1");
    expect(bootPrompt).toContain("Add a health check");
    expect(boot.env?.THE_LOOP_WORK_ITEM).toBe("local:demo#1");
    await p.waitForEvent("the announcement", (r) => r.event === "session.announced");

    expect((await p.cli(["item", "comment", "#1", "Use port 8080, please.", "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the delivery", (r) => r.event === "dispatch.succeeded");
    const input = await waitFor("the delivered input", async () => (await p.transcript()).find((e) => e.type === "input"));
    expect(input.text).toContain("Use port 8080, please.");

    expect((await p.cli(["item", "comment", "#1", "rm -rf everything", "--as", "mallory"])).code).toBe(0);
    await p.waitForEvent("the unauthorized drop", (r) => r.event === "routing.dropped" && r.reason === "unauthorized-actor" && r.actor === "mallory");
    expect((await p.cli(["item", "comment", "#1", `echo\n${SELF_COMMENT_MARKER}`, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the self-echo drop", (r) => r.event === "routing.dropped" && r.reason === "self-echo");

    const live = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"]));
    expect(live.sessions.map((s) => [s.workItem.ref, s.status])).toEqual([["local:demo#1", "active"]]);

    expect((await p.cli(["item", "close", "#1", "--as", "alice"])).code).toBe(0);
    const closed = await p.waitForEvent("the close", (r) => r.event === "session.closed");
    expect(closed.reason).toBe("item-closed");
    const after = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json", "--status", "closed"]));
    expect(after.sessions.map((s) => s.status)).toEqual(["closed"]);
    // Only the one authorized, unmarked comment ever reached the harness.
    expect((await p.transcript()).filter((e) => e.type === "input")).toHaveLength(1);

    const stopped = await p.cli(["stop"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect((await p.cli(["status"])).code).toBe(1);
  });

  it("refuses a second daemon on the same state root and names the holder", async () => {
    project = await testProject();
    const first = jsonOf<{ pid: number }>(await project.cli(["start", "--json"]));
    const second = await project.cli(["start"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`pid ${first.pid}`);
    const serve = await project.cli(["serve"]);
    expect(serve.code).toBe(1);
    expect(serve.stderr).toContain(`pid ${first.pid}`);
  });

  it("closes a session from the CLI and attaches nothing without a terminal", async () => {
    project = await testProject();
    const p = project;
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    await p.cli(["item", "new", "Task", "--label", ARM, "--as", "alice"]);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    const closed = await p.cli(["sessions", "close", "--work-item", "#1", "--json"]);
    expect(closed.code, closed.stderr).toBe(0);
    expect(jsonOf<{ closed: string }>(closed).closed).toBe("local:demo#1");
    const again = await p.cli(["sessions", "close", "--work-item", "#1"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("has no live session");
    const attach = await p.cli(["sessions", "attach", "--work-item", "#1", "--read-only"]);
    expect(attach.code).toBe(2);
    expect(attach.stderr).toContain("needs a terminal");
  });
});
