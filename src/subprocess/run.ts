import { spawn, type ChildProcess } from "node:child_process";
import { statSync } from "node:fs";
import { isAbsolute } from "node:path";
import { performance } from "node:perf_hooks";
import { wholeUtf8Prefix, wholeUtf8Suffix } from "./text.js";
import { ProcessTree, RUN_ID_ENV, newRunId } from "./tree.js";

/**
 * The one way the-loop runs a command someone configured — a graph's check today; hooks,
 * capability steps, gate queries and task resolvers next. Each run is bounded in every direction
 * a command can overrun:
 *
 * - **argv, never a shell**: no word of it is ever interpreted, whatever it holds.
 * - **time**: at the deadline (or when the caller aborts) the command's whole process group gets
 *   SIGTERM, then SIGKILL after a short grace. The command runs in a group of its own, so what it
 *   started in the background — `sh -c 'sleep 100 & …'` — is stopped with it; and whatever it
 *   left running when it exited is stopped then, so nothing of the run outlives the answer. What
 *   left the group (`setsid`) or lost its parent is followed through `/proc` on Linux and
 *   signalled with the group (tree.ts).
 * - **environment**: exactly the variables the caller passes, nothing inherited, plus the run's
 *   mark `THE_LOOP_RUN_ID` (a random id, no secret: tree.ts); `allowListedEnv` builds one from
 *   names. A daemon's tokens never reach a command that was not given them.
 * - **output**: each stream is kept up to a cap; past it the bytes are read and dropped (so the
 *   command never stalls on a full pipe) and the result says so.
 *
 * The promise always settles — a missing program or folder is an answer (`error`), not a throw —
 * and when it does no timer, listener or pipe of the run is left behind. Only a malformed request
 * (empty argv, a NUL byte, a relative folder) is refused, by rejecting with InvalidCommandError.
 */

export interface BoundedCommand {
  /** The program and its arguments; a bare program name is looked up on the `PATH` of `env` (the system default path without one). */
  readonly argv: readonly string[];
  /** The absolute directory the command runs in. */
  readonly cwd: string;
  /** How long the command may run before its process group is stopped. */
  readonly timeoutMs: number;
  /** Exactly the child's environment: nothing of this process's is added. See `allowListedEnv`. */
  readonly env: Readonly<Record<string, string>>;
  /** Bytes kept of each of stdout and stderr (default 64 KiB); the rest is dropped and flagged. */
  readonly outputCapBytes?: number;
  /**
   * Which end of an over-long stream is kept: `head` (default) the first bytes, `tail` the last —
   * where a failing command usually says why. Either way at most the cap is held.
   */
  readonly keep?: "head" | "tail";
  /** Written to the command's stdin, which is then closed; without it stdin is `/dev/null`. */
  readonly stdin?: string;
  /** Aborting stops the command as a timeout does (`aborted` instead of `timedOut`). */
  readonly signal?: AbortSignal;
  /** Between SIGTERM and SIGKILL when the command is stopped (default 1 s). */
  readonly killGraceMs?: number;
}

export interface BoundedResult {
  /** The exit status; null when the command was killed by a signal or never started. */
  readonly exitCode: number | null;
  /** The signal that ended the command (`SIGTERM`, `SIGKILL`, …), if one did. */
  readonly signal: string | null;
  /** The deadline passed and the command was stopped. */
  readonly timedOut: boolean;
  /** The caller's signal aborted the run (before or after the command started). */
  readonly aborted: boolean;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly durationMs: number;
  /** Why the command could not start (`command not found: npm`); absent when it ran. */
  readonly error?: string;
}

export const DEFAULT_OUTPUT_CAP_BYTES = 64 * 1024;
const DEFAULT_KILL_GRACE_MS = 1_000;
/**
 * How long output may keep arriving after the command has exited, or after SIGKILL: a process
 * that left its group (setsid) can hold the pipes open, and the exit status is the answer.
 */
