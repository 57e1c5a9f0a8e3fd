import { describe, expect, it } from "vitest";
import type { EventRecord } from "../../src/events/reader.js";
import { describeEvent } from "../../src/why/events.js";
import { armedFromEvents, closedFromEvents, explainWhy } from "../../src/why/explain.js";
import type { ControlView, GraphView, SessionView, WhySettings, WhySituation, WhyState } from "../../src/why/explain.js";
import { ARM } from "../support/builders.js";

const REF = "local:demo#1";

const SETTINGS: WhySettings = {
  authorizedUsers: ["alice", "bob"],
  spawnOnUnmatched: "labeled",
  autoExecuteLabel: ARM,
  control: {
    enabled: true,
    requireStartCommand: true,
    keywords: {
      start: "the-loop:start-execution",
      stop: "the-loop:stop-execution",
      pause: "the-loop:pause-execution",
      resume: "the-loop:resume-execution",
    },
  },
  graph: { enabled: true, keywords: { approve: "the-loop:approve", requestChanges: "the-loop:request-changes" } },
};

let clock = 0;
/** One event of the item; build lists oldest first and reverse them, as the log reads newest first. */
function event(type: string, fields: Record<string, unknown> = {}): EventRecord {
  clock += 1;
  return { ts: `2025-03-10T12:00:${String(clock % 60).padStart(2, "0")}.000Z`, source: "daemon", event: type, level: "info", work_item: REF, ...fields };
}
const newestFirst = (...events: EventRecord[]): EventRecord[] => [...events].reverse();

const opened = (labels: string[] = []) => event("item.opened", { actor: "alice", title: "Add a health check", labels });
const labeled = (label = ARM) => event("item.labeled", { actor: "alice", label });
const dropped = (reason: string, actor = "alice", kind = "commented") => event("routing.dropped", { reason, actor, kind, delivery_id: "d" });
const rejected = (reason: string) => event("control.rejected", { command: "start", command_source: "comment", actor: "alice", reason });
const applied = (effect: string, command = "start") => event("control.command", { command, command_source: "comment", actor: "alice", effect });

const active: SessionView = { status: "active", harness: "fake", tmuxTarget: "loop-demo-1", createdAt: "2025-03-10T12:00:00.000Z" };
const paused: SessionView = { ...active, status: "paused" };
const closedSession: SessionView = { ...active, status: "closed", closedAt: "2025-03-10T13:00:00.000Z", closeReason: "cli" };
const control = (over: Partial<ControlView> = {}): ControlView => ({
  command: "start",
  source: "comment",
  actor: "alice",
  effect: "started",
  requestedAt: "2025-03-10T12:00:00.000Z",
  ...over,
});
const run = (over: Partial<GraphView> = {}): GraphView => ({ graph: "work-item", node: "implement", status: "running", ...over });

function situation(over: Partial<WhySituation> = {}): WhySituation {
  return { ref: REF, settings: SETTINGS, session: undefined, control: undefined, graph: undefined, events: [], ...over };
}

interface Row {
  readonly what: string;
  readonly given: Partial<WhySituation>;
  readonly state: WhyState;
  /** Text the summary must hold. */
  readonly summary?: RegExp;
  /** Text `next` must hold; null: nothing is needed; absent: not checked. */
  readonly next?: RegExp | null;
}

const START_AS = /comment `the-loop:start-execution` as one of: alice, bob/;

