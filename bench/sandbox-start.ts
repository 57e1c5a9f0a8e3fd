/**
 * What the session sandbox adds to starting a harness: `true` started directly, then inside
 * bwrap with a session's plan (src/sandbox/plan.ts: the namespaces, the system binds, the tmpfs
 * home, the worktree), the median of N each, in one run so the ratio compares like with like.
 * Then a session's spawn as the daemon makes it — the tmux runner, alone and wrapped in the
 * sandbox runner (src/sessions/sandbox-runner.ts: the git lookup, the plan, bwrap) — from the
 * spawn call until a Node.js harness has written its first line. And the one-off availability
 * check a daemon pays once per process. Nothing is asserted on time.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkBubblewrap } from "../src/sandbox/available.js";
import { hostSystem } from "../src/sandbox/host.js";
import { planBubblewrap } from "../src/sandbox/plan.js";
import { existsSync } from "node:fs";
import { TmuxRunner } from "../src/harness/tmux.js";
import type { SessionRunner } from "../src/harness/runner.js";
import { SandboxRunner } from "../src/sessions/sandbox-runner.js";
import { median, medianRuns, printFigure, printHeading, runsFromEnv, timeProcess } from "./lib.js";

printHeading("sandbox start: `true` directly and inside bwrap with a session's plan");

const checkStarted = performance.now();
const check = await checkBubblewrap();
const checkMs = performance.now() - checkStarted;
if (!check.available) {
  console.log(`  skipped: ${check.reason}`);
} else {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "the-loop-bench-sandbox-")));
  try {
    const stateRoot = join(base, "state");
    const worktree = join(stateRoot, "workspaces", "item-1");
    const home = join(base, "home");
    mkdirSync(worktree, { recursive: true });
    mkdirSync(join(home, ".claude"), { recursive: true });
    writeFileSync(join(home, ".claude.json"), "{}");
    const env = { PATH: "/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" };
    const argv = planBubblewrap({
      worktree,
      gitDirs: [],
      home,
      agentConfig: [
        { source: join(home, ".claude.json"), target: join(home, ".claude.json"), mode: "rw" },
        { source: join(home, ".claude"), target: join(home, ".claude"), mode: "rw" },
      ],
      binds: [],
      env,
      argv: ["true"],
      cwd: worktree,
      stateRoot,
      system: hostSystem(),
      denyNestedUserNamespaces: check.denyNestedUserNamespaces,
    });
    const runs = runsFromEnv(30, 3);
    const direct = medianRuns(runs, () => timeProcess("true", [], { cwd: worktree, env }));
    const sandboxed = medianRuns(runs, () => timeProcess(argv[0] as string, argv.slice(1), { cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } }));
    printFigure({ label: "true, directly (median)", value: direct.median, unit: "ms", note: `p90 ${direct.p90.toFixed(2)} ms, ${runs} runs` });
    printFigure({
      label: "true, in bwrap with the plan (median)",
      value: sandboxed.median,
      unit: "ms",
      baseline: direct.median,
      note: `p90 ${sandboxed.p90.toFixed(2)} ms`,
    });
    printFigure({ label: "added by the sandbox (median)", value: sandboxed.median - direct.median, unit: "ms" });
    await sessionSpawns(base, stateRoot, worktree, home, Math.max(3, Math.round(runs / 3)));
    printFigure({ label: "availability check (once per process)", value: checkMs, unit: "ms", note: check.version });
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/** The spawn of a session, as the daemon makes it, with and without the sandbox, alternating. */
async function sessionSpawns(base: string, stateRoot: string, worktree: string, home: string, runs: number): Promise<void> {
  const socketName = `the-loop-bench-sandbox-${process.pid}`;
  const environment = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LANG: "C.UTF-8" };
  const tmux = new TmuxRunner({ socketName, remainOnExit: false, tempDir: base, environment });
  const events = { emit: () => undefined, batch: <T>(work: () => T): T => work() };
  const sandboxed = new SandboxRunner({
    inner: tmux,
    settings: () => ({ mode: "auto", binds: [] }),
    stateRoot,
    environment,
    sessionBinDir: join(stateRoot, "bin"),
    events,
  });
  const timings: Record<"tmux" | "sandbox", number[]> = { tmux: [], sandbox: [] };
  try {
    for (let run = 0; run < runs; run += 1) {
      for (const [name, runner] of [
        ["tmux", tmux],
        ["sandbox", sandboxed],
      ] as const) {
        timings[name].push(await timeSpawn(runner, `${name}-${run}`, worktree));
      }
    }
  } finally {
    // A server already gone (its last session ended) has nothing left to stop.
    await tmux.killServer().catch(() => undefined);
  }
  const plain = median(timings.tmux);
  const wrapped = median(timings.sandbox);
  printFigure({ label: "session spawn, tmux runner (median)", value: plain, unit: "ms", note: `${runs} runs, until the harness writes` });
  printFigure({ label: "session spawn, in its sandbox (median)", value: wrapped, unit: "ms", baseline: plain });
  printFigure({ label: "added to a session's spawn by the sandbox (median)", value: wrapped - plain, unit: "ms" });
}

async function timeSpawn(runner: SessionRunner, name: string, worktree: string): Promise<number> {
  const marker = join(worktree, `${name}.started`);
  const started = performance.now();
  await runner.spawn({
    target: `loop-bench-${name}`,
    cwd: worktree,
    argv: [process.execPath, "-e", `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "up"); setInterval(() => {}, 1 << 30)`],
    env: {},
    workItem: "local:bench#1",
    harness: "bench",
  });
  const deadline = started + 20_000;
  // Polled, bounded: the figure is the time until the harness is up, not a fixed wait.
  while (!existsSync(marker)) {
    if (performance.now() > deadline) throw new Error(`the harness of ${name} did not start within 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const elapsed = performance.now() - started;
  await runner.terminate(`loop-bench-${name}`, { killHarness: true, graceMs: 500, killSession: true });
  return elapsed;
}
