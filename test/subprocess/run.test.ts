import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  BASE_ENV_NAMES,
  InvalidCommandError,
  RUN_ID_ENV,
  allowListedEnv,
  describeOutcome,
  runBounded,
  type BoundedCommand,
} from "../../src/subprocess/index.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

const PATH = process.env.PATH ?? "/usr/bin:/bin";

async function run(argv: readonly string[], extra: Partial<BoundedCommand> = {}) {
  return runBounded({ argv, cwd: extra.cwd ?? (await tempDir()), timeoutMs: 10_000, env: { PATH }, ...extra });
}

/** Gone, or a zombie nobody has reaped yet (in a container the init may never reap it): either way not running. */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    if (existsSync("/proc/self/stat")) return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function expectStopped(pid: number): Promise<void> {
  await waitFor(`process ${pid} to stop`, () => (isRunning(pid) ? undefined : true), { timeoutMs: 5_000 });
}

function pidIn(text: string): number {
  const pid = Number.parseInt(text.trim().split("\n")[0] ?? "", 10);
  expect(pid).toBeGreaterThan(1);
  return pid;
}

describe("runBounded: how a command ended", () => {
  it.each([
    { argv: ["true"], exitCode: 0, outcome: "exit status 0" },
    { argv: ["false"], exitCode: 1, outcome: "exit status 1" },
    { argv: ["sh", "-c", "exit 7"], exitCode: 7, outcome: "exit status 7" },
  ])("$argv exits $exitCode", async ({ argv, exitCode, outcome }) => {
    const result = await run(argv);
    expect(result).toMatchObject({ exitCode, signal: null, timedOut: false, aborted: false });
    expect(result.error).toBeUndefined();
    expect(describeOutcome(result, 10_000)).toBe(outcome);
  });

  it("reports a signal that ended the command", async () => {
    const result = await run(["sh", "-c", "kill -SEGV $$"]);
    expect(result).toMatchObject({ exitCode: null, signal: "SIGSEGV", timedOut: false });
    expect(describeOutcome(result, 1_000)).toBe("killed by SIGSEGV");
  });

  it("keeps stdout and stderr apart", async () => {
    const result = await run(["sh", "-c", "echo out; echo err >&2"]);
    expect(result).toMatchObject({ stdout: "out\n", stderr: "err\n", stdoutTruncated: false, stderrTruncated: false });
  });

  it("passes arguments as they are, with no shell in between", async () => {
    const cwd = await tempDir();
    const result = await run(["printf", "%s\\n", "$(touch pwned)", "a b;c", "*"], { cwd });
    expect(result.stdout).toBe("$(touch pwned)\na b;c\n*\n");
    expect(existsSync(join(cwd, "pwned"))).toBe(false);
  });

  it("runs in the working directory it is given", async () => {
    const cwd = await tempDir();
    expect((await run(["pwd"], { cwd })).stdout).toBe(`${cwd}\n`);
  });

  it("writes stdin and closes it; without stdin the command reads nothing", async () => {
    expect((await run(["cat"], { stdin: "hello\nthere" })).stdout).toBe("hello\nthere");
    expect(await run(["cat"])).toMatchObject({ exitCode: 0, stdout: "" });
  });

  it("is not disturbed by a command that never reads its stdin", async () => {
    const result = await run(["true"], { stdin: "x".repeat(1024 * 1024) });
    expect(result).toMatchObject({ exitCode: 0 });
  });
});