const ROWS: Row[] = [
  {
    what: "a start a full cap queued: its place and the cap (routing.limits)",
    given: {
      control: control({ effect: "start-pending" }),
      queued: { position: 2, ahead: 1, cap: "routing.limits.maxLiveSessions 2" },
      events: newestFirst(opened(), labeled(), applied("start-pending")),
    },
    state: "queued",
    summary: /^waiting for a slot: 1 ahead, cap routing\.limits\.maxLiveSessions 2 reached$/,
    next: /starts by itself when a session closes/,
  },
  {
    what: "a queued start paused: it keeps its place, and its resume releases it",
    given: {
      control: control({ command: "pause", source: "cli", actor: "op", effect: "recorded" }),
      queued: { position: 1, ahead: 0, cap: undefined },
      events: newestFirst(opened(), labeled(), applied("start-pending")),
    },
    state: "queued",
    summary: /^op paused execution \(cli\) at .*; it keeps its place in the start queue \(position 1, 0 ahead\) and is not started while paused$/,
    next: /the-loop sessions resume --work-item .*`the-loop:resume-execution` in a comment\): it then starts in its turn/,
  },
  {
    what: "a start before the item is armed: the refusal, and that arming and starting again is needed",
    given: { events: newestFirst(opened(), dropped("spawn-policy", "alice", "opened"), event("item.commented", { actor: "alice" }), rejected("not-armed")) },
    state: "not-armed",
    summary: /alice's start was refused because the item is not armed \(it lacks the label "the-loop: auto-execute"\); a refused start is not remembered/,
    next: /^label it "the-loop: auto-execute", then comment `the-loop:start-execution` as one of: alice, bob$/,
  },
  {
    what: "armed, and an unauthorized comment was the last thing",
    given: { events: newestFirst(opened(), labeled(), dropped("awaiting-start", "alice", "labeled"), dropped("unauthorized-actor", "mallory")) },
    state: "awaiting-start",
    next: START_AS,
  },
  {
    what: "a running session, nothing wrong",
    given: {
      session: active,
      control: control(),
      events: newestFirst(opened([ARM]), applied("started"), event("session.spawned", { harness: "fake", tmux_target: "loop-demo-1" })),
    },
    state: "running",
    summary: /running and healthy: a fake session runs in tmux loop-demo-1/,
    next: null,
  },
  {
    what: "a running session whose agent asked a question",
    given: { session: { ...active, awaitingInput: { question: "Which port?" } }, control: control() },
    state: "awaiting-input",
    summary: /asked: "Which port\?"/,
    next: /comment on the item as one of: alice, bob/,
  },
  {
    what: "a running session whose harness shows a dialog",
    given: { session: active, events: newestFirst(event("session.spawned"), event("session.not_ready", { blocked: true, waited_ms: 30_000 })) },
    state: "harness-blocked",
    next: /the-loop sessions attach --work-item local:demo#1/,
  },
  {
    what: "a dialog since answered: the delivery after it went through",
    given: { session: active, events: newestFirst(event("session.not_ready", { blocked: true }), event("dispatch.succeeded")) },
    state: "running",
    next: null,
  },
  {
    what: "a paused session",
    given: {
      session: paused,
      control: control({ command: "pause", effect: "paused" }),
      events: newestFirst(event("session.paused", { actor: "bob", command_source: "cli" })),
    },
    state: "paused",
    summary: /paused by bob \(cli\)/,
    next: /comment `the-loop:resume-execution` as one of: alice, bob, or run `the-loop sessions resume --work-item local:demo#1`/,
  },
  {
    what: "paused at its budget: the resume that raises the limit, as a plain one would be paused again",
    given: {
      session: paused,
      control: control({ command: "pause", source: "budget", actor: "the-loop", effect: "paused" }),
      events: newestFirst(event("session.paused", { actor: "the-loop", command_source: "budget" })),
      usage: { tokens: 1200, minutes: 4, limits: { tokens: 1000 } },
    },
    state: "paused",
    summary: /^the session reached its budget and the-loop paused it \(budget\) at 2025-03-10T12:00:00\.000Z/,
    next: /^run `the-loop sessions resume --work-item local:demo#1 --budget \+N`, which raises the limit it reached by N/,
  },
  {
    what: "paused at its budget, then resumed and paused by a person: the person's pause",
    given: {
      session: paused,
      control: control({ command: "pause", source: "cli", actor: "bob", effect: "paused" }),
      events: newestFirst(event("session.paused", { actor: "bob", command_source: "cli" })),
    },
    state: "paused",
    summary: /paused by bob \(cli\)/,
    next: /sessions resume --work-item local:demo#1`$/,
  },
  {
    what: "at a graph gate",
    given: { session: active, graph: run({ node: "review", status: "waiting", reasonCode: "human-gate", reason: "approve or request changes" }) },
    state: "at-gate",
    summary: /waits at the gate review/,
    next: /^comment `the-loop:approve` or `the-loop:request-changes` as one of: alice, bob$/,
  },
  {
    what: "a graph run blocked, with a loop hook's denial",
    given: {
      session: active,
      graph: run({ status: "blocked", reasonCode: "hook_denied", reason: "denied", denial: { hook: "policy", point: "loop.gate", reason: "no budget" } }),
    },
    state: "graph-blocked",
    summary: /the loop hook policy denied it at loop\.gate: no budget/,
    next: /the-loop graph force local:demo#1 --to NODE --reason TEXT/,
  },
  {
    what: "a gate while the graph is off: not a gate",
    given: { settings: { ...SETTINGS, graph: { ...SETTINGS.graph, enabled: false } }, session: active, graph: run({ status: "waiting" }) },
    state: "running",
    next: null,
  },
  {
    what: "stopped by a command",
    given: { session: closedSession, control: control({ command: "stop", effect: "stopped" }), events: newestFirst(opened([ARM]), applied("stopped", "stop")) },
    state: "stopped",
    summary: /alice stopped execution \(comment\)/,
    next: START_AS,
  },
  {
    what: "stopped, and the label removed since: arm it first",
    given: {
      control: control({ command: "stop", effect: "recorded" }),
      events: newestFirst(opened([ARM]), event("item.unlabeled", { actor: "bob", label: ARM })),
    },
    state: "stopped",
    next: /^label it "the-loop: auto-execute", then comment/,
  },
  {
    what: "a start a hook refused",
    given: {
      control: control({ source: "hook", actor: "policy", effect: "refused", command: "stop" }),
      events: newestFirst(opened([ARM]), event("hooks.refused", { hook: "policy", point: "work_item_start", reason: "no" })),
    },
    state: "hook-refused",
    next: START_AS,
  },
  {
    what: "a start whose spawn keeps failing",
    given: {
      control: control({ effect: "start-pending" }),
      events: newestFirst(opened([ARM]), applied("start-pending"), event("session.spawn_failed", { harness: "fake", error: "tmux: no server" })),
    },
    state: "start-pending",
    summary: /could not be spawned: tmux: no server/,
    next: /the-loop sessions start --work-item local:demo#1/,
  },
  {
    what: "a standing start, spawn under way",
    given: { control: control(), events: newestFirst(opened([ARM]), applied("started")) },
    state: "starting",
    next: null,
  },
  {
    what: "a closed item",
    given: { session: { ...closedSession, closeReason: "item-closed" }, events: newestFirst(opened([ARM]), event("item.closed", { actor: "alice" })) },
    state: "closed",
    next: /^reopen the item, then comment `the-loop:start-execution`/,
  },
  {
    what: "armed with the start gate off: the next event starts it",
    given: { settings: { ...SETTINGS, control: { ...SETTINGS.control, requireStartCommand: false } }, events: newestFirst(opened(), labeled()) },
    state: "armed",
    next: /comment on it as one of: alice, bob/,
  },
  {
    what: "not armed with the start gate off: the label alone starts it",
    given: { settings: { ...SETTINGS, control: { ...SETTINGS.control, requireStartCommand: false } }, events: newestFirst(opened()) },
    state: "not-armed",
    next: /^label it "the-loop: auto-execute": its next event then starts a session$/,
  },
  {
    what: "spawnOnUnmatched never: no item is armed",
    given: { settings: { ...SETTINGS, spawnOnUnmatched: "never" }, events: newestFirst(opened([ARM])) },
    state: "not-armed",
    next: /^set routing.spawnOnUnmatched to labeled/,
  },
  {
    what: "spawnOnUnmatched always: armed without a label",
    given: { settings: { ...SETTINGS, spawnOnUnmatched: "always" } },
    state: "awaiting-start",
    next: START_AS,
  },
  {
    what: "nothing seen of the item",
    given: {},
    state: "unseen",
    next: /^label it "the-loop: auto-execute", then comment `the-loop:start-execution`/,
  },
  {
    what: "no one authorized",
    given: { settings: { ...SETTINGS, authorizedUsers: [] }, session: active },
    state: "fail-closed",
    next: /routing.authorizedUsers/,
  },
  {
    what: "a damaged record",
    given: { session: active, control: { damaged: "control record x.json is damaged: not JSON; delete it" } },
    state: "damaged-record",
    summary: /control record cannot be read/,
    next: /delete it/,
  },
  {
    what: "the daemon not running: start it first",
    given: { daemonRunning: false, events: newestFirst(opened(), labeled()) },
    state: "awaiting-start",
    next: /^start the daemon \(`the-loop start`\), then comment `the-loop:start-execution`/,
  },
  {
    what: "the daemon not running under a healthy session",
    given: { daemonRunning: false, session: active },
    state: "running",
    next: /^start the daemon \(`the-loop start`\): until it runs, nothing reads the item's events$/,
  },
  {
    what: "control off: only the CLI starts",
    given: { settings: { ...SETTINGS, control: { ...SETTINGS.control, enabled: false } }, session: paused },
    state: "paused",
    next: /^run `the-loop sessions resume --work-item local:demo#1`$/,
  },
];

