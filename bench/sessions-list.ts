/**
 * Figure: listing the session registry — `SessionRegistry.list()` over 10,000 records, warm (the
 * same process listing again and again) and cold (the first call of a new process, which is what
 * `sessions list` pays), as medians of several runs. Budget: `the-loop sessions list` over 10,000
 * records in ≤ 300 ms including process start, so the listing must leave room for Node, the CLI
 * and the config (bare Node's start is printed for that comparison). The listing followed by a
 * full schema parse of every record is printed too: the price list() avoids by checking shapes
 * by hand. The command's figures hold a control record per item and a budget record per live
 * session, as a daemon's state root does; each is printed as wall time and as the child's CPU time
 * (user + system). BENCH_RUNS overrides the number of runs; BENCH_QUICK=1 makes 3 over 200
 * records; BENCH_BASE_BIN names an earlier build to alternate with (bench/lib.ts).
 */
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ControlRecord } from "../src/control/types.js";
import { BudgetStore, budgetDir } from "../src/budget/store.js";
import type { BudgetRecord } from "../src/budget/store.js";
import type { SessionRecord } from "../src/registry/record.js";
import { isLive, tmuxTargetFor } from "../src/registry/record.js";
import { sessionRecordSchema } from "../src/registry/record-schema.js";
import { SessionRegistry } from "../src/registry/registry.js";
import { toJsonText } from "../src/state/atomic.js";
import { workItemSlug } from "../src/workitem/index.js";
import {
  BASE_BIN,
  BIN,
  REPO_ROOT,
  alternatedRuns,
  benchEnv,
  median,
  medianRuns,
  medianRunsWithCpu,
  printFigure,
  printHeading,
  runsFromEnv,
  scaled,
  timeNodeProcess,
} from "./lib.js";

const RECORDS = scaled(10_000, 200);
const BUDGET_MS = 300;
const runs = runsFromEnv(11, 3);

/** A record of typical size: a GitHub issue, a dozen recent deliveries, a third of them closed. */
function recordFor(index: number): SessionRecord {
  const ref = `github:octo/service-${index % 40}#${index}`;
  const slug = workItemSlug(ref);
  const url = `https://github.com/octo/service-${index % 40}/issues/${index}`;
  const createdAt = new Date(Date.UTC(2025, 0, 1) + index * 60_000).toISOString();
  const closed = index % 3 === 0;
  return {
    version: 1,
    workItem: {
      ref,
      tracker: "github",
      host: "github.com",
      repository: `octo/service-${index % 40}`,
      number: index,
      kind: "issue",
      url,
      id: `I_kwDOAbCdEf${index.toString(36).padStart(6, "0")}`,
    },
    harness: "claude",
    harnessSessionId: `6f1c2b3a-0d4e-4f5a-8b6c-${index.toString(16).padStart(12, "0")}`,
    cwd: `/home/dev/project/.the-loop/workspaces/${slug}`,
    status: closed ? "closed" : index % 7 === 0 ? "paused" : "active",
    createdAt,
    lastEventAt: createdAt,
    tmuxTarget: tmuxTargetFor(slug),
    recentDeliveries: Array.from({ length: 12 }, (_, n) => `poll-local-${index}-${n}`),
    url,
    ...(closed ? { closedAt: createdAt, closeReason: "item-closed" } : {}),
  };
}

/** A live session's budget record as the daemon keeps it: the usage it last read off the transcript. */
function budgetRecordFor(record: SessionRecord): BudgetRecord {
  const input = 180_000 + record.workItem.number;
  return {
    version: 1,
    ref: record.workItem.ref,
    session: record.createdAt,
    harness: record.harness,
    usage: { readable: true, readAt: record.lastEventAt, files: 1, input, cached: 150_000, output: 12_000, total: input + 12_000 },
    minutes: 42,
    raise: { tokens: 0, minutes: 0 },
    warnedAt: {},
  };
}

async function registryWith(count: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "the-loop-bench-sessions-"));
  // Written directly rather than through claim(): the figure is the listing, not 10,000 fsyncs.
  for (let start = 1; start <= count; start += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, count - start + 1) }, (_, offset) => {
        const record = recordFor(start + offset);
        return writeFile(join(dir, `${workItemSlug(record.workItem.ref)}.json`), toJsonText(record));
      }),
    );
  }
  return dir;
}

const REGISTRY_MODULE = new URL("../src/registry/registry.ts", import.meta.url).href;

/**
 * The first list() of a new process, timed inside it: what `sessions list` pays, with code not
 * yet optimized and a young heap that has to grow, unlike the warm in-process runs.
 */
function coldListMs(dir: string): number {
  const script =
    `const { SessionRegistry } = await import(${JSON.stringify(REGISTRY_MODULE)});` +
    "const registry = new SessionRegistry({ dir: process.argv[1] });" +
    "const started = performance.now(); registry.list(); console.log(performance.now() - started);";
  const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script, dir], {
    cwd: REPO_ROOT,
    env: benchEnv(),
    encoding: "utf8",
  });
  const ms = Number(result.stdout.trim());
  if (result.status !== 0 || !Number.isFinite(ms)) throw new Error(`cold list failed (exit ${result.status}): ${result.stderr}`);
  return ms;
}

function timed(run: () => void): () => number {
  return () => {
    const started = performance.now();
    run();
    return performance.now() - started;
  };
}

const scratch = await mkdtemp(join(tmpdir(), "the-loop-bench-"));
const empty = join(scratch, "empty.mjs");
await writeFile(empty, "");
process.stdout.write(`preparing ${RECORDS} session records… `);
const dir = await registryWith(RECORDS);
console.log("done");