describe("runBounded: a command that cannot start", () => {
  it("names a program that is not found", async () => {
    const result = await run(["the-loop-no-such-program"]);
    expect(result).toMatchObject({ exitCode: null, signal: null, timedOut: false });
    expect(result.error).toMatch(/^command not found: the-loop-no-such-program/);
    expect(describeOutcome(result, 1_000)).toBe(result.error);
  });

  it("names a working directory that does not exist", async () => {
    const cwd = join(await tempDir(), "gone");
    const result = await run(["true"], { cwd });
    expect(result.error).toBe(`the working directory ${cwd} does not exist`);
  });

  it("names a program that is not executable", async () => {
    const cwd = await tempDir();
    const { writeFile } = await import("node:fs/promises");
    await writeFile(join(cwd, "script"), "#!/bin/sh\n", { mode: 0o644 });
    const result = await run([join(cwd, "script")], { cwd });
    expect(result.error).toMatch(/^permission denied: /);
  });

  it.each([
    { name: "an empty argv", command: { argv: [] }, message: /argv is empty/ },
    { name: "an empty program", command: { argv: [""] }, message: /argv is empty/ },
    { name: "a NUL byte in an argument", command: { argv: ["echo", "a\0b"] }, message: /argument 1 .* NUL/ },
    { name: "a relative working directory", command: { cwd: "relative/dir" }, message: /absolute path, not "relative\/dir"/ },
    { name: "a NUL byte in the environment", command: { env: { A: "x\0y" } }, message: /A must be a string without NUL/ },
    { name: "an invalid variable name", command: { env: { "A=B": "x" } }, message: /not a valid environment variable name/ },
    { name: "a zero timeout", command: { timeoutMs: 0 }, message: /positive number/ },
    { name: "a fractional output cap", command: { outputCapBytes: 1.5 }, message: /whole number of bytes/ },
  ])("refuses $name", async ({ command, message }) => {
    const request = { argv: ["true"], cwd: "/", timeoutMs: 1_000, env: {}, ...command } as BoundedCommand;
    const error = await runBounded(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidCommandError);
    expect((error as Error).message).toMatch(message);
  });
});

describe("runBounded: the deadline and the caller's abort stop the whole process group", () => {
  it("kills the command and what it started in the background at the timeout", async () => {
    const result = await run(["sh", "-c", "sleep 100 & echo $!; sleep 100"], { timeoutMs: 300 });
    expect(result).toMatchObject({ timedOut: true, aborted: false, exitCode: null, signal: "SIGTERM" });
    expect(result.durationMs).toBeGreaterThanOrEqual(290);
    expect(result.durationMs).toBeLessThan(5_000);
    expect(describeOutcome(result, 300)).toBe("timed out after 300 ms and was stopped");
    await expectStopped(pidIn(result.stdout));
  });

  it("follows SIGTERM with SIGKILL when the group ignores it", async () => {
    const result = await run(["sh", "-c", "trap '' TERM; sleep 100 & echo $!; while :; do sleep 1; done"], {
      timeoutMs: 200,
      killGraceMs: 200,
    });
    expect(result).toMatchObject({ timedOut: true, signal: "SIGKILL" });
    expect(result.durationMs).toBeLessThan(5_000);
    await expectStopped(pidIn(result.stdout));
  });

  it("stops what a command left running when it exited, and answers without waiting for it", async () => {
    const result = await run(["sh", "-c", "sleep 100 & echo $!"]);
    expect(result).toMatchObject({ exitCode: 0, timedOut: false });
    expect(result.durationMs).toBeLessThan(5_000);
    await expectStopped(pidIn(result.stdout));
  });

  it("stops the command when the caller aborts", async () => {
    const cwd = await tempDir();
    const controller = new AbortController();
    const running = run(["sh", "-c", "echo $$ > started; sleep 100"], { cwd, signal: controller.signal });
    const pid = await waitFor("the command to start", async () => {
      const text = await readFile(join(cwd, "started"), "utf8").catch(() => "");
      return text.endsWith("\n") ? pidIn(text) : undefined;
    });
    controller.abort();
    const result = await running;
    expect(result).toMatchObject({ aborted: true, timedOut: false, exitCode: null, signal: "SIGTERM" });
    expect(describeOutcome(result, 10_000)).toBe("stopped before it finished");
    await expectStopped(pid);
  });

  it("does not start a command whose signal is already aborted", async () => {
    const cwd = await tempDir();
    const result = await run(["touch", "ran"], { cwd, signal: AbortSignal.abort() });
    expect(result).toMatchObject({ aborted: true, exitCode: null, error: "aborted before it started" });
    expect(existsSync(join(cwd, "ran"))).toBe(false);
  });

  it("leaves no timer, pipe or process handle behind", async () => {
    const watched = new Set(["Timeout", "PipeWrap", "ProcessWrap", "TTYWrap"]);
    const count = () => process.getActiveResourcesInfo().filter((name) => watched.has(name)).length;
    const before = count();
    await run(["sh", "-c", "sleep 100 & echo hi"]);
    await run(["sleep", "100"], { timeoutMs: 100, killGraceMs: 100 });
    await run(["cat"], { stdin: "x" });
    await run(["the-loop-no-such-program"]);
    // Handles closed during settling leave the active list on the next turn of the loop.
    await waitFor("the handles to close", () => (count() <= before ? true : undefined), { timeoutMs: 2_000 });
  });
});

