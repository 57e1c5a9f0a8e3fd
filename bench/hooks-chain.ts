/**
 * Figure: the lifecycle hook chain's overhead — one point (`session_spawn`) run through three
 * local executors loaded from `.mjs` files the way a daemon loads them (one passes, one rewrites
 * the prompt, one reads the context and hands it back), as the median time per chain run over
 * batches. The same point with no hooks declared is printed beside it: what every operator who
 * declares none pays. Budget: ≤ 20 µs median per run with three executors.
 * BENCH_RUNS overrides the number of batches; BENCH_QUICK=1 makes 5.
 */
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mkdtemp } from "node:fs/promises";
import { MemoryEventSink } from "../src/events/log.js";
import { HookChain } from "../src/hooks/chain.js";
import { loadHooks } from "../src/hooks/load.js";
import { median, percentile, printFigure, printHeading, REPO_ROOT, runsFromEnv, sampleSpawnContext, scaled } from "./lib.js";

const BUDGET_US = 20;
const BATCH = 200;
const batches = runsFromEnv(200, 5);
const WARMUP_BATCHES = scaled(5, 1);

const HOOKS: Record<string, string> = {
  "pass.mjs": "export default class Pass extends LifecycleHooks {\n  sessionSpawn() { return undefined; }\n}\n",
  "prefix.mjs":
    "export default class Prefix extends LifecycleHooks {\n  sessionSpawn(context) { return { ...context, prompt: `[policy] ${context.prompt}` }; }\n}\n",
  "observe.mjs":
    "export default class Observe extends LifecycleHooks {\n  seen = 0;\n  sessionSpawn(context) { this.seen += context.workItem.number > 0 ? 1 : 0; return context; }\n}\n",
};

const dir = await mkdtemp(join(tmpdir(), "the-loop-bench-hooks-"));
await mkdir(join(dir, "node_modules"));
await symlink(REPO_ROOT, join(dir, "node_modules", "the-loop"), "dir");
for (const [file, body] of Object.entries(HOOKS)) {
  await writeFile(join(dir, file), `import { LifecycleHooks } from "the-loop/sdk/hooks";\n${body}`);
}

const events = new MemoryEventSink();
const chain = await loadHooks({
  raw: Object.keys(HOOKS).map((file) => ({ name: file.replace(".mjs", ""), path: file })),
  configDir: dir,
  events,
});
const none = HookChain.empty(events);

const context = sampleSpawnContext();

async function perRunUs(run: () => Promise<unknown>): Promise<{ median: number; p90: number }> {
  for (let i = 0; i < BATCH * WARMUP_BATCHES; i++) await run();
  const samples: number[] = [];
  for (let b = 0; b < batches; b++) {
    const started = performance.now();
    for (let i = 0; i < BATCH; i++) await run();
    samples.push(((performance.now() - started) * 1000) / BATCH);
  }
  return { median: median(samples), p90: percentile(samples, 90) };
}

const outcome = await chain.run("session_spawn", context);
if (!outcome.context.prompt.startsWith("[policy] ")) throw new Error("the prefix hook did not run");
// Each run records hooks.decided; the sink is emptied so it does not grow through the measure.
const run3 = () => chain.run("session_spawn", context).then(() => events.events.splice(0));
const three = await perRunUs(run3);
const empty = await perRunUs(() => none.run("session_spawn", context));

printHeading(`lifecycle hook chain, one point, ${batches} batches of ${BATCH} runs`);
printFigure({ label: "chain run, 3 local executors (median)", value: three.median, unit: "µs", budget: BUDGET_US, note: `p90 ${three.p90.toFixed(1)} µs` });
printFigure({ label: "chain run, no hooks declared (median)", value: empty.median, unit: "µs", note: `p90 ${empty.p90.toFixed(2)} µs` });
await chain.close();