const EXIT_DRAIN_MS = 500;
/** How often a running command's descendants are looked for: from the first to the last, doubling. */
const TREE_SCAN_FIRST_MS = 20;
const TREE_SCAN_MAX_MS = 500;
/** setTimeout's ceiling (a longer delay fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A request runBounded cannot honour as written: a caller's mistake, never the command's. */
export class InvalidCommandError extends Error {
  override readonly name: string = "InvalidCommandError";
}

/**
 * The variables every command may see: enough to find programs, a home, a language and a
 * temporary folder, nothing that authenticates anyone.
 */
export const BASE_ENV_NAMES: readonly string[] = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"];

/**
 * The environment for a command: the base names and `names`, each taken from `source` when it is
 * set there. Everything else of `source` stays out.
 */
export function allowListedEnv(names: readonly string[], source: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of [...BASE_ENV_NAMES, ...names]) {
    const value = source[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

// Process groups still running, with what they started, stopped when this process exits so no command outlives the-loop.
const running = new Map<number, ProcessTree>();
let exitHookInstalled = false;

function track(pid: number, tree: ProcessTree): void {
  running.set(pid, tree);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const [group, descendants] of running) stopAll(group, descendants, "SIGKILL");
  });
}

/** Signals the command's group and every process found to descend from it, found again first. */
function stopAll(pid: number, tree: ProcessTree, signal: NodeJS.Signals): void {
  tree.scan(true);
  signalGroup(pid, signal);
  tree.signal(signal);
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

/** Runs `argv` bounded in time, environment and output. See the module comment. */
export async function runBounded(command: BoundedCommand): Promise<BoundedResult> {
  const request = validated(command);
  const started = performance.now();
  const stdout = new CappedOutput(request.outputCapBytes, command.keep ?? "head");
  const stderr = new CappedOutput(request.outputCapBytes, command.keep ?? "head");
  if (command.signal?.aborted) return notStarted(stdout, stderr, started, "aborted before it started", true);

  const runId = newRunId();
  let child: ChildProcess;
  try {
    child = spawn(request.program, request.args, {
      cwd: command.cwd,
      env: { ...command.env, [RUN_ID_ENV]: runId },
      shell: false,
      detached: true,
      windowsHide: true,
      stdio: [command.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
  } catch (error) {
    return notStarted(stdout, stderr, started, startFailure(error, request.program, command.cwd), false);
  }

  return new Promise<BoundedResult>((resolve) => {
    const pid = child.pid;
    const tree = pid === undefined ? undefined : new ProcessTree(pid, runId);
    if (pid !== undefined && tree !== undefined) track(pid, tree);
    let settled = false;
    let exitCode: number | null = null;
    let exitSignal: string | null = null;
    let exited = false;
    let timedOut = false;
    let aborted = false;
    let startError: string | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let scanTimer: NodeJS.Timeout | undefined;
    // Who descends from the command is read while it runs: one that leaves its parent is still known.
    const scanLater = (delayMs: number): void => {
      scanTimer = setTimeout(() => {
        tree?.scan(false);
        scanLater(Math.min(delayMs * 2, TREE_SCAN_MAX_MS));
      }, delayMs);
      scanTimer.unref();
    };
    if (tree !== undefined) scanLater(TREE_SCAN_FIRST_MS);

    const settle = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      clearTimeout(graceTimer);
      clearTimeout(drainTimer);
      clearTimeout(scanTimer);
      command.signal?.removeEventListener("abort", onAbort);
      if (pid !== undefined && tree !== undefined) {
        // Whatever the command left behind, in its group or not, goes with it.
        stopAll(pid, tree, "SIGKILL");
        running.delete(pid);
      }
      child.stdin?.destroy();
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve({
        exitCode,
        signal: exitSignal,
        timedOut,
        aborted,
        stdout: stdout.text(),
        stderr: stderr.text(),
        stdoutTruncated: stdout.truncated,
        stderrTruncated: stderr.truncated,
        durationMs: performance.now() - started,
        ...(startError === undefined ? {} : { error: startError }),
      });
    };

    const stop = (): void => {
      if (pid === undefined) {
        settle();
        return;
      }
      if (tree !== undefined) stopAll(pid, tree, "SIGTERM");
      graceTimer = setTimeout(() => {
        if (tree !== undefined) stopAll(pid, tree, "SIGKILL");
        drainTimer = setTimeout(settle, EXIT_DRAIN_MS);
      }, request.killGraceMs);
    };

    const deadline = setTimeout(() => {
      // A command that has exited is not late, even while its output drains.
      if (aborted || exited) return;
      timedOut = true;
      stop();
    }, request.timeoutMs);

    function onAbort(): void {
      if (timedOut || exited || settled) return;
      aborted = true;
      stop();
    }
    command.signal?.addEventListener("abort", onAbort, { once: true });

    child.stdout?.on("data", (chunk: Buffer) => stdout.add(chunk));
    child.stderr?.on("data", (chunk: Buffer) => stderr.add(chunk));
    // A command that exits without reading its input closes the pipe under us (EPIPE): not an error of the run.
    child.stdin?.on("error", () => undefined);
    child.stdout?.on("error", () => undefined);
    child.stderr?.on("error", () => undefined);
    if (child.stdin && command.stdin !== undefined) child.stdin.end(command.stdin);

    child.on("error", (error) => {
      // Emitted when the program could not be started (the only case with no pid).
      if (pid === undefined) {
        startError = startFailure(error, request.program, command.cwd);
        exitCode = null;
        exitSignal = null;
        settle();
      }
    });
    child.on("exit", (code, signal) => {
      exited = true;
      exitCode = code;
      exitSignal = signal;
      clearTimeout(drainTimer);
      drainTimer = setTimeout(settle, EXIT_DRAIN_MS);
    });
    child.on("close", (code, signal) => {
      exitCode ??= code;
      exitSignal ??= signal;
      settle();
    });
  });
}

interface ValidRequest {
  readonly program: string;
  readonly args: string[];
  readonly timeoutMs: number;
  readonly killGraceMs: number;
  readonly outputCapBytes: number;
}

function validated(command: BoundedCommand): ValidRequest {
  const [program, ...args] = command.argv;
  if (program === undefined || program === "") {
    throw new InvalidCommandError("a command needs a program to run: its argv is empty (write it as a list: [program, arg, …])");
  }
  const withNul = command.argv.findIndex((arg) => arg.includes("\0"));
  if (withNul >= 0) throw new InvalidCommandError(`argument ${withNul} of the command holds a NUL byte, which no program can receive`);
  if (!isAbsolute(command.cwd)) {
    throw new InvalidCommandError(`a command's working directory must be an absolute path, not "${command.cwd}"`);
  }
  if (command.cwd.includes("\0")) throw new InvalidCommandError("the command's working directory holds a NUL byte");
  for (const [name, value] of Object.entries(command.env)) {
    if (name === "" || name.includes("=") || name.includes("\0")) {
      throw new InvalidCommandError(`"${name.replace(/\0/g, "\\0")}" is not a valid environment variable name`);
    }
    if (typeof value !== "string" || value.includes("\0")) {
      throw new InvalidCommandError(`the environment variable ${name} must be a string without NUL bytes`);
    }
  }
  if (!Number.isFinite(command.timeoutMs) || command.timeoutMs <= 0) {
    throw new InvalidCommandError(`a command's timeout must be a positive number of milliseconds, not ${command.timeoutMs}`);
  }
  const outputCapBytes = command.outputCapBytes ?? DEFAULT_OUTPUT_CAP_BYTES;
  if (!Number.isInteger(outputCapBytes) || outputCapBytes < 0) {
    throw new InvalidCommandError(`the output cap must be a whole number of bytes, not ${outputCapBytes}`);
  }
  const killGraceMs = command.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  if (!Number.isFinite(killGraceMs) || killGraceMs < 0) {
    throw new InvalidCommandError(`the kill grace must be a non-negative number of milliseconds, not ${killGraceMs}`);
  }
  return {
    program,
    args,
    timeoutMs: Math.min(Math.ceil(command.timeoutMs), MAX_TIMER_MS),
    killGraceMs: Math.min(killGraceMs, MAX_TIMER_MS),
    outputCapBytes,
  };
}

function notStarted(stdout: CappedOutput, stderr: CappedOutput, started: number, error: string, aborted: boolean): BoundedResult {
  return {
    exitCode: null,
    signal: null,
    timedOut: false,
    aborted,
    stdout: stdout.text(),
    stderr: stderr.text(),
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: performance.now() - started,
    error,
  };
}

/**
 * Why spawn failed, in words that say what to fix. ENOENT means either the program or the folder
 * is missing; the folder is looked at (only on this path) to tell which.
 */
function startFailure(error: unknown, program: string, cwd: string): string {
  const code = error instanceof Error && "code" in error ? String(error.code) : undefined;
  if (code === "ENOENT" || code === "ENOTDIR") {
    const folder = folderProblem(cwd);
    return folder ?? `command not found: ${program} (install it or put it on the PATH the command is given)`;
  }
  if (code === "EACCES") return `permission denied: ${program} is not executable (or ${cwd} cannot be entered)`;
  const message = error instanceof Error ? error.message : String(error);
  return `could not start ${program}: ${message}`;
}

function folderProblem(cwd: string): string | undefined {
  try {
    return statSync(cwd).isDirectory() ? undefined : `the working directory ${cwd} is not a directory`;
  } catch {
    return `the working directory ${cwd} does not exist`;
  }
}

/** One stream's output up to a cap: past it, bytes are dropped (from the end, or the start), never held. */
class CappedOutput {
  private chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;

  constructor(
    private readonly capBytes: number,
    private readonly keep: "head" | "tail",
  ) {}

  add(chunk: Buffer): void {
    if (this.keep === "tail") this.addKeepingTail(chunk);
    else this.addKeepingHead(chunk);
  }

  private addKeepingHead(chunk: Buffer): void {
    const room = this.capBytes - this.kept;
    if (chunk.length <= room) {
      this.chunks.push(chunk);
      this.kept += chunk.length;
      return;
    }
    this.truncated = true;
    if (room <= 0) return;
    // A copy, so the rest of the chunk is not kept alive by the slice.
    this.chunks.push(Buffer.from(chunk.subarray(0, room)));
    this.kept += room;
  }

  private addKeepingTail(chunk: Buffer): void {
    if (chunk.length >= this.capBytes) {
      this.truncated ||= chunk.length > this.capBytes || this.kept > 0;
      this.chunks = this.capBytes === 0 ? [] : [Buffer.from(chunk.subarray(chunk.length - this.capBytes))];
      this.kept = this.capBytes;
      return;
    }
    this.chunks.push(chunk);
    this.kept += chunk.length;
    while (this.kept > this.capBytes) {
      this.truncated = true;
      const first = this.chunks[0] as Buffer;
      const excess = this.kept - this.capBytes;
      if (first.length <= excess) {
        this.chunks.shift();
        this.kept -= first.length;
      } else {
        this.chunks[0] = Buffer.from(first.subarray(excess));
        this.kept -= excess;
      }
    }
  }

  text(): string {
    const bytes = Buffer.concat(this.chunks, this.kept);
    if (!this.truncated) return bytes.toString("utf8");
    return (this.keep === "head" ? wholeUtf8Prefix(bytes) : wholeUtf8Suffix(bytes)).toString("utf8");
  }
}

/**
 * What became of a run, in a few words for a message: `exit status 1`, `killed by SIGSEGV`,
 * `timed out after 30 s and was stopped`, `command not found: npm (…)`.
 */
export function describeOutcome(result: BoundedResult, timeoutMs: number): string {
  if (result.error !== undefined) return result.error;
  if (result.timedOut) return `timed out after ${formatDuration(timeoutMs)} and was stopped`;
  if (result.aborted) return "stopped before it finished";
  if (result.exitCode === null) return `killed by ${result.signal ?? "a signal"}`;
  return `exit status ${result.exitCode}`;
}

/** `30 s`, `250 ms`, `1.5 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
