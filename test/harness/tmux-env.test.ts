import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { TmuxRunner } from "../../src/harness/index.js";
import { TMUX_PANE_VARIABLES } from "../../src/harness/pane-env.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

const run = promisify(execFile);
const SECRET = "THE_LOOP_TEST_SECRET_IN_DAEMON_ENV";

let runners: TmuxRunner[] = [];
afterEach(async () => {
  delete process.env[SECRET];
  for (const runner of runners) await runner.killServer();
  runners = [];
});

function runnerOn(socketName: string, environment: Record<string, string>, withheldEnv: string[] = []): TmuxRunner {
  const runner = new TmuxRunner({ socketName, remainOnExit: true, timeoutMs: 5_000, environment, withheldEnv });
  runners.push(runner);
  return runner;
}

function newSocket(): string {
  return `loop-test-env-${process.pid}-${randomBytes(4).toString("hex")}`;
}

/** Starts a harness that writes its whole environment to a file, and returns that environment. */
async function harnessEnvironment(runner: TmuxRunner, target: string, env: Record<string, string>): Promise<Record<string, string>> {
  const dir = await tempDir();
  const out = join(dir, "env.json");
  const script = `require("fs").writeFileSync(${JSON.stringify(out)}, JSON.stringify(process.env)); setInterval(() => {}, 1000);`;
  await runner.spawn({ target, cwd: dir, argv: [process.execPath, "-e", script], env });
  // writeFileSync creates the file before it writes: an empty file is no report yet.
  const text = await waitFor("the harness to report its environment", () =>
    readFile(out, "utf8").then(
      (found) => found || undefined,
      () => undefined,
    ),
  );
  return JSON.parse(text) as Record<string, string>;
}

/** The environment without what tmux sets in every pane. */
function withoutTmuxOwn(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !TMUX_PANE_VARIABLES.has(name) || name === "PATH"));
}

async function globalEnvironment(socketName: string): Promise<string> {
  return (await run("tmux", ["-L", socketName, "show-environment", "-g"])).stdout;
}

const ENVIRONMENT = { HOME: "/home/session-test", LANG: "C.UTF-8", ANTHROPIC_API_KEY: "sk-test", PATH: process.env.PATH ?? "/usr/bin:/bin" };

describe("TmuxRunner environment", () => {
  it("starts its server with its environment alone, and gives a pane exactly that and the request's", async () => {
    // The daemon's own environment holds a secret; the server the runner starts must not.
    process.env[SECRET] = "s3cr3t";
    const socketName = newSocket();
    const runner = runnerOn(socketName, ENVIRONMENT);
    const seen = await harnessEnvironment(runner, "loop-env-own", { THE_LOOP_WORK_ITEM: "local:demo#1", PATH: `/loop/bin:${ENVIRONMENT.PATH}` });

    expect(withoutTmuxOwn(seen)).toEqual({ ...ENVIRONMENT, THE_LOOP_WORK_ITEM: "local:demo#1", PATH: `/loop/bin:${ENVIRONMENT.PATH}` });
    const global = await globalEnvironment(socketName);
    expect(global).toContain("ANTHROPIC_API_KEY=sk-test");
    expect(global).not.toContain(SECRET);
    expect(global).not.toContain("s3cr3t");
  });

  it("on a server someone else started, corrects what differs and withholds what that server holds", async () => {
    const socketName = newSocket();
    // An operator's server: started from a shell with its own variables, a token among them.
    const operatorEnv = {
      HOME: "/home/operator",
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      GH_TOKEN: "ghp_operator",
      EDITOR: "vim",
      ANTHROPIC_API_KEY: "sk-old",
    };
    await run("tmux", ["-L", socketName, "new-session", "-d", "-s", "operator", "--", "tail", "-f", "/dev/null"], { env: operatorEnv });
    const runner = runnerOn(socketName, ENVIRONMENT, ["GH_TOKEN"]);

    const seen = await harnessEnvironment(runner, "loop-env-theirs", { THE_LOOP_WORK_ITEM: "local:demo#2" });

    expect(withoutTmuxOwn(seen)).toEqual({ ...ENVIRONMENT, THE_LOOP_WORK_ITEM: "local:demo#2" });
    // The operator's server is theirs: its global environment is left as it was.
    const global = await globalEnvironment(socketName);
    expect(global).toContain("GH_TOKEN=ghp_operator");
    expect(global).toContain("EDITOR=vim");
  });

  it("withholds a named variable even when it is wanted", async () => {
    const runner = runnerOn(newSocket(), { ...ENVIRONMENT, GH_TOKEN: "ghp" }, ["GH_TOKEN"]);
    const seen = await harnessEnvironment(runner, "loop-env-withheld", {});
    expect(seen).not.toHaveProperty("GH_TOKEN");
    expect(seen.ANTHROPIC_API_KEY).toBe("sk-test");
  });
});
