/**
 * Figure: listing the session registry — `SessionRegistry.list()` over 10,000 records, warm (the
 * same process listing again and again) and cold (the first call of a new process, which is what
 * `sessions list` pays), as medians of several runs. Budget: `the-loop sessions list` over 10,000
 * records in ≤ 300 ms including process start, so the listing must leave room for Node, the CLI
 * and the config (bare Node's start is printed for that comparison). The listing followed by a
 * full schema parse of every record is printed too: the price list() avoids by checking shapes
 * by hand. BENCH_RUNS overrides the number of runs; BENCH_QUICK=1 makes 3 over 200 records.
 */
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ControlRecord } from "../src/control/types.js";
import type { SessionRecord } from "../src/registry/record.js";
import { tmuxTargetFor } from "../src/registry/record.js";
import { sessionRecordSchema } from "../src/registry/record-schema.js";
import { SessionRegistry } from "../src/registry/registry.js";
import { toJsonText } from "../src/state/atomic.js";
import { workItemSlug } from "../src/workitem/index.js";
import { BIN, REPO_ROOT, benchEnv, medianRuns, printFigure, printHeading, runsFromEnv, scaled, timeProcess } from "./lib.js";

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
  const baseline = medianRuns(runs, () => timeProcess(process.execPath, [empty], { cwd: scratch, env: benchEnv() }));
  printHeading(`Session registry listing (${RECORDS} records, median of ${runs} runs)`);
  printFigure({ label: "node empty.mjs (process start, for scale)", value: baseline.median, unit: "ms" });
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
  for (const [label, args] of [
    ["the-loop sessions list (with a control record per item)", ["sessions", "list"]],
    ["the-loop sessions list --json (with a control record per item)", ["sessions", "list", "--json"]],
  ] as const) {
    const command = medianRuns(runs, () => timeProcess(process.execPath, [BIN, ...args], { cwd: project, env: benchEnv() }));
    printFigure({ label, value: command.median, unit: "ms", budget: BUDGET_MS, baseline: baseline.median, note: `p90 ${command.p90.toFixed(1)} ms` });
  }
  const live = medianRuns(
    runs,
    timed(() => registry.list({ status: "live" })),
  );
  printFigure({ label: `registry.list({ status: "live" }), warm`, value: live.median, unit: "ms", note: `p90 ${live.p90.toFixed(1)} ms` });
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
