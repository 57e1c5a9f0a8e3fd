/**
 * Figure: `the-loop graph status local:demo#N --json` — the whole process, from start to the
 * document on stdout — in a state root holding 10,000 graph records, as the median wall time of
 * several runs (after one untimed warm-up each, the two roots taking turns), against the same
 * command in a state root holding that one record (the price of the other records) and bare Node
 * starting an empty module (what no CLI on Node can beat).
 * Budget: 100 ms. Runs the built CLI (bin/the-loop.js → dist/), so `npm run build` first.
 * BENCH_RUNS overrides the number of runs; BENCH_QUICK=1 makes 3 over 1,000 records.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GraphHistoryEntry, GraphState } from "../src/graph-run/state.js";
import { graphStateSchema } from "../src/graph-run/state.js";
import { graphStateProblem } from "../src/graph-run/store.js";
import { toJsonText } from "../src/state/atomic.js";
import { parseWorkItemRef, workItemSlug } from "../src/workitem/index.js";
import { BIN, REPO_ROOT, benchEnv, median, medianRuns, percentile, printFigure, printHeading, runsFromEnv, scaled, timeProcess } from "./lib.js";

const RECORDS = scaled(10_000, 1_000);
const BUDGET_MS = 100;
const runs = runsFromEnv(11, 3);
/** The item asked about: one in the middle of the folder, not the first file a listing would meet. */
const ASKED = Math.ceil(RECORDS / 2);
/** The work-item graph's nodes in the order an item passes them, the terminal one left out. */
const NODES = ["requirements", "requirements-approval", "design", "design-approval", "tasks", "implementation", "verification", "final-review"];
/** The phase of each node whose phase is not its own id. */
const PHASES: Record<string, string> = {
  "requirements-approval": "requirements-review",
  "design-approval": "design-review",
  "final-review": "review",
};

if (!existsSync(join(REPO_ROOT, "dist", "cli", "main.js"))) {
  throw new Error("the CLI is not built: run `npm run build` first (this figure times bin/the-loop.js, which runs dist/)");
}

/** A record of typical size: an item some way through the work-item graph, with the history that got it there. */
function recordFor(index: number): GraphState {
  const at = (minutes: number): string => new Date(Date.UTC(2026, 0, 1) + index * 60_000 + minutes * 60_000).toISOString();
  const reached = index % NODES.length;
  const history: GraphHistoryEntry[] = [{ at: at(0), kind: "started", node: "requirements", actor: { kind: "daemon", id: "the-loop" } }];
  for (let step = 1; step <= reached; step++) {
    const from = NODES[step - 1] as string;
    const gate = from.endsWith("-approval");
    history.push(
      gate
        ? { at: at(step), kind: "gate-decided", node: from, outcome: "approved", actor: { kind: "human", id: "alice" } }
        : { at: at(step), kind: "claimed", node: from, outcome: "pass", actor: { kind: "agent", id: `session-${index}` } },
      { at: at(step), kind: "entered", node: NODES[step] as string, from, actor: { kind: "daemon", id: "the-loop" } },
    );
  }
  const node = NODES[reached] as string;
  const waiting = node in PHASES;
  return {
    version: 1,
    ref: `local:demo#${index}`,
    graph: "work-item",
    loopRunId: `run-${index.toString(36).padStart(8, "0")}`,
    node,
    phase: PHASES[node] ?? node,
    status: waiting ? "waiting" : "running",
    generation: 1,
    attempts: {},
    outcomes: Object.fromEntries(NODES.slice(0, reached).map((left) => [left, left.endsWith("-approval") ? "approved" : "pass"])),
    startedAt: at(0),
    updatedAt: at(reached),
    ...(waiting ? { reasonCode: "awaiting-review", reason: `waiting for an authorized person to approve "${node}" or request changes` } : {}),
    history,
  };
}

