import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { isProcessAlive } from "../../src/state/process.js";
import { BIN, cliEnv, jsonOf, runCli } from "../support/cli.js";
import { waitFor } from "../support/wait.js";
import { tempDir } from "../support/temp.js";

async function projectWith(config: string): Promise<string> {
  const cwd = await tempDir();
  await mkdir(join(cwd, ".the-loop"));
  await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), config);
  return cwd;
}

const POLLING = "polling:\n  enabled: true\n  intervalSeconds: 0.2\n  sources: [{provider: local}]\n";

describe("daemon lifecycle failures", () => {
  it("refuses to start with no service enabled, saying what to enable", async () => {
    const cwd = await projectWith("routing:\n  authorizedUsers: [alice]\n");
    const start = await runCli(["start"], { cwd });
    expect(start.code).toBe(2);
    expect(start.stderr).toContain("no service is enabled");
    expect(start.stderr).toContain("polling: {enabled: true, sources: [{provider: local}]}");
  });

  it("reports a daemon that dies before it starts, with its own words", async () => {
    const cwd = await projectWith(`${POLLING}routing:\n  authorizedUsers: [alice]\n  spawnPromptTemplate: prompts/missing.md\n`);
    const start = await runCli(["start"], { cwd });
    expect(start.code).toBe(1);
    expect(start.stderr).toContain("the daemon exited");
    expect(start.stderr).toContain("missing.md");
    expect(start.stderr).toContain("routing.spawnPromptTemplate");
    // A daemon that could not run never held its lock.
    const status = await runCli(["status", "--json"], { cwd });
    expect(status.code).toBe(1);
    expect(jsonOf<{ healthy: boolean }>(status).healthy).toBe(false);
  });

  it("warns at every start when nobody is authorized or a template names an unknown placeholder, and still runs", async () => {
    const cwd = await projectWith(`${POLLING}routing:\n  spawnPromptTemplate: boot.md\n`);
    await writeFile(join(cwd, "boot.md"), "Work on {{work_item}}; see {{wrok_item}}.\n");
    const serve = spawn(process.execPath, [BIN, "serve"], { cwd, env: cliEnv({ cwd }) });
    let errors = "";
    serve.stderr.setEncoding("utf8").on("data", (chunk: string) => (errors += chunk));
    const exited = new Promise<number | null>((resolve) => serve.on("close", resolve));
    await waitFor("the daemon to serve", () => (errors.includes("serving") ? true : undefined));
    expect(errors).toContain("routing.authorizedUsers");
    expect(errors).toContain("routing.spawnPromptTemplate (boot.md): unknown placeholder {{wrok_item}}");
    expect((await runCli(["status"], { cwd })).code).toBe(0);
    expect((await runCli(["stop"], { cwd })).code).toBe(0);
    expect(await exited).toBe(0);
  });

  it("says so when stopping a daemon that is not running, and status exits 0 when nothing is enabled", async () => {
    const cwd = await projectWith("routing:\n  authorizedUsers: [alice]\n");
    const stop = await runCli(["stop"], { cwd });
    expect(stop.code).toBe(0);
    expect(stop.stdout).toContain("the-loop is not running");
    const status = await runCli(["status", "--json"], { cwd });
    expect(status.code).toBe(0);
    expect(jsonOf<{ services: { name: string; enabled: boolean; running: boolean }[] }>(status).services).toEqual([
      expect.objectContaining({ name: "poller", enabled: false, running: false }),
    ]);
  });

  it("keeps the lock of a running daemon whose pidfile is damaged: status names it, start refuses, stop stops it", async () => {
    const cwd = await projectWith(`${POLLING}routing:\n  authorizedUsers: [alice]\n`);
    const pidfile = join(cwd, ".the-loop", "poll.pid");
    const start = await runCli(["start", "--json"], { cwd });
    expect(start.code).toBe(0);
    const { pid } = jsonOf<{ pid: number }>(start);
    // Damaged again before each command: the daemon puts its pidfile right whenever it is asked.
    const damage = async (): Promise<void> => {
      await waitFor("the daemon to put its pidfile right", async () => {
        try {
          return (JSON.parse(await readFile(pidfile, "utf8")) as { pid?: number }).pid === pid ? true : undefined;
        } catch {
          return undefined;
        }
      });
      await writeFile(pidfile, randomBytes(64));
    };
    try {
      await damage();
      const status = await runCli(["status", "--json"], { cwd });
      expect(status.code).toBe(0);
      expect(jsonOf<{ healthy: boolean; services: unknown[] }>(status)).toMatchObject({
        healthy: true,
        services: [expect.objectContaining({ name: "poller", running: true, pid })],
      });

      await damage();
      const again = await runCli(["start"], { cwd });
      expect(again.code).toBe(1);
      expect(again.stderr).toContain(`the-loop is already running on this state root: poller is held by pid ${pid}`);

      await damage();
      const stop = await runCli(["stop"], { cwd });
      expect(stop.code).toBe(0);
      expect(stop.stdout).toContain(`stopped poller (pid ${pid})`);
      await waitFor("the daemon to exit", () => (isProcessAlive(pid) ? undefined : true));
      const after = await runCli(["status", "--json"], { cwd });
      expect(jsonOf<{ services: unknown[] }>(after).services).toEqual([expect.objectContaining({ name: "poller", running: false })]);
    } finally {
      if (isProcessAlive(pid)) process.kill(pid, "SIGKILL");
    }
  });
});

