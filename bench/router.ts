/**
 * Figure: the router — route() deciding over a realistic mix of events (comments delivered to
 * live sessions, comments from people outside the allowlist, armed items with no session that
 * spawn) against an in-memory registry view, as the median time per decision over batches.
 * Budget: ≤ 3 µs median per decision; the baseline is the earlier Python router's 6.6 µs.
 * BENCH_RUNS overrides the number of batches; BENCH_QUICK=1 makes 5 over 200 items.
 */
import type { InboundEvent } from "../src/routing/inbound.js";
import { DeliveryLru } from "../src/routing/dedupe.js";
import { DEFAULT_CONTROL_KEYWORDS } from "../src/config/schema.js";
import { policyOf, route } from "../src/routing/router.js";
import type { ControlView, Decision, RegistryView, SessionView } from "../src/routing/router.js";
import type { WorkItem } from "../src/workitem/index.js";
import { median, percentile, printFigure, printHeading, runsFromEnv, scaled } from "./lib.js";

const PYTHON_ROUTER_US = 6.6;
const BUDGET_US = 3;
const ITEMS = scaled(2_000, 200);
const LIVE_SESSIONS = scaled(1_000, 100);
const EVENTS = scaled(10_000, 2_000);
const BATCH = 1_000;
const batches = runsFromEnv(500, 5);
const WARMUP_BATCHES = scaled(50, 5);

const LABEL = "the-loop: auto-execute";
const policy = policyOf({
  authorizedUsers: ["alice", "bob", "carol", "dependabot[bot]"],
  spawnOnUnmatched: "labeled",
  autoExecuteLabel: LABEL,
  // The defaults: every comment is scanned for the control keywords, as in a real daemon.
  control: { enabled: true, requireStartCommand: true, keywords: DEFAULT_CONTROL_KEYWORDS },
});

const items: WorkItem[] = Array.from({ length: ITEMS }, (_, i) => ({
  ref: `github:octo/repo#${i + 1}`,
  tracker: "github",
  host: "github.com",
  repository: "octo/repo",
  number: i + 1,
  kind: i % 4 === 0 ? "pull_request" : "issue",
  url: `https://github.com/octo/repo/issues/${i + 1}`,
  id: `I_kwDO${i}`,
}));

// Sessions on the first half of the items, each remembering a full window of deliveries, as a
// long-lived record does.
const sessions = new Map<string, SessionView>();
for (const item of items.slice(0, LIVE_SESSIONS)) {
  sessions.set(item.ref, {
    status: item.number % 10 === 0 ? "paused" : "active",
    recentDeliveries: Array.from({ length: 50 }, (_, d) => `gh-${item.number}-${d}`),
  });
}
// An honoured start on every item without a session, so "spawn" events pass the start gate.
const started: ControlView = { command: "start", source: "comment", actor: "alice" };
const registry: RegistryView = { sessionFor: (ref) => sessions.get(ref), controlFor: (ref) => (sessions.has(ref) ? undefined : started) };

const memory = new DeliveryLru(1_024);
for (let i = 0; i < 1_024; i++) memory.add(`gh-old-${i}`);

type Mix = "deliver" | "unauthorized" | "spawn";

const COMMENT = "Looks good, but please also cover the error path and add a test for the empty case.";

/**
 * Events are built as whole object literals, the way a normalizer returns them. Built by spreading
 * a shared base object (`{ ...base, kind, … }`) instead, the same events made route() 5–10× slower
 * on Node 20, the time all in route()'s reads of the event's fields (seen with --cpu-prof).
 */
