/**
 * Figure: a remote hook's round trip — one point run through a chain whose only executor is a
 * JSON-RPC endpoint on loopback (the SDK's HookServer hosting a class that rewrites the prompt),
 * with a bearer token, run one after another as a dispatch would; the median over the runs, and
 * how many TCP connections the runs took (keep-alive: one). Budget: ≤ 2 ms median.
 * BENCH_RUNS overrides the number of runs; BENCH_QUICK=1 makes 50.
 */
import { MemoryEventSink } from "../src/events/log.js";
import { loadHooks } from "../src/hooks/load.js";
import { HookServer, LifecycleHooks } from "../src/sdk/hooks/index.js";
import type { SessionSpawnContext } from "../src/sdk/hooks/index.js";
import { median, percentile, printFigure, printHeading, runsFromEnv, sampleSpawnContext, scaled } from "./lib.js";

const BUDGET_MS = 2;
const runs = runsFromEnv(1_000, 50);
const WARMUP_RUNS = scaled(500, 20);
const TOKEN = "bench-hook-token";

class Prefix extends LifecycleHooks {
  override sessionSpawn(context: SessionSpawnContext): SessionSpawnContext {
    return { ...context, prompt: `[policy] ${context.prompt}` };
  }
}

const server = new HookServer(new Prefix(), { token: TOKEN });
const url = await server.listen();
let connections = 0;
server.httpServer.on("connection", () => (connections += 1));

const events = new MemoryEventSink();
const chain = await loadHooks({
  raw: [{ name: "prefix", url, tokenEnv: "BENCH_HOOK_TOKEN", on: ["session_spawn"] }],
  configDir: process.cwd(),
  events,
  env: { BENCH_HOOK_TOKEN: TOKEN },
});

const context = sampleSpawnContext();

async function once(): Promise<number> {
  const started = performance.now();
  const outcome = await chain.run("session_spawn", context);
  const elapsed = performance.now() - started;
  if (!outcome.context.prompt.startsWith("[policy] ")) throw new Error(`the remote hook did not answer: ${JSON.stringify(events.events.at(-1))}`);
  events.events.splice(0);
  return elapsed;
}

for (let i = 0; i < WARMUP_RUNS; i++) await once();
const before = connections;
const times: number[] = [];
for (let i = 0; i < runs; i++) times.push(await once());

printHeading(`remote hook round trip on loopback, ${runs} sequential runs`);
printFigure({
  label: "chain run, 1 remote executor (median)",
  value: median(times),
  unit: "ms",
  budget: BUDGET_MS,
  note: `p99 ${percentile(times, 99).toFixed(2)} ms; ${connections - before} new connection(s) during the runs`,
});
await chain.close();
await server.close();