interface StatusJson {
  healthy: boolean;
  problems: { code: string; message: string; fix: string }[];
}

describe("status says what keeps the daemon from its work", () => {
  // No token variable is set (cliEnv starts from a clean environment) and this gh does not exist.
  const GITHUB_POLLING =
    "polling:\n  enabled: true\n  intervalSeconds: 0.2\n  sources: [{provider: github, repos: [octo/repo]}]\n" +
    "integrations:\n  github: {ghBinary: /nonexistent/the-loop-test/gh}\n";

  it("names GH_TOKEN for a GitHub source without a token: 1 while stopped, 3 while running", async () => {
    const cwd = await projectWith(`${GITHUB_POLLING}routing:\n  authorizedUsers: [alice]\n`);
    const stopped = await runCli(["status"], { cwd });
    expect(stopped.code).toBe(1);
    expect(stopped.stdout).toContain("poller is enabled but not running");
    expect(stopped.stdout).toContain("GH_TOKEN");

    const start = await runCli(["start", "--json"], { cwd });
    expect(start.code, start.stderr).toBe(0);
    const { pid } = jsonOf<{ pid: number }>(start);
    try {
      const status = await runCli(["status", "--json"], { cwd });
      expect(status.code).toBe(3);
      const answer = jsonOf<StatusJson>(status);
      expect(answer.healthy).toBe(false);
      expect(answer.problems).toEqual([
        expect.objectContaining({ code: "github-token-missing", message: expect.stringContaining("octo/repo"), fix: expect.stringContaining("GH_TOKEN") }),
      ]);
      const table = await runCli(["status"], { cwd });
      expect(table.code).toBe(3);
      expect(table.stdout).toContain("no GitHub token for the poll source octo/repo");
      expect(table.stdout).toContain("fix: set GH_TOKEN");
    } finally {
      await runCli(["stop"], { cwd });
      if (isProcessAlive(pid)) process.kill(pid, "SIGKILL");
    }
  });

  it("names a session record that no longer parses, and exits non-zero", async () => {
    const cwd = await projectWith("routing:\n  authorizedUsers: [alice]\n");
    const file = join(cwd, ".the-loop", "sessions", `${"ab".repeat(32)}.json`);
    await mkdir(join(cwd, ".the-loop", "sessions"), { recursive: true });
    await writeFile(file, '{"workItem": ');
    const status = await runCli(["status"], { cwd });
    expect(status.code).toBe(3);
    expect(status.stdout).toContain(`session record ${file} is damaged`);
    const json = jsonOf<StatusJson>(await runCli(["status", "--json"], { cwd }));
    expect(json.problems).toEqual([expect.objectContaining({ code: "damaged-file", message: expect.stringContaining(file) })]);
  });

  it("exits 0 with no problems when the running daemon can do its job", async () => {
    const cwd = await projectWith(`${POLLING}routing:\n  authorizedUsers: [alice]\n`);
    const start = await runCli(["start", "--json"], { cwd });
    expect(start.code, start.stderr).toBe(0);
    const { pid } = jsonOf<{ pid: number }>(start);
    try {
      await waitFor("a few poll cycles", async () => {
        const log = await readFile(join(cwd, ".the-loop", "logs", "events.jsonl"), "utf8").catch(() => "");
        return log.split('"poll.cycle"').length > 4 ? true : undefined;
      });
      const status = await runCli(["status", "--json"], { cwd });
      expect(status.code, status.stdout).toBe(0);
      expect(jsonOf<StatusJson>(status)).toMatchObject({ healthy: true, problems: [] });
    } finally {
      await runCli(["stop"], { cwd });
      if (isProcessAlive(pid)) process.kill(pid, "SIGKILL");
    }
  });
});

describe("the state's store", () => {
  it("refuses to serve on state.store: postgres without a database it can open, saying what to set, before it takes any lock", async () => {
    const cwd = await projectWith(`${POLLING}state:\n  store: postgres\n`);
    const missing = await runCli(["serve"], { cwd });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no database URL is given: set $THE_LOOP_STATE_URL (state.urlEnv)");
    const url = "postgresql://loop:hunter2-hunter2@db.invalid/loop";
    const unserved = await runCli(["serve"], { cwd, env: { THE_LOOP_STATE_URL: url } });
    expect(unserved.code).toBe(1);
    expect(unserved.stderr).toContain("cannot open the state database (state.store: postgres, the URL in $THE_LOOP_STATE_URL)");
    expect(unserved.stderr).not.toContain("hunter2");
    // No lock was taken: the poller's pidfile was never written.
    await expect(readFile(join(cwd, ".the-loop", "poll.pid"), "utf8")).rejects.toMatchObject({ code: "ENOENT" });
  });
});