function eventFor(mix: Mix, i: number): InboundEvent {
  switch (mix) {
    case "deliver": {
      const item = items[i % LIVE_SESSIONS] as WorkItem;
      return {
        source: "gh-webhook",
        deliveryId: `gh-new-${i}`,
        kind: "commented",
        trackerEvent: "issue_comment",
        workItems: [item],
        actor: "alice",
        body: COMMENT,
        labels: ["bug", LABEL],
        itemState: "open",
        occurredAt: "2025-01-01T00:00:00.000Z",
        excerpt: { comment: COMMENT },
      };
    }
    case "unauthorized": {
      const item = items[(i * 7) % ITEMS] as WorkItem;
      return {
        source: "gh-webhook",
        deliveryId: `gh-new-${i}`,
        kind: "commented",
        trackerEvent: "issue_comment",
        workItems: [item],
        actor: "mallory",
        body: COMMENT,
        labels: ["bug"],
        itemState: "open",
        occurredAt: "2025-01-01T00:00:00.000Z",
        excerpt: { comment: COMMENT },
      };
    }
    case "spawn": {
      const item = items[LIVE_SESSIONS + (i % (ITEMS - LIVE_SESSIONS))] as WorkItem;
      return {
        source: "gh-webhook",
        deliveryId: `gh-new-${i}`,
        kind: "labeled",
        trackerEvent: "issues",
        workItems: [item],
        actor: "bob",
        body: null,
        labels: ["enhancement", "The-Loop: Auto-Execute"],
        label: LABEL,
        itemState: "open",
        occurredAt: "2025-01-01T00:00:00.000Z",
        excerpt: { label: LABEL },
      };
    }
  }
}

/** Mostly comments on running sessions, some noise from outsiders, a few new sessions. */
function mixed(i: number): Mix {
  const slot = i % 20;
  return slot < 13 ? "deliver" : slot < 17 ? "unauthorized" : "spawn";
}

let sink = 0;
function consume(decision: Decision): void {
  sink += decision.action.length;
}

function measure(events: readonly InboundEvent[]): { medianUs: number; p90Us: number } {
  const perDecision: number[] = [];
  let offset = 0;
  for (let b = -WARMUP_BATCHES; b < batches; b++) {
    const started = performance.now();
    for (let i = 0; i < BATCH; i++) consume(route(events[(offset + i) % events.length] as InboundEvent, policy, registry, memory));
    const elapsed = performance.now() - started;
    offset = (offset + BATCH) % events.length;
    // The first batches warm the JIT up and are not counted.
    if (b >= 0) perDecision.push((elapsed * 1_000) / BATCH);
  }
  return { medianUs: median(perDecision), p90Us: percentile(perDecision, 90) };
}

function expectActions(events: readonly InboundEvent[], allowed: readonly Decision["action"][]): void {
  for (const event of events) {
    const decision = route(event, policy, registry, memory);
    if (!allowed.includes(decision.action)) throw new Error(`unexpected decision for ${event.deliveryId}: ${JSON.stringify(decision)}`);
  }
}

const workloads: [string, InboundEvent[], Decision["action"][]][] = [
  ["route(): mix 65/20/15 deliver/unauth/spawn", Array.from({ length: EVENTS }, (_, i) => eventFor(mixed(i), i)), ["deliver", "drop", "spawn"]],
  ["route(): deliver to a live session", Array.from({ length: EVENTS }, (_, i) => eventFor("deliver", i)), ["deliver"]],
  ["route(): drop an unauthorized actor", Array.from({ length: EVENTS }, (_, i) => eventFor("unauthorized", i)), ["drop"]],
  ["route(): spawn an armed item", Array.from({ length: EVENTS }, (_, i) => eventFor("spawn", i)), ["spawn"]],
];

printHeading(`Router (median of ${batches} batches of ${BATCH} decisions; ${LIVE_SESSIONS} live sessions, ${ITEMS} work items)`);
for (const [label, events, allowed] of workloads) {
  expectActions(events, allowed);
  const figure = measure(events);
  printFigure({
    label,
    value: figure.medianUs,
    unit: "µs",
    baseline: PYTHON_ROUTER_US,
    budget: BUDGET_US,
    note: `${(figure.medianUs * 1_000).toFixed(0)} ns, p90 ${figure.p90Us.toFixed(2)} µs, ${Math.round(1 / (figure.medianUs / 1e6)).toLocaleString("en-US")} decisions/s`,
  });
}
// Reading the sink keeps the decisions observable, so the optimizer cannot drop the calls.
if (sink === 0) throw new Error("no decisions were made");
console.log(`  (baseline: the earlier Python router, ${PYTHON_ROUTER_US} µs median per decision)`);
