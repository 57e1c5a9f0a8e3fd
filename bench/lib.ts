import { spawnSync } from "node:child_process";
import type { SpawnSyncOptions } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { SessionSpawnContext } from "../src/sdk/hooks/catalog.js";

/**
 * Shared by the figure scripts: timing, medians, and one line format for every figure, so the
 * output of `npm run bench` reads as a table.
 */

export const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
export const BIN = fileURLToPath(new URL("../bin/the-loop.js", import.meta.url));

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

/** Wall-clock milliseconds of one run of a process, failing loudly when it does not exit 0. */
export function timeProcess(command: string, args: readonly string[], options: SpawnSyncOptions = {}): number {
  const started = performance.now();
  const result = spawnSync(command, [...args], { stdio: ["ignore", "ignore", "pipe"], ...options });
  const elapsed = performance.now() - started;
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} exited ${result.status}: ${String(result.stderr ?? "")}`);
  }
  return elapsed;
}

/**
 * Loaded into a measured Node process with `--import`: at exit it writes the CPU time the process
 * used (user + system, µs) to stderr, so a figure can be read as CPU time, which another program
 * on a loaded machine disturbs far less than wall time.
 */
const CPU_REPORT = "data:text/javascript,process.on('exit',()=>{const u=process.cpuUsage();process.stderr.write('\\nbench-cpu-us '+(u.user+u.system)+'\\n')})";

/** Wall-clock and CPU milliseconds (the child's user + system) of one run of `node args…`, failing loudly when it does not exit 0. */
export function timeNodeProcess(args: readonly string[], options: SpawnSyncOptions = {}): { wall: number; cpu: number } {
  const started = performance.now();
  const result = spawnSync(process.execPath, ["--import", CPU_REPORT, ...args], { stdio: ["ignore", "ignore", "pipe"], ...options });
  const wall = performance.now() - started;
  const stderr = String(result.stderr ?? "");
  if (result.status !== 0) throw new Error(`node ${args.join(" ")} exited ${result.status}: ${stderr}`);
  const reported = /bench-cpu-us (\d+)\s*$/.exec(stderr);
  if (reported === null) throw new Error(`node ${args.join(" ")} reported no CPU time: ${stderr.slice(-500)}`);
  return { wall, cpu: Number(reported[1]) / 1000 };
}

/** Medians of wall and CPU time over `runs` runs of `once` after one untimed warm-up. */
export function medianRunsWithCpu(
  runs: number,
  once: () => { wall: number; cpu: number },
): { median: number; p90: number; cpu: number; cpuP90: number; runs: number } {
  once();
  const times = Array.from({ length: runs }, once);
  const walls = times.map((time) => time.wall);
  const cpus = times.map((time) => time.cpu);
  return { median: median(walls), p90: percentile(walls, 90), cpu: median(cpus), cpuP90: percentile(cpus, 90), runs };
}

/**
 * `BENCH_BASE_BIN`: another build's `bin/the-loop.js` (a copy of an earlier `bin/` and `dist/`),
 * whose runs take turns with this build's so that both see the same machine: a figure then
 * prints the earlier build's too, and the ratio of the two.
 */
export const BASE_BIN = process.env.BENCH_BASE_BIN || undefined;

/** Runs `a` and `b` in turns (a warm-up of each first, the order swapped every run), `runs` times each. */
export function alternatedRuns<T>(runs: number, a: () => T, b: () => T): { a: T[]; b: T[] } {
  a();
  b();
  const first: T[] = [];
  const second: T[] = [];
  for (let run = 0; run < runs; run++) {
    if (run % 2 === 0) {
      first.push(a());
      second.push(b());
    } else {
      second.push(b());
      first.push(a());
    }
  }
  return { a: first, b: second };
}

/** The median of `runs` timed runs after one untimed warm-up (which fills the OS file cache). */
export function medianRuns(runs: number, once: () => number): { median: number; p90: number; runs: number } {
  once();
  const times = Array.from({ length: runs }, once);
  return { median: median(times), p90: percentile(times, 90), runs };
}

/**
 * The environment for measured processes. NODE_EXTRA_CA_CERTS makes Node parse a CA bundle at
 * every start (about 40 ms on a small machine) before running a line of anyone's code; it is
 * removed so figures compare with the budgets, unless BENCH_KEEP_ENV=1.
 */
export function benchEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  if (process.env.BENCH_KEEP_ENV !== "1") delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

/**
 * Quick mode (`BENCH_QUICK=1`, what CI runs): every figure script runs through its real path with
 * few runs and small data, prints its figures and checks what it checks on correctness, but its
 * figures are not comparable with the budgets, so no budget is printed against them. Nothing in
 * bench/ asserts on time in either mode: a figure script fails only when the path it measures does.
 */
export const QUICK = process.env.BENCH_QUICK === "1";

/** The number of runs: BENCH_RUNS when set, else `quick` in quick mode, else `fallback`. */
export function runsFromEnv(fallback: number, quick = Math.min(fallback, 3)): number {
  const value = Number(process.env.BENCH_RUNS);
  if (Number.isInteger(value) && value > 0) return value;
  return QUICK ? quick : fallback;
}

/** A data size or fixed count: `quick` in quick mode, else `full`. */
export function scaled(full: number, quick: number): number {
  return QUICK ? quick : full;
}

export interface FigureLine {
  readonly label: string;
  readonly value: number;
  readonly unit: string;
  /** The same figure for the baseline, when one exists: printed as a ratio. */
  readonly baseline?: number;
  readonly budget?: number;
  readonly note?: string;
}

export function printFigure(line: FigureLine): void {
  const digits = line.value >= 100 ? 0 : line.value >= 10 ? 1 : 2;
  const parts = [`  ${line.label.padEnd(44)} ${line.value.toFixed(digits).padStart(9)} ${line.unit.padEnd(6)}`];
  if (line.baseline !== undefined) parts.push(`${(line.value / line.baseline).toFixed(2)}× baseline`);
  if (line.budget !== undefined && !QUICK) parts.push(`budget ${line.budget} ${line.unit}${line.value > line.budget ? " (OVER)" : ""}`);
  if (line.note) parts.push(line.note);
  console.log(parts.join("   "));
}

export function printHeading(title: string): void {
  console.log(`\n${title}${QUICK ? " [quick mode: few runs, small data, not comparable with the budgets]" : ""}`);
}

/** A `session_spawn` context of a realistic size (a boot prompt of about 3 KB), for the hook figures. */
export function sampleSpawnContext(): SessionSpawnContext {
  return {
    workItem: {
      ref: "github:octo/repo#15",
      tracker: "github",
      host: "github.com",
      repository: "octo/repo",
      number: 15,
      kind: "issue",
      url: "https://github.com/octo/repo/issues/15",
      id: "I_kwDOA15",
    },
    actor: "alice",
    harness: "claude",
    tmuxTarget: "loop-github-octo-repo-15",
    cwd: "/srv/the-loop/workspaces/octo-repo-15",
    harnessSessionId: "3f1c2a9e-0000-4000-8000-000000000015",
    pullRequest: "",
    deliveryId: "0b6c5a1e-d5f1-11ef-8a3e-5f0d6a1b2c3d",
    proceed: true,
    reason: "",
    prompt: "You are working on github:octo/repo#15: Parser crashes on empty input.\n".repeat(40),
  };
}
