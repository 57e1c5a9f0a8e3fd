/**
 * Figure: spawn → the real agent's first model request. From the moment the-loop starts a
 * session (Claude Code's folder trust settled in its config, then the tmux spawn, exactly as the
 * dispatcher does it) to the first agentic request reaching the model, with the pinned Claude
 * Code CLI (installed into the cache by scripts/install-claude-code.ts) against a scripted
 * Messages API on loopback. Each run spawns in a folder Claude Code has never seen.
 * BENCH_RUNS overrides the number of runs; BENCH_QUICK=1 makes one run and counts the warm-up.
 */
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { randomUUID } from "node:crypto";
import { configSchema } from "../src/config/schema.js";
import { EventLog } from "../src/events/index.js";
import { TmuxRunner, harnessAdapter } from "../src/harness/index.js";
import { harnessPreparer } from "../src/harness/preparer.js";
import { CLAUDE_CODE_VERSION, ensureClaudeCode } from "../scripts/install-claude-code.js";
import { startModelStub } from "../test/support/model-stub.js";
import { QUICK, median, percentile, printFigure, printHeading, runsFromEnv } from "./lib.js";

const runs = runsFromEnv(5, 1);
/** Untimed first runs: the first warms the OS file cache for the 235 MB binary. */
const warmups = QUICK ? 0 : 1;
const FIRST_REQUEST_TIMEOUT_MS = 60_000;
const API_KEY = "sk-ant-api03-the-loop-bench-key-0123456789abcdefghij";

const binary = await ensureClaudeCode();
const scratch = await realpath(await mkdtemp(join(tmpdir(), "the-loop-bench-claude-")));
const home = join(scratch, "home");
const socketName = `loop-bench-${process.pid}`;
const runner = new TmuxRunner({ socketName, remainOnExit: false });
const stub = await startModelStub(() => ({ text: "ready" }));
const events = new EventLog({ path: join(scratch, "events.jsonl"), source: "daemon" });
const prepare = harnessPreparer({ events, workspaceRoot: join(scratch, "workspaces") });
const config = configSchema.parse({ version: 1, routing: { harnesses: { claude: { command: [binary] } } } });
const adapter = harnessAdapter("claude", config.routing);
const env = {
  HOME: home,
  ANTHROPIC_API_KEY: API_KEY,
  ANTHROPIC_BASE_URL: stub.url,
  DISABLE_AUTOUPDATER: "1",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  TERM: "xterm-256color",
};

try {
  await rm(home, { recursive: true, force: true });
  await mkdir(home, { recursive: true });
  await writeFile(
    join(home, ".claude.json"),
    JSON.stringify({ hasCompletedOnboarding: true, theme: "dark", customApiKeyResponses: { approved: [API_KEY.slice(-20)], rejected: [] } }),
  );
  const times: number[] = [];
  for (let run = 0; run < warmups + runs; run++) {
    const cwd = join(scratch, `work-${run}`);
    await mkdir(cwd);
    const target = `loop-bench-${run}`;
    const before = stub.requests.length;
    const started = performance.now();
    await prepare({ workItem: `local:bench#${run}`, harness: "claude", cwd, routing: config.routing, env });
    await runner.spawn({ target, cwd, argv: adapter.fresh({ sessionId: randomUUID(), prompt: `Bench run ${run}`, workItem: `local:bench#${run}` }), env });
    for (;;) {
      if (stub.requests.slice(before).some((request) => request.agentic)) break;
      if (performance.now() - started > FIRST_REQUEST_TIMEOUT_MS) throw new Error(`run ${run}: no model request within ${FIRST_REQUEST_TIMEOUT_MS} ms`);
      await delay(5);
    }
    const elapsed = performance.now() - started;
    if (run >= warmups) times.push(elapsed);
    await runner.terminate(target, { killHarness: true, graceMs: 2_000, killSession: true });
  }
  printHeading(
    `spawn → first model request, real Claude Code ${CLAUDE_CODE_VERSION} (${runs} run${runs === 1 ? "" : "s"}${warmups > 0 ? ` after ${warmups} warm-up` : ", no warm-up"})`,
  );
  printFigure({ label: "median", value: median(times), unit: "ms", budget: 10_000 });
  printFigure({ label: "p90", value: percentile(times, 90), unit: "ms" });
} finally {
  await runner.killServer().catch(() => undefined);
  await stub.close();
  await rm(scratch, { recursive: true, force: true });
}
