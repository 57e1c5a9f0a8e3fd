import { afterEach, describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { FAKE_HARNESS, testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

/**
 * A harness whose first run exits right after booting, leaving a dead pane behind. The
 * supervision is off: this is the delivery's own respawn, for an operator who turned it off
 * (test/integration/supervise.test.ts has the supervision's).
 */
function dyingHarness(transcript: string, resume: boolean): Record<string, unknown> {
  return {
    supervision: { enabled: false },
    defaultHarness: "fake",
    harnesses: {
      fake: {
        command: ["env", "FAKE_HARNESS_EXIT_AFTER_BOOT=1", process.execPath, FAKE_HARNESS, transcript, "{prompt}"],
        ...(resume ? { resumeCommand: [process.execPath, FAKE_HARNESS, transcript, "--resume", "{session_id}", "{prompt}"] } : {}),
      },
    },
  };
}

interface SessionsJson {
  sessions: { harnessSessionId: string; status: string }[];
}

describe("a session whose harness died", () => {
  it.each([
    ["resumes the same conversation when the harness can", true],
    ["starts a new conversation when it cannot", false],
  ])("%s, with the new event as its prompt", async (_name, resume) => {
    project = await testProject({ routing: (transcriptFile) => dyingHarness(transcriptFile, resume) });
    const p = project;
    const transcript = () => p.transcript();
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    await p.cli(["item", "new", "Task", "--label", ARM, "--as", "alice"]);
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    await waitFor("the first boot", async () => (await transcript()).find((e) => e.type === "boot"));

    await p.cli(["item", "comment", "#1", "Are you still there?", "--as", "alice"]);
    const respawned = await p.waitForEvent("the respawn", (r) => r.event === "session.respawned");
    expect(respawned.resumed).toBe(resume);
    await p.waitForEvent("the delivery", (r) => r.event === "dispatch.succeeded");
    const boots = await waitFor("the second boot", async () => {
      const found = (await transcript()).filter((e) => e.type === "boot");
      return found.length >= 2 ? found : undefined;
    });
    const second = boots[1]?.argv ?? [];
    expect(second.at(-1)).toContain("Are you still there?");
    const ids = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions.map((s) => s.harnessSessionId);
    if (resume) {
      expect(second).toContain("--resume");
      expect(second).toContain(String(spawned.harness_session_id));
      expect(ids).toEqual([spawned.harness_session_id]);
    } else {
      expect(second).not.toContain("--resume");
      expect(ids).toEqual([respawned.harness_session_id]);
      expect(ids).not.toEqual([spawned.harness_session_id]);
    }
  });
});
