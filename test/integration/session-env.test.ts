import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { TMUX_PANE_VARIABLES } from "../../src/harness/pane-env.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

const run = promisify(execFile);
const SECRET = "webhook-secret-never-in-a-session";
const TOKEN = "ghp_token_never_in_a_session";

let project: TestProject | undefined;
afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

describe("a session's environment is what the-loop gives it (real daemon, real tmux)", () => {
  it("keeps the daemon's secrets off the tmux server it starts and out of the harness", async () => {
    // FAKE_HARNESS_RECORD_ENV reaches the harness only because passEnv names it.
    project = await testProject({ routing: { tmux: { passEnv: ["FAKE_HARNESS_RECORD_ENV"] } } });
    const p = project;
    const daemonEnv = {
      THE_LOOP_GH_WEBHOOK_SECRET: SECRET,
      GH_TOKEN: TOKEN,
      GITHUB_TOKEN: TOKEN,
      ANTHROPIC_API_KEY: "sk-ant-for-the-harness",
      LC_ALL: "C.UTF-8",
      EDITOR: "vim",
      FAKE_HARNESS_RECORD_ENV: "1",
    };
    const started = await p.cli(["start"], daemonEnv);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Show your environment", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");

    const boot = await waitFor("the boot line", async () => (await p.transcript()).find((e) => e.type === "boot"));
    const seen = boot.environment ?? {};
    const ours = Object.fromEntries(Object.entries(seen).filter(([name]) => name === "PATH" || !TMUX_PANE_VARIABLES.has(name)));
    // cliEnv gives the daemon HOME, USER, LOGNAME, TZ, PATH and NO_COLOR; daemonEnv the rest.
    expect(ours).toEqual({
      HOME: p.home,
      USER: "tester",
      LOGNAME: "tester",
      TZ: "UTC",
      // In its sandbox (docs/security.md): the `the-loop` shim first, no config, the socket where the sandbox binds it.
      PATH: `/run/the-loop/bin:${process.env.PATH ?? ""}`,
      LC_ALL: "C.UTF-8",
      ANTHROPIC_API_KEY: "sk-ant-for-the-harness",
      FAKE_HARNESS_RECORD_ENV: "1",
      THE_LOOP_WORK_ITEM: "local:demo#1",
      // The session's own credential (docs/sessions.md): random, a new one at each start.
      THE_LOOP_SESSION_TOKEN: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      // Where the daemon serves this session (docs/sessions.md, "The session's socket").
      THE_LOOP_SESSION_SOCKET: "/run/the-loop/session/sock",
    });

    // What any session could read of the server: its global environment, and its own session's.
    const [global, sessions] = await Promise.all([
      run("tmux", ["-L", p.socketName, "show-environment", "-g"]),
      run("tmux", ["-L", p.socketName, "list-sessions", "-F", "#{session_name}"]),
    ]);
    const [session] = sessions.stdout.split("\n").filter(Boolean);
    const own = await run("tmux", ["-L", p.socketName, "show-environment", "-t", `=${session ?? ""}`]);
    for (const text of [global.stdout, own.stdout]) {
      for (const leak of [SECRET, TOKEN, "THE_LOOP_GH_WEBHOOK_SECRET", "GH_TOKEN", "GITHUB_TOKEN", "EDITOR", "NO_COLOR"]) {
        expect(text).not.toContain(leak);
      }
    }
    expect(global.stdout).toContain("ANTHROPIC_API_KEY=sk-ant-for-the-harness");
  });
});
