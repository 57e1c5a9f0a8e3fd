import { afterEach, describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { FAKE_HARNESS, testProject, type TestProject } from "../support/project.js";
import { ARM } from "../support/builders.js";

/**
 * Choosing an agent per work item on one daemon (docs/agents.md): a start with `--agent` runs the
 * harness it names, a mapped label picks another at the same time, and the rest run the default.
 * Only harnesses the config names: `--agent` with another is refused, and a comment's text
 * never picks one.
 */

let project: TestProject | undefined;
afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface SessionsJson {
  sessions: { workItem: { ref: string }; harness: string }[];
}

describe("a harness per work item (real daemon, real tmux)", () => {
  it("runs the --agent a start chose, the harness a label maps to and the default, side by side; refuses an agent the config does not name", async () => {
    project = await testProject({
      routing: (transcript) => ({
        defaultHarness: "fake",
        harnesses: {
          fake: { command: [process.execPath, FAKE_HARNESS, transcript, "{prompt}"] },
          alpha: { command: [process.execPath, FAKE_HARNESS, transcript, "alpha", "{prompt}"] },
          beta: { command: [process.execPath, FAKE_HARNESS, transcript, "beta", "{prompt}"] },
        },
        harnessByLabel: { "agent:alpha": "alpha" },
        control: { requireStartCommand: true },
      }),
    });
    const p = project;
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Chosen by the operator", "--label", ARM, "--as", "alice"])).code).toBe(0);
    expect((await p.cli(["item", "new", "Mapped by its label", "--label", ARM, "--label", "agent:alpha", "--as", "alice"])).code).toBe(0);
    expect((await p.cli(["item", "new", "The default", "--label", ARM, "--as", "alice"])).code).toBe(0);

    const refused = await p.cli(["sessions", "start", "--work-item", "#1", "--agent", "cursor-of-mallory"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--agent "cursor-of-mallory" is not a harness this config allows \(fake, alpha, beta\)/);

    const started = await p.cli(["sessions", "start", "--work-item", "#1", "--agent", "beta", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    // A comment names no harness, whatever it says after the keyword: #2 by its label, #3 the default.
    expect((await p.cli(["item", "comment", "#2", "the-loop:start-execution --agent beta", "--as", "alice"])).code).toBe(0);
    expect((await p.cli(["item", "comment", "#3", "the-loop:start-execution agent=beta", "--as", "alice"])).code).toBe(0);
    for (const ref of ["local:demo#1", "local:demo#2", "local:demo#3"]) {
      await p.waitForEvent(`the spawn of ${ref}`, (r) => r.event === "session.spawned" && r.work_item === ref);
    }

    const { sessions } = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"]));
    const harnessOf = Object.fromEntries(sessions.map((session) => [session.workItem.ref, session.harness]));
    expect(harnessOf).toEqual({ "local:demo#1": "beta", "local:demo#2": "alpha", "local:demo#3": "fake" });
    const boots = (await p.transcript()).filter((entry) => entry.type === "boot");
    expect(boots.map((entry) => entry.argv?.[0]).sort()).toEqual(expect.arrayContaining(["alpha", "beta"]));
  });
});