describe("runBounded: output is capped per stream", () => {
  it("keeps the first bytes of 10 MB of output, drops the rest and says so", async () => {
    const result = await run(["sh", "-c", "head -c 10485760 /dev/zero | tr '\\0' a; echo err >&2"], { outputCapBytes: 65_536 });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toHaveLength(65_536);
    expect(result.stdout).toMatch(/^a+$/);
    expect(result.stdoutTruncated).toBe(true);
    expect(result).toMatchObject({ stderr: "err\n", stderrTruncated: false });
  });

  it("keeps the last bytes instead when asked", async () => {
    const result = await run(["seq", "1", "200000"], { outputCapBytes: 100, keep: "tail" });
    expect(result.stdoutTruncated).toBe(true);
    expect(result.stdout.length).toBeLessThanOrEqual(100);
    expect(result.stdout.endsWith("199999\n200000\n")).toBe(true);
  });

  it("never ends the kept output inside a character", async () => {
    const result = await run(["sh", "-c", "printf 'aé%.0s' $(seq 100)"], { outputCapBytes: 5 });
    expect(result.stdout).toBe("aéa");
  });

  it("keeps nothing with a cap of zero", async () => {
    expect(await run(["echo", "x"], { outputCapBytes: 0 })).toMatchObject({ stdout: "", stdoutTruncated: true });
  });
});

describe("the environment", () => {
  // Besides the run's mark (no secret: the-loop finds what the command started by it, tree.ts).
  const unmarked = (stdout: string) => stdout.split("\n").filter((line) => line !== "" && !line.startsWith(`${RUN_ID_ENV}=`));

  it("is exactly what the caller passes", async () => {
    const result = await run(["/usr/bin/env"], { env: { ONLY_THIS: "1", PATH } });
    expect(unmarked(result.stdout).sort()).toEqual(["ONLY_THIS=1", `PATH=${PATH}`]);
  });

  it("holds nothing of this process's when empty", async () => {
    const result = await run(["/usr/bin/env"], { env: {} });
    expect(result).toMatchObject({ exitCode: 0 });
    expect(unmarked(result.stdout)).toEqual([]);
  });

  it.each([
    { names: [], source: { PATH: "/bin", HOME: "/h", GH_TOKEN: "t", EXTRA: "e" }, expected: { PATH: "/bin", HOME: "/h" } },
    { names: ["EXTRA"], source: { PATH: "/bin", GH_TOKEN: "t", EXTRA: "e" }, expected: { PATH: "/bin", EXTRA: "e" } },
    { names: ["UNSET"], source: { LANG: "C.UTF-8" }, expected: { LANG: "C.UTF-8" } },
  ])("allowListedEnv($names) keeps the base and the names, nothing else", ({ names, source, expected }) => {
    expect(allowListedEnv(names, source)).toEqual(expected);
  });

  it("has a base that authenticates no one", () => {
    expect(BASE_ENV_NAMES).toEqual(expect.arrayContaining(["PATH", "HOME", "LANG", "TMPDIR"]));
    expect(BASE_ENV_NAMES.some((name) => /TOKEN|SECRET|KEY|PASS/.test(name))).toBe(false);
  });
});