/**
 * Every state a graph run, a control record and a session can be in, and the headline each
 * gives: the worst condition leads (failed, blocked, a held answer, waiting for a person,
 * queued, running, done), with the one step that moves it.
 */
const HELD = { author: "alice", decision: "approved", heldAt: "2025-03-10T12:05:00.000Z", reason: "GitHub answered 502" };
const DENIED = { hook: "budget", point: "loop.generation.pre", reason: "over budget" };
const failedByHook = run({
  status: "failed",
  reasonCode: "hook_denied",
  reason: 'the loop hook "budget" denied at loop.generation.pre: over budget',
  denial: DENIED,
});

const STATES: Row[] = [
  {
    what: "running: the agent works at an agent node",
    given: { session: active, control: control(), graph: run() },
    state: "running",
    summary: /^running and healthy: a fake session runs in tmux loop-demo-1 since .*, at node implement of the work-item graph \(running\)/,
    next: null,
  },
  {
    what: "waiting at a gate",
    given: {
      session: active,
      control: control(),
      graph: run({ node: "review", status: "waiting", reasonCode: "human-gate", reason: "approve or request changes" }),
    },
    state: "at-gate",
    summary: /^the work-item graph run waits at the gate review \(human-gate: approve or request changes\)$/,
    next: /^comment `the-loop:approve` or `the-loop:request-changes` as one of: alice, bob$/,
  },
  {
    what: "waiting at an edge for a place at its next node (routing.limits.perNode)",
    given: {
      session: active,
      control: control(),
      graph: run({
        status: "waiting",
        reasonCode: "node-full",
        reason: "waiting at edge implement → review: node review full, cap routing.limits.perNode.review = 1",
      }),
      heldAtEdge: "waiting at edge implement → review: node review full, cap routing.limits.perNode.review = 1, 2 ahead",
    },
    state: "waiting-at-edge",
    summary: /^the work-item graph run is waiting at edge implement → review: node review full, cap routing\.limits\.perNode\.review = 1, 2 ahead$/,
    next: /^nothing: the daemon moves it within a second of a place freeing, oldest first \(`the-loop graph force local:demo#1 --to NODE --reason TEXT` moves it now\)$/,
  },
  {
    what: "waiting at a gate with an answer held",
    given: { session: active, control: control(), graph: run({ node: "review", status: "waiting" }), held: [HELD] },
    state: "answer-held",
    summary: /alice's answer \(approved\) is held since 2025-03-10T12:05:00.000Z: the login the-loop posts as is unknown \(GitHub answered 502\)/,
    next: /integrations\.github\.selfLogin/,
  },
  {
    what: "a held answer names the fix the daemon gave",
    given: {
      graph: run({ node: "review", status: "waiting" }),
      held: [HELD, { ...HELD, author: "bob" }],
      events: [event("graph.self_login_unknown", { fix: "set integrations.github.selfLogin to octo-bot" })],
    },
    state: "answer-held",
    summary: /2 answers \(by alice, bob\) are held/,
    next: /^set integrations.github.selfLogin to octo-bot$/,
  },
  {
    what: "blocked by a gate (a check failed past its attempts)",
    given: { session: active, control: control(), graph: run({ status: "blocked", reasonCode: "max-attempts", reason: "the check tests failed 3 times" }) },
    state: "graph-blocked",
    summary: /^the work-item graph run is blocked at node implement \(max-attempts: the check tests failed 3 times\)$/,
    next: /^an authorized gate answer, or `the-loop graph force local:demo#1 --to NODE --reason TEXT`/,
  },
  {
    what: "blocked by a loop hook at the gate: only a force moves it",
    given: {
      session: active,
      graph: run({
        node: "review",
        status: "blocked",
        reasonCode: "hook_denied",
        reason: "denied",
        denial: { hook: "policy", point: "loop.gate.pre", reason: "no" },
      }),
    },
    state: "graph-blocked",
    summary: /the loop hook policy denied it at loop\.gate\.pre: no/,
    next: /^`the-loop graph force local:demo#1 --to NODE --reason TEXT`/,
  },
  {
    what: "failed by a hook denial while its agent still runs: the failure leads, not the agent",
    given: { session: active, control: control(), graph: failedByHook, events: newestFirst(event("session.spawned"), event("dispatch.succeeded")) },
    state: "graph-failed",
    summary:
      /^the work-item graph run ended failed at node implement \(hook_denied: .*\); the loop hook budget denied it at loop\.generation\.pre: over budget; its fake agent still runs in tmux loop-demo-1$/,
    next: /^deal with what the loop hook budget objects to, then run `the-loop sessions stop --work-item local:demo#1`, then comment `the-loop:start-execution`.* \(a start begins a new run\)$/,
  },
  {
    what: "failed by a hook denial, its session gone",
    given: { session: closedSession, control: control({ clearedAt: "2025-03-10T13:00:00.000Z" }), graph: failedByHook, events: newestFirst(opened([ARM])) },
    state: "graph-failed",
    next: /^deal with what the loop hook budget objects to, then comment `the-loop:start-execution` as one of: alice, bob, or run `the-loop sessions start --work-item local:demo#1` \(a start begins a new run\)$/,
  },
  {
    what: "failed to start: the supervision gave its harness up, and no agent runs",
    given: {
      session: {
        ...closedSession,
        status: "failed",
        closeReason: "failed-to-start",
        failureReason: "fake exited with status 1 three times in a row (maxRestarts: 3)",
      },
      control: control({ clearedAt: "2025-03-10T13:00:00.000Z" }),
      graph: run(),
      events: newestFirst(opened([ARM]), event("session.failed_to_start")),
    },
    state: "failed-to-start",
    summary: /^its fake session failed to start: fake exited with status 1 three times in a row \(maxRestarts: 3\); no agent runs$/,
    next: /^fix the cause \(its tmux session loop-demo-1 is kept: `the-loop sessions attach --work-item local:demo#1` shows it\), then start it again: comment `the-loop:start-execution` as one of: alice, bob, or run `the-loop sessions start --work-item local:demo#1`$/,
  },
  {
    what: "failed to start, and a new start already stands: the new start is the news",
    given: {
      session: { ...closedSession, status: "failed", closeReason: "failed-to-start", failureReason: "gone" },
      control: control({ requestedAt: "2025-03-10T14:00:00.000Z" }),
      events: newestFirst(opened([ARM]), applied("started")),
    },
    state: "starting",
    next: null,
  },
  {
    what: "failed, and a new start already stands: the next run is queued",
    given: { control: control({ requestedAt: "2025-03-10T14:00:00.000Z" }), graph: failedByHook, events: newestFirst(opened([ARM]), applied("started")) },
    state: "starting",
    next: null,
  },
  {
    what: "stalled: an ending that failed",
    given: { session: active, graph: run({ status: "stalled", reasonCode: "no-progress", reason: "nothing for 60 minutes" }) },
    state: "graph-failed",
    summary: /ended stalled at node implement \(no-progress: nothing for 60 minutes\)/,
    next: /^deal with what ended it, then run `the-loop sessions stop/,
  },
  {
    what: "exhausted: an ending that failed",
    given: { graph: run({ status: "exhausted", reasonCode: "max-generations", reason: "3 generations" }), events: newestFirst(opened([ARM])) },
    state: "graph-failed",
  },
  {
    what: "done while the agent still runs",
    given: { session: active, control: control(), graph: run({ node: "done", status: "done" }) },
    state: "graph-done",
    summary: /^the work-item graph run is done at node done; its fake agent still runs in tmux loop-demo-1$/,
    next: /^close the session when you no longer need it: `the-loop sessions close --work-item local:demo#1`$/,
  },
  {
    what: "done, the session closed",
    given: {
      session: closedSession,
      control: control({ clearedAt: "2025-03-10T13:00:00.000Z" }),
      graph: run({ node: "done", status: "done" }),
      events: newestFirst(opened([ARM])),
    },
    state: "graph-done",
    summary: /is done at node done; no session runs/,
    next: null,
  },
  {
    what: "done while its agent asks something: the question waits for a person",
    given: { session: { ...active, awaitingInput: { question: "Anything else?" } }, graph: run({ node: "done", status: "done" }) },
    state: "awaiting-input",
  },
  {
    what: "canceled while a session is still open",
    given: { session: active, graph: run({ status: "canceled", reasonCode: "stopped", reason: "stopped by alice" }) },
    state: "graph-canceled",
    next: /the-loop sessions close --work-item local:demo#1/,
  },
  {
    what: "canceled by a stop: the stop says what happens next",
    given: {
      session: closedSession,
      control: control({ command: "stop", effect: "stopped" }),
      graph: run({ status: "canceled" }),
      events: newestFirst(opened([ARM])),
    },
    state: "stopped",
    summary: /so a start begins a new run|nothing starts until the next start/,
    next: START_AS,
  },
  {
    what: "paused: the session is paused at an agent node",
    given: { session: paused, control: control({ command: "pause", effect: "paused" }), graph: run() },
    state: "paused",
    next: /the-loop:resume-execution/,
  },
  {
    what: "paused while the run failed: the failure leads",
    given: { session: paused, control: control({ command: "pause", effect: "paused" }), graph: failedByHook },
    state: "graph-failed",
    summary: /its fake session is still open \(paused\)/,
  },
  {
    what: "stopped: no session, the stop stands",
    given: { session: closedSession, control: control({ command: "stop", effect: "stopped" }), graph: run(), events: newestFirst(opened([ARM])) },
    state: "stopped",
    next: START_AS,
  },
  {
    what: "queued: a start stands and its session is being started",
    given: { control: control(), events: newestFirst(opened([ARM]), applied("started")) },
    state: "starting",
    next: null,
  },
  {
    what: "queued: a start stands whose spawn failed",
    given: {
      control: control({ effect: "start-pending" }),
      graph: run(),
      events: newestFirst(opened([ARM]), event("session.spawn_failed", { error: "no tmux" })),
    },
    state: "start-pending",
    next: /the-loop sessions start --work-item local:demo#1/,
  },
  {
    what: "blocked outranks a harness dialog",
    given: {
      session: active,
      graph: run({ status: "blocked", reason: "x", reasonCode: "check-failed" }),
      events: [event("session.not_ready", { blocked: true })],
    },
    state: "graph-blocked",
  },
  {
    what: "a harness dialog outranks a gate",
    given: { session: active, graph: run({ status: "waiting", node: "review" }), events: [event("session.not_ready", { blocked: true })] },
    state: "harness-blocked",
  },
];

