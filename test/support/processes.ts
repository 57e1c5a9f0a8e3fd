import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { waitFor } from "./wait.js";

/**
 * The processes the suite starts, found again by their environment. Every CLI a test runs gets
 * these variables (cli.ts), and whatever it starts inherits them — a daemon `the-loop start`
 * detaches, the git it runs — so a process that outlives its test's teardown can be named and
 * ended even after its parent is gone, without touching the processes of a run next to this one.
 * (tmux is the exception: the-loop gives its clients an environment of their own, so tmux
 * servers are found by socket name instead; see leak-guard.ts.)
 *
 * Linux only: elsewhere /proc is missing and nothing is found, so nothing is checked.
 */

/** The run: one id per `vitest run`, made by the global setup and handed to the workers (`inject`). */
export const RUN_MARKER = "THE_LOOP_TEST_RUN";
export const RUN_KEY = "theLoopTestRun";

declare module "vitest" {
  export interface ProvidedContext {
    [RUN_KEY]: string;
  }
}

/** The worker process (one test file at a time) that started it. */
export const WORKER_MARKER = "THE_LOOP_TEST_WORKER";
/** The directory the CLI was started in: a test project's own. */
export const DIR_MARKER = "THE_LOOP_TEST_DIR";

export interface MarkedProcess {
  readonly pid: number;
  /** Its process group; a detached daemon leads its own. */
  readonly pgid: number;
  readonly args: string;
  readonly markers: Readonly<Record<string, string>>;
}

/** Living processes whose environment carries every marker in `wanted`, with the values given. */
export function markedProcesses(wanted: Readonly<Record<string, string>>): MarkedProcess[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const found: MarkedProcess[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const markers = markersOf(pid);
    if (markers === undefined) continue;
    if (!Object.entries(wanted).every(([name, value]) => markers[name] === value)) continue;
    const stat = statOf(pid);
    if (stat === undefined || stat.state === "Z" || stat.state === "X") continue;
    found.push({ pid, pgid: stat.pgid, args: argsOf(pid), markers });
  }
  return found;
}

/** Whether `pid` still runs (a zombie does not: it has exited, and only waits for its parent). */
export function isRunning(pid: number): boolean {
  const stat = statOf(pid);
  return stat !== undefined && stat.state !== "Z" && stat.state !== "X";
}

/**
 * Ends `processes`: each gets `graceMs` to exit by itself (what a `stop` already asked of it),
 * then SIGKILL — its whole group when it leads one (a daemon and what it started), else itself.
 * Returns the ones that had to be killed, once they are gone (or a second later).
 */
export async function endProcesses(processes: readonly MarkedProcess[], graceMs: number): Promise<MarkedProcess[]> {
  if (processes.length === 0) return [];
  await until(() => processes.every((p) => !isRunning(p.pid)), graceMs);
  const killed = processes.filter((p) => isRunning(p.pid));
  const ownGroup = statOf(process.pid)?.pgid;
  for (const p of killed) {
    // Never the group this test process runs in: vitest and its workers would go with it.
    const target = p.pgid === p.pid && p.pgid !== ownGroup ? -p.pgid : p.pid;
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // Gone in the meantime.
    }
  }
  await until(() => killed.every((p) => !isRunning(p.pid)), 1_000);
  return killed;
}

/** One line per process, for a failure message. */
export function describeProcesses(processes: readonly MarkedProcess[]): string {
  return processes.map((p) => `  pid ${p.pid} (${p.markers[DIR_MARKER] ?? "?"}): ${p.args}`).join("\n");
}

const MARKERS = [RUN_MARKER, WORKER_MARKER, DIR_MARKER];

function markersOf(pid: number): Record<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/environ`, "utf8");
  } catch {
    // Gone, or another user's.
    return undefined;
  }
  const markers: Record<string, string> = {};
  for (const entry of text.split("\0")) {
    const equals = entry.indexOf("=");
    const name = entry.slice(0, equals);
    if (equals > 0 && MARKERS.includes(name)) markers[name] = entry.slice(equals + 1);
  }
  return markers[RUN_MARKER] === undefined ? undefined : markers;
}

function statOf(pid: number): { state: string; pgid: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 2 (the command name) may hold spaces and parentheses: fields are counted from the last ")".
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0] ?? "", pgid: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

function argsOf(pid: number): string {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
    return `${args} [cwd ${readlinkSync(`/proc/${pid}/cwd`)}]`;
  } catch {
    return "?";
  }
}

/** Polls `done` for at most `timeoutMs`; the caller looks at what is left either way. */
async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  await waitFor("the processes to exit", done, { timeoutMs, intervalMs: 25 }).catch(() => undefined);
}