/** `count` records written straight into `<root>/graphs/` (the figure is the read, not 10,000 locked writes), plus the asked one. */
async function stateRootWith(root: string, count: number): Promise<void> {
  const dir = join(root, "graphs");
  await mkdir(dir, { recursive: true });
  const write = (index: number): Promise<void> =>
    writeFile(join(dir, `${workItemSlug(parseWorkItemRef(`local:demo#${index}`))}.json`), toJsonText(recordFor(index)));
  await write(ASKED);
  for (let start = 1; start <= count; start += 500) {
    const batch = Array.from({ length: Math.min(500, count - start + 1) }, (_, offset) => start + offset);
    await Promise.all(batch.filter((index) => index !== ASKED).map(write));
  }
}

/** A project whose config points at `root`: the local tracker's `demo` project, the graph on. */
async function projectFor(dir: string, root: string): Promise<string> {
  await mkdir(join(dir, ".the-loop"), { recursive: true });
  const config = `version: 1\nstate:\n  root: ${JSON.stringify(root)}\nintegrations:\n  local:\n    project: demo\ngraph:\n  enabled: true\n`;
  await writeFile(join(dir, ".the-loop", "cli-config.yaml"), config);
  return dir;
}

// Every kind of record written here is one the schema takes and the store's reader takes.
for (let index = 1; index <= NODES.length; index++) {
  graphStateSchema.parse(recordFor(index));
  const problem = graphStateProblem(recordFor(index));
  if (problem !== undefined) throw new Error(`record ${index} is not a graph state record: ${problem}`);
}

const scratch = await mkdtemp(join(tmpdir(), "the-loop-bench-graph-"));
try {
  const empty = join(scratch, "empty.mjs");
  await writeFile(empty, "");
  process.stdout.write(`preparing ${RECORDS} graph records… `);
  const full = await projectFor(join(scratch, "full"), join(scratch, "state-full"));
  await stateRootWith(join(scratch, "state-full"), RECORDS);
  const alone = await projectFor(join(scratch, "alone"), join(scratch, "state-alone"));
  await stateRootWith(join(scratch, "state-alone"), 0);
  console.log("done");

  const args = [BIN, "graph", "status", `local:demo#${ASKED}`, "--json"];
  // The command answers for the asked item, with the record as written.
  const answer = spawnSync(process.execPath, args, { cwd: full, env: benchEnv(), encoding: "utf8" });
  if (answer.status !== 0) throw new Error(`graph status exited ${answer.status}: ${answer.stderr}`);
  const document = JSON.parse(answer.stdout) as { ref?: string; node?: string };
  const expected = recordFor(ASKED);
  if (document.ref !== expected.ref || document.node !== expected.node) {
    throw new Error(`graph status answered ${answer.stdout.slice(0, 200)}, expected ${expected.ref} at node ${expected.node}`);
  }

  printHeading(`the-loop graph status REF --json (${RECORDS} graph records in the state root, median of ${runs} runs)`);
  const baseline = medianRuns(runs, () => timeProcess(process.execPath, [empty], { cwd: scratch, env: benchEnv() }));
  printFigure({ label: "node empty.mjs (process start, for scale)", value: baseline.median, unit: "ms" });
  // The two roots take turns, so a machine growing busier during the runs weighs on both alike.
  const time = (cwd: string) => () => timeProcess(process.execPath, args, { cwd, env: benchEnv() });
  const single: number[] = [];
  const many: number[] = [];
  time(alone)();
  time(full)();
  for (let run = 0; run < runs; run++) {
    if (run % 2 === 0) {
      single.push(time(alone)());
      many.push(time(full)());
    } else {
      many.push(time(full)());
      single.push(time(alone)());
    }
  }
  printFigure({
    label: "graph status, the one record in the root",
    value: median(single),
    unit: "ms",
    budget: BUDGET_MS,
    note: `p90 ${percentile(single, 90).toFixed(1)} ms`,
  });
  printFigure({
    label: `graph status, ${RECORDS} records in the root`,
    value: median(many),
    unit: "ms",
    budget: BUDGET_MS,
    baseline: median(single),
    note: `p90 ${percentile(many, 90).toFixed(1)} ms; ${(median(many) - baseline.median).toFixed(0)} ms over process start`,
  });
} finally {
  await rm(scratch, { recursive: true, force: true });
}
