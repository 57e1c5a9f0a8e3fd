/**
 * What the session sandbox adds to starting a harness: `true` started directly, then inside
 * bwrap with a session's plan (src/sandbox/plan.ts: the namespaces, the system binds, the tmpfs
 * home, the worktree), the median of N each, in one run so the ratio compares like with like.
 * And the one-off availability check a daemon pays once per process. Nothing is asserted on time.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkBubblewrap } from "../src/sandbox/available.js";
import { hostSystem } from "../src/sandbox/host.js";
import { planBubblewrap } from "../src/sandbox/plan.js";
import { medianRuns, printFigure, printHeading, runsFromEnv, timeProcess } from "./lib.js";

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
    printFigure({ label: "availability check (once per process)", value: checkMs, unit: "ms", note: check.version });
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
