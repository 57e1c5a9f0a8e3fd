import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

const run = promisify(execFile);

let projects: TestProject[] = [];
let sharedSocket: string | undefined;

afterEach(async () => {
  for (const project of projects) await project.cleanup();
  projects = [];
  if (sharedSocket !== undefined) {
    await run("tmux", ["-L", sharedSocket, "kill-server"]).catch(() => undefined);
    await rm(join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid?.() ?? 0}`, sharedSocket), { force: true });
    sharedSocket = undefined;
  }
});

interface SessionsJson {
  sessions: { workItem: { ref: string }; status: string; tmuxTarget: string }[];
}

describe("two projects on one tmux server (real daemons, real tmux)", () => {
  it("give the same work item of each its own session and its own harness", async () => {
    // One private server stands in for the default one both projects would use, so no person's sessions are touched.
    sharedSocket = `loop-test-shared-${process.pid}-${randomBytes(4).toString("hex")}`;
    const tmux = { tmux: { socketName: sharedSocket } };
    const [first, second] = [await testProject({ routing: tmux }), await testProject({ routing: tmux })];
    projects = [first, second];

    for (const project of projects) {
      const started = await project.cli(["start"]);
      expect(started.code, started.stderr + started.stdout).toBe(0);
      await project.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    }
    // local:demo#1 in both, at the same time.
    for (const [project, title] of [
      [first, "First project's task"],
      [second, "Second project's task"],
    ] as const) {
      expect((await project.cli(["item", "new", title, "--label", ARM, "--as", "alice"])).code).toBe(0);
    }
    for (const project of projects) await project.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === "local:demo#1");

    const targets = await Promise.all(
      projects.map(async (project) => {
        const listed = jsonOf<SessionsJson>(await project.cli(["sessions", "list", "--json"]));
        expect(listed.sessions.map((s) => [s.workItem.ref, s.status])).toEqual([["local:demo#1", "active"]]);
        return listed.sessions[0]?.tmuxTarget ?? "";
      }),
    );
    expect(targets[0]).not.toBe(targets[1]);
    const onServer = (await run("tmux", ["-L", sharedSocket, "list-sessions", "-F", "#{session_name}"])).stdout.split("\n").filter(Boolean);
    expect(onServer.sort()).toEqual([...targets].sort());

    // Each harness was started for its own project's item, and hears only its own project's comments.
    for (const [project, title] of [
      [first, "First project's task"],
      [second, "Second project's task"],
    ] as const) {
      const boot = await waitFor("the boot line", async () => (await project.transcript()).find((e) => e.type === "boot"));
      expect(boot.argv?.at(-1)).toContain(title);
    }
    expect((await second.cli(["item", "comment", "#1", "For the second project only.", "--as", "alice"])).code).toBe(0);
    await second.waitForEvent("the delivery", (r) => r.event === "dispatch.succeeded");
    const input = await waitFor("the delivered input", async () => (await second.transcript()).find((e) => e.type === "input"));
    expect(input.text).toContain("For the second project only.");
    expect((await first.transcript()).filter((e) => e.type === "input")).toEqual([]);
    for (const project of projects) expect((await project.events()).filter((r) => r.event === "session.spawn_failed")).toEqual([]);
  });
});
