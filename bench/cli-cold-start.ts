/**
 * Figure: CLI cold start — `the-loop --version`, `--help`, and `item list` over 1,000 local
 * items — as the median wall time of whole processes, against bare Node starting an empty
 * module (the baseline: what no CLI on Node can beat). Budget: --version/--help ≤ 80 ms.
 * BENCH_RUNS overrides the number of runs; BENCH_QUICK=1 makes 3 runs over 50 items.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventLog } from "../src/events/log.js";
import { LocalTracker } from "../src/trackers/local/index.js";
import { BIN, benchEnv, medianRuns, printFigure, printHeading, runsFromEnv, scaled, timeProcess } from "./lib.js";

const ITEMS = scaled(1_000, 50);
const runs = runsFromEnv(21, 3);

async function projectWithItems(count: number): Promise<string> {
  const cwd = await mkdtemp(join(tmpdir(), "the-loop-bench-"));
  const tracker = new LocalTracker({
    trackerDir: join(cwd, ".the-loop", "tracker"),
    events: new EventLog({ path: null, source: "cli" }),
  });
  for (let i = 1; i <= count; i++) {
    await tracker.openItem({
      project: "default",
      title: `Work item number ${i}`,
      body: "A body of a typical length for an issue, a sentence or two describing the work.",
      labels: i % 3 === 0 ? ["the-loop: auto-execute"] : [],
      actor: "bench",
    });
  }
  return cwd;
}

const scratch = await mkdtemp(join(tmpdir(), "the-loop-bench-"));
const empty = join(scratch, "empty.mjs");
await writeFile(empty, "");
process.stdout.write(`preparing ${ITEMS} local items… `);
const project = await projectWithItems(ITEMS);
console.log("done");

try {
  const env = benchEnv({ NO_COLOR: "1" });
  const node =
    (args: string[], cwd = scratch) =>
    () =>
      timeProcess(process.execPath, args, { cwd, env });
  const baseline = medianRuns(runs, node([empty]));
  printHeading(`CLI cold start (median of ${runs} runs, wall time of the whole process)`);
  printFigure({ label: "node empty.mjs (baseline)", value: baseline.median, unit: "ms" });
  for (const [label, args, budget] of [
    ["the-loop --version", ["--version"], 80],
    ["the-loop --help", ["--help"], 80],
  ] as const) {
    const figure = medianRuns(runs, node([BIN, ...args]));
    printFigure({ label, value: figure.median, unit: "ms", baseline: baseline.median, budget, note: `p90 ${figure.p90.toFixed(1)} ms` });
  }
  for (const [label, args] of [
    [`the-loop item list (${ITEMS} items)`, ["item", "list"]],
    [`the-loop item list --json (${ITEMS} items)`, ["item", "list", "--json"]],
  ] as const) {
    const figure = medianRuns(runs, node([BIN, ...args], project));
    printFigure({ label, value: figure.median, unit: "ms", baseline: baseline.median, note: `p90 ${figure.p90.toFixed(1)} ms` });
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
  await rm(project, { recursive: true, force: true });
}
