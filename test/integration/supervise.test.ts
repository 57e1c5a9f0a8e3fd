import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { FAKE_HARNESS, testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * docs/fleet.md#supervision through a real daemon, the local tracker and the fake harness in tmux
 * (inside its sandbox where bwrap works): a killed agent is back, resumed, within 10 s and never
 * twice over; a harness that dies every time ends the session failed to start after
 * routing.supervision.maxRestarts, with its reason, a marked comment and a `status` problem; a
 * close or a stop ends the harness for good.
 */

const run = promisify(execFile);

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface SessionsJson {
  readonly sessions: readonly {
    readonly workItem: { readonly ref: string };
    readonly status: string;
    readonly failureReason?: string;
    readonly restarts?: number;
  }[];
}

/** The fake harness, resumable; with `dying`, every run of it exits right after its boot line. */
function harness(transcript: string, dying: boolean): Record<string, unknown> {
  const env = dying ? ["env", "FAKE_HARNESS_EXIT_AFTER_BOOT=1"] : [];
  return {
    defaultHarness: "fake",
    harnesses: {
      fake: {
        command: [...env, process.execPath, FAKE_HARNESS, transcript, "{prompt}"],
        resumeCommand: [...env, process.execPath, FAKE_HARNESS, transcript, "--resume", "{session_id}", "{prompt}"],
      },
    },
  };
}

/** The pids of the fake harness processes writing this project's transcript: the agents themselves, not the sandbox around them. */
async function agentPids(p: TestProject, ref?: string): Promise<number[]> {
  const { stdout } = await run("ps", ["-eo", "pid=,args="]);
  return stdout
    .split("\n")
    .map((line) => line.trim().match(/^(\d+)\s+(.*)$/))
    .filter((match): match is RegExpMatchArray => match !== null)
    .filter(
      ([, , args]) =>
        args !== undefined &&
        args.startsWith(process.execPath) &&
        args.includes(FAKE_HARNESS) &&
        args.includes(p.transcriptFile) &&
        (ref === undefined || args.includes(`${ref}:`) || args.includes(`${ref} `)),
    )
    .map(([, pid]) => Number(pid));
}

async function started(p: TestProject): Promise<void> {
  expect((await p.cli(["start"])).code).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  await p.cli(["item", "new", "Task", "--label", ARM, "--as", "alice"]);
  await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
  await waitFor("the first boot", async () => (await p.transcript()).find((e) => e.type === "boot"));
}

describe("supervision of a session's harness", () => {
  it("brings a killed agent back within 10 s, resuming its conversation, and never runs two", async () => {
    project = await testProject({ routing: (transcript) => harness(transcript, false) });
    const p = project;
    await started(p);
    const [pid] = await waitFor("the agent's process", async () => {
      const pids = await agentPids(p);
      return pids.length === 1 ? pids : undefined;
    });

    // Sampled from the kill until the agent is back and settled: never two agents at once.
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        most = Math.max(most, (await agentPids(p)).length);
      }
    })();
    const killedAt = Date.now();
    process.kill(pid ?? 0, "SIGKILL");
    try {
      const respawned = await p.waitForEvent("the restart", (r) => r.event === "session.respawned", 10_000);
      expect(respawned).toMatchObject({ resumed: true, restart: 1, work_item: "local:demo#1" });
      // bwrap, the pane's process, reports its agent's SIGKILL as status 137; without the sandbox the pane's process is the agent.
      expect(String(respawned.how)).toMatch(/^(exited with status 137|was killed by signal 9)$/);
      await waitFor("the resumed agent", async () => {
        const boots = (await p.transcript()).filter((e) => e.type === "boot");
        return boots.length >= 2 ? boots : undefined;
      });
      expect(Date.now() - killedAt).toBeLessThan(10_000);
      const second = (await p.transcript()).filter((e) => e.type === "boot")[1]?.argv ?? [];
      expect(second).toContain("--resume");
      expect(second.at(-1)).toContain("the-loop started you again on local:demo#1");
      // A comment after the restart reaches the one agent that runs.
      expect((await p.cli(["item", "comment", "#1", "Still with us?", "--as", "alice"])).code).toBe(0);
      await waitFor("the comment delivered", async () => (await p.transcript()).find((e) => e.type === "input" && e.text?.includes("Still with us?")));
    } finally {
      sampling = false;
      await sampler;
    }
    expect(most).toBe(1);
    expect(await agentPids(p)).toHaveLength(1);
    const [session] = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions;
    expect(session).toMatchObject({ status: "active", restarts: 1 });
  });

  it("ends a harness that dies every time failed to start after maxRestarts, with its reason, a marked comment and a status problem; a new start begins again", async () => {
    project = await testProject({
      routing: (transcript) => ({ ...harness(transcript, true), supervision: { maxRestarts: 2, backoffSeconds: 0.2 } }),
    });
    const p = project;
    await started(p);
    const failed = await p.waitForEvent("the failure", (r) => r.event === "session.failed_to_start", 30_000);
    expect(failed).toMatchObject({ work_item: "local:demo#1", harness: "fake", restarts: 2 });
    expect(String(failed.reason)).toContain("exited with status 0");
    expect(String(failed.reason)).toContain("routing.supervision.maxRestarts: 2");
    const events = await p.events();
    expect(events.filter((r) => r.event === "session.respawned").map((r) => r.restart)).toEqual([1, 2]);
    // One boot at the start, and per restart a resume that dies at once, then a fresh start: nothing after the failure.
    expect(events.filter((r) => r.event === "session.resume_failed")).toHaveLength(2);
    expect((await p.transcript()).filter((e) => e.type === "boot")).toHaveLength(5);

    const [session] = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions;
    expect(session?.status).toBe("failed");
    expect(session?.failureReason).toBe(failed.reason);
    const item = jsonOf<{ comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"]));
    const comment = item.comments.find((c) => c.body.includes("failed to start"));
    expect(comment?.body).toContain("<!-- the-loop:");
    expect(comment?.body).toContain(String(failed.reason));
    const status = await p.cli(["status", "--json"]);
    expect(status.code).toBe(3);
    const problems = jsonOf<{ problems: { code: string; fix: string }[] }>(status).problems;
    expect(problems.find((problem) => problem.code === "session-failed-to-start")?.fix).toContain("the-loop sessions start --work-item local:demo#1");

    // Not live: an authorized start begins a new session.
    const again = await p.cli(["sessions", "start", "--work-item", "#1", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    await waitFor("a second spawn", async () => (await p.events()).filter((r) => r.event === "session.spawned").length === 2, { timeoutMs: 20_000 });
  });

  it.each([
    ["a close", "close"],
    ["a stop", "stop"],
  ])("never restarts a harness ended by %s", async (_name, command) => {
    project = await testProject({ routing: (transcript) => harness(transcript, false) });
    const p = project;
    await started(p);
    await p.cli(["item", "new", "Witness", "--label", ARM, "--as", "alice"]);
    await p.waitForEvent("the witness's spawn", (r) => r.event === "session.spawned" && r.work_item === "local:demo#2");
    const [witness] = await waitFor("the witness's agent", async () => {
      const pids = await agentPids(p, "local:demo#2");
      return pids.length === 1 ? pids : undefined;
    });
    const result = await p.cli(["sessions", command, "--work-item", "#1"]);
    expect(result.code, result.stderr).toBe(0);
    await p.waitForEvent("the close", (r) => r.event === "session.closed" && r.work_item === "local:demo#1");
    await waitFor("the harness ended", async () => (await agentPids(p, "local:demo#1")).length === 0);
    // The daemon's look at the panes runs after the close: it brings the witness back, and only it.
    process.kill(witness ?? 0, "SIGKILL");
    await p.waitForEvent("the witness's restart", (r) => r.event === "session.respawned" && r.work_item === "local:demo#2");
    const events = await p.events();
    const aboutFirst = events.filter((r) => r.work_item === "local:demo#1" && r.event === "session.respawned");
    expect(aboutFirst).toEqual([]);
    expect(await agentPids(p, "local:demo#1")).toHaveLength(0);
  });
});
