/**
 * Figure: a claim's decision, checks excluded — `decideClaim` then `applyClaimResult` with every
 * check passed, the pure part of `the-loop graph complete` the daemon runs under the item's lock —
 * over the built-in work-item graph. Timed per decision, as median and p95, for a run just started
 * (`startRun`) and for a long-lived one whose history is full (GRAPH_HISTORY_MAX entries: every
 * move copies the history, so this is the largest state a decision handles). Budget: 5 ms.
 * BENCH_RUNS overrides the number of timed decisions; BENCH_QUICK=1 makes 200 after a short warm-up.
 */
import { applyClaimResult, decideClaim, startRun } from "../src/graph-run/advance.js";
import { loadBuiltinGraphs } from "../src/graph/registry.js";
import type { GraphHistoryEntry, GraphState } from "../src/graph-run/state.js";
import { GRAPH_HISTORY_MAX } from "../src/graph-run/state.js";
import type { CheckResult, Graph, GraphActor } from "../src/graph/types.js";
import { QUICK, median, percentile, printFigure, printHeading, runsFromEnv } from "./lib.js";

const BUDGET_MS = 5;
const decisions = runsFromEnv(20_000, 200);
/** Untimed decisions first, so the figure is the daemon's steady state rather than code not yet optimized. */
const warmups = QUICK ? 50 : 2_000;

const agent: GraphActor = { kind: "agent", id: "3f1c2a9e-0000-4000-8000-000000000015" };
const at = new Date("2026-11-30T10:00:00.000Z");

const workItemGraph = (await loadBuiltinGraphs()).get("work-item");
if (workItemGraph === undefined) throw new Error("the built-in work-item graph did not load");
const graph: Graph = workItemGraph;

function freshRun(): GraphState {
  return startRun(graph, { ref: "local:demo#15", loopRunId: "run-15", actor: { kind: "daemon", id: "the-loop" }, at }).state;
}

/** A run whose history holds GRAPH_HISTORY_MAX entries, the most a record keeps. */
function longRun(): GraphState {
  const state = freshRun();
  const filler: GraphHistoryEntry[] = Array.from({ length: GRAPH_HISTORY_MAX - state.history.length }, (_, index) => ({
    at: at.toISOString(),
    kind: "claim-refused",
    node: state.node,
    actor: agent,
    reason: `not-current: refused claim number ${index} of a long-lived item, with a reason of a typical length`,
  }));
  return { ...state, history: [...filler, ...state.history] };
}

/** One claim of the current node, decided with every check passed; fails loudly unless the item moves. */
function claim(state: GraphState): void {
  const decided = decideClaim(graph, state, { actor: agent });
  if (decided.kind !== "check") throw new Error(`the claim was refused: ${decided.reason}`);
  const results: CheckResult[] = decided.checks.map((check) => ({ check: check.kind, passed: true, message: "ok" }));
  const input = { node: decided.node, generation: decided.generation, results, actor: agent, at };
  const outcome = applyClaimResult(graph, state, input);
  if (outcome.kind !== "applied" || !outcome.moved) throw new Error(`the claim did not move the item: ${JSON.stringify(outcome)}`);
}

function timeDecisions(state: GraphState): { first: number; times: number[] } {
  let started = performance.now();
  claim(state);
  const first = performance.now() - started;
  for (let run = 0; run < warmups; run++) claim(state);
  const times: number[] = [];
  for (let run = 0; run < decisions; run++) {
    started = performance.now();
    claim(state);
    times.push(performance.now() - started);
  }
  return { first, times };
}

const micro = (ms: number): string => `${(ms * 1000).toFixed(1)} µs`;

printHeading(`A claim's decision (decideClaim + applyClaimResult), checks excluded, work-item graph (${decisions} decisions after ${warmups} warm-up)`);
for (const [label, state] of [
  ["run just started", freshRun()],
  [`history full (${GRAPH_HISTORY_MAX} entries)`, longRun()],
] as const) {
  const { first, times } = timeDecisions(state);
  const middle = median(times);
  const p95 = percentile(times, 95);
  const note = `${micro(middle)}; first call ${first.toFixed(2)} ms`;
  printFigure({ label: `claim, ${label}: median`, value: middle, unit: "ms", budget: BUDGET_MS, note });
  printFigure({ label: `claim, ${label}: p95`, value: p95, unit: "ms", budget: BUDGET_MS, note: micro(p95) });
}