try {
  const registry = new SessionRegistry({ dir });
  const listed = registry.list();
  if (listed.records.length !== RECORDS || listed.problems.length > 0) {
    throw new Error(`expected ${RECORDS} records and no problems, got ${listed.records.length} and ${listed.problems.length}`);
  }
  const baseline = medianRunsWithCpu(runs, () => timeNodeProcess([empty], { cwd: scratch, env: benchEnv() }));
  printHeading(`Session registry listing (${RECORDS} records, median of ${runs} runs)`);
  printFigure({ label: "node empty.mjs (process start, for scale)", value: baseline.median, unit: "ms", note: `CPU ${baseline.cpu.toFixed(1)} ms` });
  const warm = medianRuns(
    runs,
    timed(() => registry.list()),
  );
  printFigure({ label: "registry.list(), warm", value: warm.median, unit: "ms", budget: BUDGET_MS, note: `p90 ${warm.p90.toFixed(1)} ms` });
  const cold = medianRuns(runs, () => coldListMs(dir));
  printFigure({
    label: "registry.list(), first call of a new process",
    value: cold.median,
    unit: "ms",
    budget: BUDGET_MS,
    note: `p90 ${cold.p90.toFixed(1)} ms; the budget is for \`sessions list\` with process start`,
  });
  // The command itself, end to end: process start, config, listing, the table on stdout.
  const project = join(scratch, "project");
  await mkdir(join(project, ".the-loop"), { recursive: true });
  await writeFile(join(project, ".the-loop", "cli-config.yaml"), `routing:\n  registryDir: ${JSON.stringify(dir)}\n`);
  // Every session began with a start command, so every item has a control record too.
  const controlDir = join(project, ".the-loop", "sessions", "control");
  await mkdir(controlDir, { recursive: true });
  for (let start = 1; start <= RECORDS; start += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, RECORDS - start + 1) }, (_, offset) => {
        const ref = recordFor(start + offset).workItem.ref;
        const control: ControlRecord = {
          version: 1,
          ref,
          command: "start",
          source: "comment",
          actor: "alice",
          requestedAt: "2026-11-30T00:00:00.000Z",
          effect: "started",
          deliveryId: `d-${start + offset}`,
        };
        return writeFile(join(controlDir, `${workItemSlug(ref)}.json`), toJsonText(control));
      }),
    );
  }
  // The daemon keeps a budget record for every live session it has looked at (docs/fleet.md#budgets).
  const budgets = new BudgetStore({ dir: budgetDir(join(project, ".the-loop")) });
  await mkdir(budgets.dir, { recursive: true });
  const live = Array.from({ length: RECORDS }, (_, index) => recordFor(index + 1)).filter((record) => isLive(record));
  for (let start = 0; start < live.length; start += 500) {
    await Promise.all(live.slice(start, start + 500).map((record) => writeFile(budgets.fileOf(record.workItem.ref), toJsonText(budgetRecordFor(record)))));
  }
  console.log(`  (${live.length} of the sessions are live, each with a budget record)`);
  for (const [label, args] of [
    ["the-loop sessions list (with a control record per item)", ["sessions", "list"]],
    ["the-loop sessions list --json (with a control record per item)", ["sessions", "list", "--json"]],
  ] as const) {
    const once = (bin: string) => () => timeNodeProcess([bin, ...args], { cwd: project, env: benchEnv() });
    if (BASE_BIN === undefined) {
      const command = medianRunsWithCpu(runs, once(BIN));
      printFigure({ label, value: command.median, unit: "ms", budget: BUDGET_MS, baseline: baseline.median, note: `p90 ${command.p90.toFixed(1)} ms` });
      printFigure({ label: "  its CPU time (user + system)", value: command.cpu, unit: "ms", note: `p90 ${command.cpuP90.toFixed(1)} ms` });
      continue;
    }
    // Alternated with the earlier build, so that both see the same machine.
    const { a: ours, b: theirs } = alternatedRuns(runs, once(BIN), once(BASE_BIN));
    const figure = (times: { wall: number; cpu: number }[], key: "wall" | "cpu"): number => median(times.map((time) => time[key]));
    printFigure({
      label,
      value: figure(ours, "wall"),
      unit: "ms",
      budget: BUDGET_MS,
      baseline: figure(theirs, "wall"),
      note: "baseline: BENCH_BASE_BIN, alternated",
    });
    printFigure({ label: "  the same, BENCH_BASE_BIN", value: figure(theirs, "wall"), unit: "ms" });
    printFigure({ label: "  its CPU time (user + system)", value: figure(ours, "cpu"), unit: "ms", baseline: figure(theirs, "cpu") });
    printFigure({ label: "  the same, BENCH_BASE_BIN", value: figure(theirs, "cpu"), unit: "ms" });
  }
  const liveListing = medianRuns(
    runs,
    timed(() => registry.list({ status: "live" })),
  );
  printFigure({ label: `registry.list({ status: "live" }), warm`, value: liveListing.median, unit: "ms", note: `p90 ${liveListing.p90.toFixed(1)} ms` });
  const strict = medianRuns(
    runs,
    timed(() => {
      for (const record of registry.list().records) sessionRecordSchema.parse(record);
    }),
  );
  printFigure({
    label: "registry.list() + schema parse of each, warm",
    value: strict.median,
    unit: "ms",
    baseline: warm.median,
    note: `p90 ${strict.p90.toFixed(1)} ms`,
  });
} finally {
  await rm(scratch, { recursive: true, force: true });
  await rm(dir, { recursive: true, force: true });
}