describe("the headline, for every state of the graph, the control and the session", () => {
  it.each(STATES)("$what", ({ given, state, summary, next }) => {
    const verdict = explainWhy(situation(given));
    expect(verdict.state).toBe(state);
    if (summary) expect(verdict.summary).toMatch(summary);
    if (next === null) expect(verdict.next).toBeUndefined();
    else if (next !== undefined) expect(verdict.next).toMatch(next);
    // No headline is ever about the-loop's own echo.
    expect(`${verdict.summary} ${verdict.next ?? ""}`).not.toMatch(/the-loop's labeled|the-loop is not authorized/);
  });

  it("a damaged held-answers record says so", () => {
    const verdict = explainWhy(situation({ graph: run({ status: "waiting" }), held: { damaged: "held gate answers record x.json is damaged; delete it" } }));
    expect(verdict).toMatchObject({ state: "damaged-record", next: /delete it/ });
  });

  it("an echo of the-loop's own label change is no refusal", () => {
    const echo = event("routing.dropped", { reason: "self-echo", actor: "the-loop", kind: "labeled", delivery_id: "poll-x" });
    const verdict = explainWhy(situation({ session: active, graph: run(), events: newestFirst(event("session.spawned"), echo) }));
    expect(verdict.lastRefusal).toBeUndefined();
  });
});

describe("explainWhy", () => {
  it.each(ROWS)("$what", ({ given, state, summary, next }) => {
    const verdict = explainWhy(situation(given));
    expect(verdict.state).toBe(state);
    if (summary) expect(verdict.summary).toMatch(summary);
    if (next === null) expect(verdict.next).toBeUndefined();
    else if (next !== undefined) expect(verdict.next).toMatch(next);
  });

  it("names the newest refusal when nothing good came after it", () => {
    const unauthorized = explainWhy(situation({ events: newestFirst(opened([ARM]), dropped("unauthorized-actor", "mallory")) }));
    expect(unauthorized.lastRefusal).toBe("dropped mallory's comment: mallory is not authorized (authorized: alice, bob)");
    const since = explainWhy(situation({ session: active, events: newestFirst(dropped("unauthorized-actor", "mallory"), event("dispatch.succeeded")) }));
    expect(since.lastRefusal).toBeUndefined();
    // the-loop's own announcement coming back is no refusal.
    const own = explainWhy(situation({ session: active, events: newestFirst(event("dispatch.succeeded"), dropped("self-authored", "the-loop")) }));
    expect(own.lastRefusal).toBeUndefined();
  });
});

describe("what the events say about the item", () => {
  it.each([
    ["opened without the label", [opened()], false],
    ["opened with it", [opened([ARM.toUpperCase()])], true],
    ["labeled", [opened(), labeled()], true],
    ["another label", [opened(), labeled("bug")], false],
    ["unlabeled", [opened([ARM]), event("item.unlabeled", { label: ARM })], false],
    ["a start refused as not armed", [opened([ARM]), rejected("not-armed")], false],
    ["held for a start", [dropped("awaiting-start")], true],
    ["dropped by the spawn policy", [dropped("spawn-policy")], false],
    ["nothing telling", [event("item.commented")], undefined],
  ] as const)("armed: %s", (_what, events, armed) => {
    expect(armedFromEvents(newestFirst(...events), SETTINGS)).toBe(armed);
  });

  it.each([
    ["closed", [opened(), event("item.closed")], true],
    ["reopened", [event("item.closed"), event("item.reopened")], false],
    ["a drop as closed (a GitHub item)", [dropped("item-closed")], true],
    ["its session closed with it", [event("session.closed", { reason: "item-closed" })], true],
    ["nothing telling", [event("item.commented")], undefined],
  ] as const)("closed: %s", (_what, events, closed) => {
    expect(closedFromEvents(newestFirst(...events))).toBe(closed);
  });
});

describe("describeEvent", () => {
  it.each([
    [dropped("unauthorized-actor", "mallory"), "dropped mallory's comment: mallory is not authorized (authorized: alice, bob)"],
    [dropped("self-authored", "alice"), "dropped alice's comment: the-loop wrote it itself (it carries the loop-prevention marker)"],
    [dropped("self-echo", "the-loop", "labeled"), "ignored the-loop's labeled event: the-loop's own doing come back"],
    [dropped("spawn-policy", "alice", "opened"), 'dropped alice\'s opening: the item is not armed (it lacks the label "the-loop: auto-execute")'],
    [dropped("awaiting-start", "alice", "labeled"), "held alice's labeled event: the item is armed and waits for a start (`the-loop:start-execution`)"],
    [event("dispatch.dropped", { reason: "session-paused" }), "recorded an event and dropped it: the session is paused"],
    [
      rejected("not-armed"),
      'refused alice\'s start (comment): the item is not armed (it lacks the label "the-loop: auto-execute"); a refused start is not remembered, so arm it and start again',
    ],
    [applied("started"), "alice's start (comment) was applied: a session started"],
    [event("session.spawn_failed", { harness: "claude", error: "no tmux" }), "could not start the claude session: no tmux"],
    [
      event("hooks.refused", { hook: "policy", point: "work_item_start", reason: "over budget", comment_posted: true }),
      "the hook policy refused at work_item_start: over budget; the item was disarmed and told so",
    ],
    [labeled(), 'alice added the label "the-loop: auto-execute", which arms it'],
    [event("graph.waiting", { node: "review", reason: "approve or request changes" }), "reached the gate review: approve or request changes"],
    [
      event("graph.stalled", { node: "implement", reason_code: "no-progress", reason: "nothing for 60 minutes" }),
      "the graph run ended stalled at node implement (no-progress): nothing for 60 minutes",
    ],
    // A type with no sentence of its own still shows everything it carries.
    [event("loop.gate.denied", { hook: "policy", reason: "no" }), "loop gate denied hook=policy reason=no"],
  ])("%#: %s", (record, sentence) => {
    expect(describeEvent(record, SETTINGS)).toBe(sentence);
  });
});
