import type { EventRecord } from "../events/reader.js";
import { armingHow, authorizedList, describeEvent, isArmingLabel } from "./events.js";
import type { WhySettings } from "./events.js";

/**
 * `the-loop why`'s verdict: where a work item stands and the one thing that would move it, as a
 * pure function of its records (session, control, graph), its recent events and the settings.
 * Nothing here is remembered anywhere else: the records say what holds now, the events say how
 * it came to be and fill in what no record keeps (whether the item is armed, whether it is
 * closed, the last spawn failure).
 */

export type { WhySettings } from "./events.js";

/** A record that exists but cannot be read; `message` says what is wrong and how to fix it. */
export interface DamagedRecord {
  readonly damaged: string;
}

export interface SessionView {
  readonly status: string;
  readonly harness: string;
  readonly tmuxTarget: string;
  readonly createdAt: string;
  readonly closedAt?: string;
  readonly closeReason?: string;
  /** Why a supervised harness was given up (status `failed`, docs/fleet.md#supervision). */
  readonly failureReason?: string;
  readonly awaitingInput?: { readonly question: string };
}

export interface ControlView {
  readonly command: string;
  readonly source: string;
  readonly actor: string;
  readonly effect: string;
  readonly requestedAt: string;
  readonly clearedAt?: string;
}

export interface GraphView {
  readonly graph: string;
  readonly node: string;
  readonly status: string;
  readonly reasonCode?: string;
  readonly reason?: string;
  /** A loop hook's denial of the run's generation or gate. */
  readonly denial?: { readonly hook: string; readonly point: string; readonly reason: string };
}

/** A gate answer held while the login the-loop posts as is unknown (src/graph-run/held.ts). */
export interface HeldAnswerView {
  readonly author: string;
  readonly decision: string;
  readonly heldAt: string;
  readonly reason: string;
}

export interface WhySituation {
  readonly ref: string;
  readonly settings: WhySettings;
  readonly session: SessionView | DamagedRecord | undefined;
  readonly control: ControlView | DamagedRecord | undefined;
  readonly graph: GraphView | DamagedRecord | undefined;
  /** The item's held gate answers, oldest first; absent or empty when none is held. */
  readonly held?: readonly HeldAnswerView[] | DamagedRecord;
  /** The item's recent events, newest first. */
  readonly events: readonly EventRecord[];
  /** Whether the daemon's poller runs; undefined when that is not known. */
  readonly daemonRunning?: boolean;
  /** The item's place in the start queue (routing.limits, docs/fleet.md), when it waits there. */
  readonly queued?: { readonly position: number; readonly ahead: number; readonly cap: string | undefined };
  /**
   * The edge its run waits at (routing.limits.perNode), in words: `waiting at edge A → B: node B
   * full, cap routing.limits.perNode.B = N, K ahead` (src/graph-run/node-caps.ts heldText).
   */
  readonly heldAtEdge?: string;
  /** A live session's usage against routing.budget (docs/fleet.md#budgets); absent without a live session. */
  readonly usage?: UsageView;
}

/** A live session's usage so far, as the budget's one builder gives it (src/budget/summary.ts). */
export interface UsageView {
  /** null when the harness's tokens cannot be read (`unreadable` says why): never 0. */
  readonly tokens: number | null;
  readonly unreadable?: string;
  readonly minutes: number;
  readonly limits: { readonly tokens?: number; readonly minutes?: number };
}

export type WhyState =
  | "fail-closed"
  | "damaged-record"
  | "running"
  | "awaiting-input"
  | "harness-blocked"
  | "paused"
  | "at-gate"
  | "graph-blocked"
  | "graph-failed"
  | "graph-done"
  | "graph-canceled"
  | "failed-to-start"
  | "answer-held"
  | "waiting-at-edge"
  | "closed"
  | "stopped"
  | "hook-refused"
  | "start-pending"
  | "queued"
  | "starting"
  | "not-armed"
  | "awaiting-start"
  | "armed"
  | "unseen";

export interface WhyVerdict {
  readonly state: WhyState;
  /** Where the item stands, in a sentence. */
  readonly summary: string;
  /** The one thing that would move it; undefined when nothing is needed. */
  readonly next?: string;
  /** The newest refusal, drop or failure, when nothing good happened since. */
  readonly lastRefusal?: string;
}

const isDamaged = (value: object | undefined): value is DamagedRecord => value !== undefined && "damaged" in value;

function field(record: EventRecord, key: string): string | undefined {
  const value = record[key];
  return typeof value === "string" ? value : undefined;
}

/** The newest event `judge` has an opinion on, and that opinion. */
function newest<T>(events: readonly EventRecord[], judge: (record: EventRecord) => T | undefined): T | undefined {
  for (const record of events) {
    const verdict = judge(record);
    if (verdict !== undefined) return verdict;
  }
  return undefined;
}

/** Whether the spawn policy arms the item, from the newest event that tells; undefined when none does. */
export function armedFromEvents(events: readonly EventRecord[], settings: WhySettings): boolean | undefined {
  if (settings.spawnOnUnmatched === "never") return false;
  if (settings.spawnOnUnmatched === "always") return true;
  return newest(events, (record): boolean | undefined => {
    switch (record.event) {
      case "item.opened": {
        const labels = record.labels;
        return Array.isArray(labels) && labels.some((label) => typeof label === "string" && isArmingLabel(label, settings));
      }
      case "item.labeled":
        return isArmingLabel(field(record, "label"), settings) ? true : undefined;
      case "item.unlabeled":
        return isArmingLabel(field(record, "label"), settings) ? false : undefined;
      case "routing.dropped": {
        const reason = field(record, "reason");
        if (reason === "spawn-policy") return false;
        return reason === "awaiting-start" || reason === "execution-stopped" ? true : undefined;
      }
      case "control.rejected":
        return field(record, "reason") === "not-armed" ? false : undefined;
      case "control.command":
        return field(record, "effect") === "started" || field(record, "effect") === "start-pending" ? true : undefined;
      case "session.spawned":
        return true;
      default:
        return undefined;
    }
  });
}

/** Whether the item is closed, from the newest event that tells; undefined when none does. */
export function closedFromEvents(events: readonly EventRecord[]): boolean | undefined {
  return newest(events, (record): boolean | undefined => {
    switch (record.event) {
      case "item.closed":
        return true;
      case "item.reopened":
      case "item.opened":
      case "session.spawned":
        return false;
      case "session.closed":
        return field(record, "reason") === "item-closed" ? true : undefined;
      case "routing.dropped":
        if (field(record, "reason") === "item-closed") return true;
        return field(record, "kind") === "reopened" ? false : undefined;
      case "control.rejected":
        return field(record, "reason") === "item-closed" ? true : undefined;
      default:
        return undefined;
    }
  });
}

const GOOD_NEWS = new Set([
  "session.spawned",
  "dispatch.succeeded",
  "control.command",
  "session.resumed",
  "graph.advanced",
  "graph.gate_decided",
  "graph.completed",
]);
const BAD_NEWS = new Set([
  "routing.dropped",
  "control.rejected",
  "control.ambiguous",
  "hooks.refused",
  "hooks.failed",
  "dispatch.failed",
  "session.spawn_failed",
  "session.not_ready",
  "workspace.failed",
  "graph.gate_refused",
  "graph.gate_ambiguous",
  "graph.gate_answer_held",
  "graph.gate_answer_refused",
  "graph.self_login_unknown",
  "graph.claim_refused",
  "graph.assignment_failed",
  "graph.effect_failed",
]);

/** Drops that are the-loop working as meant (its own comments, a redelivery), never what someone asks about. */
const ROUTINE_DROPS = new Set(["self-echo", "self-authored", "duplicate-delivery"]);

function isRefusal(record: EventRecord): boolean {
  if (record.event === "routing.dropped") return !ROUTINE_DROPS.has(field(record, "reason") ?? "");
  return BAD_NEWS.has(record.event);
}

/** The newest refusal or failure with nothing good after it: what an operator most likely asks about. */
function lastRefusalOf(events: readonly EventRecord[]): EventRecord | undefined {
  return newest(events, (record) => (GOOD_NEWS.has(record.event) ? null : isRefusal(record) ? record : undefined)) ?? undefined;
}

/** The error of the newest spawn failure since the newest start, if it is newer than any spawn. */
function spawnFailureOf(events: readonly EventRecord[]): string | undefined {
  return (
    newest(events, (record) => {
      if (record.event === "session.spawned" || record.event === "control.command") return null;
      if (record.event === "session.spawn_failed" || record.event === "workspace.failed") return field(record, "error") ?? "no error given";
      if (record.event === "hooks.refused") return null;
      return undefined;
    }) ?? undefined
  );
}

/** `comment `KEYWORD` as one of: alice, bob` — the command a person gives by comment. */
function commentAs(keyword: string, settings: WhySettings): string {
  return `comment \`${keyword}\` as one of: ${authorizedList(settings)}`;
}

/** How to start an armed item: the start keyword when control reads comments (and, as the second way, the CLI). */
function howToStart(ref: string, settings: WhySettings, orCli = true): string {
  if (!settings.control.enabled) return `run \`the-loop sessions start --work-item ${ref}\` (routing.control is off, so no comment is a command)`;
  const comment = commentAs(settings.control.keywords.start, settings);
  return orCli ? `${comment}, or run \`the-loop sessions start --work-item ${ref}\`` : comment;
}

/** What a start needs on an item that may not be armed: the label first, under the labeled policy. */
function armThenStart(ref: string, settings: WhySettings): string {
  if (settings.spawnOnUnmatched === "never") {
    return `set routing.spawnOnUnmatched to labeled (then label it "${settings.autoExecuteLabel}") or always, then start it: ${howToStart(ref, settings, false)}`;
  }
  const gated = settings.control.enabled && settings.control.requireStartCommand;
  if (!gated) return `label it "${settings.autoExecuteLabel}": its next event then starts a session`;
  return `label it "${settings.autoExecuteLabel}", then ${howToStart(ref, settings, false)}`;
}

/** Starting the item again, armed or not. */
function startAgain(ref: string, armed: boolean | undefined, settings: WhySettings): string {
  return armed === false ? armThenStart(ref, settings) : howToStart(ref, settings);
}

function withDaemon(verdict: WhyVerdict, situation: WhySituation): WhyVerdict {
  if (situation.daemonRunning !== false) return verdict;
  if (verdict.state === "fail-closed" || verdict.state === "damaged-record") return verdict;
  const next =
    verdict.next === undefined
      ? "start the daemon (`the-loop start`): until it runs, nothing reads the item's events"
      : `start the daemon (\`the-loop start\`), then ${verdict.next}`;
  return { ...verdict, next };
}

/** The verdict on one work item. */
export function explainWhy(situation: WhySituation): WhyVerdict {
  const verdict = decide(situation);
  const refusal = lastRefusalOf(situation.events);
  const withRefusal = refusal ? { ...verdict, lastRefusal: describeEvent(refusal, situation.settings) } : verdict;
  return withDaemon(withRefusal, situation);
}

function decide(situation: WhySituation): WhyVerdict {
  const { ref, settings, session, control, graph, events } = situation;
  if (settings.authorizedUsers.length === 0) {
    return {
      state: "fail-closed",
      summary: "routing.authorizedUsers is empty, so nothing a person does is acted on",
      next: "add the logins that may drive sessions to routing.authorizedUsers",
    };
  }
  for (const [kind, record] of [
    ["session", session],
    ["control", control],
    ["graph state", graph],
    ["held gate answers", situation.held],
  ] as const) {
    if (isDamaged(record)) return { state: "damaged-record", summary: `the item's ${kind} record cannot be read`, next: record.damaged };
  }
  const live = session !== undefined && !isDamaged(session) && (session.status === "active" || session.status === "paused") ? session : undefined;
  const run = graph !== undefined && !isDamaged(graph) && settings.graph.enabled ? graph : undefined;
  const held = situation.held !== undefined && !isDamaged(situation.held) ? situation.held : [];
  // The headline is the item's worst condition, ranked: failed, blocked, a held answer, waiting
  // for a person, queued, running, done. A live agent never hides what its run says.
  const ended = run && endedVerdict(ref, run, live, armedFromEvents(events, settings), settings);
  // With no agent left, a start that stands is the next run on its way: it is the news.
  const nextRunQueued = live === undefined && control !== undefined && !isDamaged(control) && control.command === "start" && control.clearedAt === undefined;
  if (ended?.state === "graph-failed" && !nextRunQueued) return ended;
  const failedSession = session !== undefined && !isDamaged(session) && session.status === "failed" ? session : undefined;
  if (failedSession && !nextRunQueued) return failedToStartVerdict(ref, failedSession, settings);
  if (run?.status === "blocked") return blockedVerdict(ref, run);
  if (live && live.status === "active" && harnessBlocked(events)) {
    return {
      state: "harness-blocked",
      summary: `${runningWords(live, run)}, but its harness shows a dialog and takes no input`,
      next: `attach (\`the-loop sessions attach --work-item ${ref}\`) and answer the dialog`,
    };
  }
  if (run?.status === "waiting" && held.length > 0) return heldVerdict(run, held, events);
  if (run?.status === "waiting" && run.reasonCode === "node-full") return edgeVerdict(ref, run, situation.heldAtEdge);
  if (run?.status === "waiting") return waitingVerdict(run, settings);
  if (ended && live && !live.awaitingInput) return ended;
  if (live) return liveVerdict(ref, live, run, events, settings, control !== undefined && !isDamaged(control) ? control : undefined);

  const armed = armedFromEvents(events, settings);
  const closedSession = session !== undefined && !isDamaged(session) ? session : undefined;
  const lastSession = closedSession ? `; its last session closed (${closedSession.closeReason ?? "no reason recorded"})` : "";
  const runEnded = run && run.status !== "running" ? `; its ${run.graph} graph run is ${run.status} at node ${run.node}, so a start begins a new run` : "";

  // A standing command outranks the run's end: it says what happens next.
  if (ended?.state === "graph-done" && (control === undefined || isDamaged(control) || control.clearedAt !== undefined)) return ended;
  if (closedFromEvents(events) === true) {
    return { state: "closed", summary: `the item is closed${lastSession}`, next: `reopen the item, then ${startAgain(ref, armed, settings)}` };
  }
  const standing = control !== undefined && !isDamaged(control) && control.clearedAt === undefined ? control : undefined;
  if (standing?.effect === "refused") {
    return {
      state: "hook-refused",
      summary: `a lifecycle hook (${standing.actor}) refused the start at ${standing.requestedAt}; the item is disarmed${runEnded}`,
      next: `deal with the hook's reason (in the events below), then ${startAgain(ref, armed, settings)}`,
    };
  }
  if (standing?.command === "pause" && situation.queued !== undefined) {
    const place = situation.queued;
    return {
      state: "queued",
      summary: `${standing.actor} paused execution (${standing.source}) at ${standing.requestedAt}; it keeps its place in the start queue (position ${place.position}, ${place.ahead} ahead) and is not started while paused`,
      next: `resume it (\`the-loop sessions resume --work-item ${ref}\`, or \`${settings.control.keywords.resume}\` in a comment): it then starts in its turn when a slot frees`,
    };
  }
  if (standing && (standing.command === "pause" || standing.command === "stop")) {
    const verb = standing.command === "pause" ? "paused" : "stopped";
    return {
      state: "stopped",
      summary: `${standing.actor} ${verb} execution (${standing.source}) at ${standing.requestedAt}: nothing starts until the next start${lastSession}`,
      next: startAgain(ref, armed, settings),
    };
  }
  const queued = situation.queued;
  if (queued !== undefined) {
    return {
      state: "queued",
      summary:
        queued.cap === undefined
          ? `waiting for a slot: ${queued.ahead} ahead, and a slot is free — the daemon starts it within a second`
          : `waiting for a slot: ${queued.ahead} ahead, cap ${queued.cap} reached`,
      next: `nothing: it starts by itself when a session closes (\`the-loop sessions stop --work-item ${ref}\` takes it out of the queue)`,
    };
  }
  if (standing) {
    const failure = spawnFailureOf(events);
    if (standing.effect === "start-pending" || failure !== undefined) {
      return {
        state: "start-pending",
        summary: `${standing.actor}'s ${standing.command} (${standing.source}) stands, but the session could not be spawned${failure ? `: ${failure}` : ""}`,
        next: `fix that, then run \`the-loop sessions start --work-item ${ref}\` (the daemon also retries it at the item's next event and when it starts)`,
      };
    }
    return { state: "starting", summary: `${standing.actor}'s ${standing.command} (${standing.source}) stands and its session is being started` };
  }
  if (armed === false) {
    const refused = events.find((record) => record.event === "control.rejected" || record.event === "routing.dropped");
    const why =
      refused?.event === "control.rejected" && field(refused, "reason") === "not-armed"
        ? `${field(refused, "actor") ?? "someone"}'s start was refused because the item is not armed (${armingHow(settings)}); a refused start is not remembered`
        : `the item is not armed (${armingHow(settings)})`;
    return { state: "not-armed", summary: `${why}${lastSession}${runEnded}`, next: armThenStart(ref, settings) };
  }
  const gated = settings.control.enabled && settings.control.requireStartCommand;
  if (armed === true) {
    if (gated) return { state: "awaiting-start", summary: `the item is armed and waits for a start${lastSession}${runEnded}`, next: howToStart(ref, settings) };
    return {
      state: "armed",
      summary: `the item is armed: its next event starts a session${lastSession}${runEnded}`,
      next: `comment on it as one of: ${authorizedList(settings)}`,
    };
  }
  return {
    state: "unseen",
    summary: `nothing in the records or the part of the event log read says the-loop has seen this item${lastSession}`,
    next: armThenStart(ref, settings),
  };
}

/** A session the supervision gave up on: its harness kept dying, and no agent runs now. */
function failedToStartVerdict(ref: string, session: SessionView, settings: WhySettings): WhyVerdict {
  return {
    state: "failed-to-start",
    summary: `its ${session.harness} session failed to start: ${session.failureReason ?? "its harness kept exiting"}; no agent runs`,
    next: `fix the cause (its tmux session ${session.tmuxTarget} is kept: \`the-loop sessions attach --work-item ${ref}\` shows it), then start it again: ${howToStart(ref, settings)}`,
  };
}

const FAILED_STATUSES = new Set(["failed", "exhausted", "stalled"]);

function becauseOf(run: GraphView): string {
  const because = run.reason ? ` (${run.reasonCode ?? "reason"}: ${run.reason})` : "";
  const denial = run.denial ? `; the loop hook ${run.denial.hook} denied it at ${run.denial.point}${run.denial.reason ? `: ${run.denial.reason}` : ""}` : "";
  return `${because}${denial}`;
}

function runningWords(live: SessionView, run: GraphView | undefined): string {
  const where = run ? `, at node ${run.node} of the ${run.graph} graph (${run.status})` : "";
  return `a ${live.harness} session runs in tmux ${live.tmuxTarget} since ${live.createdAt}${where}`;
}

/** The agent a run that ended leaves behind, as a clause. */
function agentLeft(live: SessionView | undefined): string {
  if (live === undefined) return "";
  return live.status === "paused"
    ? `; its ${live.harness} session is still open (paused) in tmux ${live.tmuxTarget}`
    : `; its ${live.harness} agent still runs in tmux ${live.tmuxTarget}`;
}

/**
 * A run that ended: failed (failed, exhausted, stalled), done or canceled. What moves a failed
 * one is a new run, which begins when a session starts: so with its agent still there, that
 * session is stopped first.
 */
function endedVerdict(ref: string, run: GraphView, live: SessionView | undefined, armed: boolean | undefined, settings: WhySettings): WhyVerdict | undefined {
  const left = agentLeft(live);
  if (FAILED_STATUSES.has(run.status)) {
    const cause = run.denial ? `deal with what the loop hook ${run.denial.hook} objects to` : "deal with what ended it";
    const restart = live
      ? `run \`the-loop sessions stop --work-item ${ref}\`, then ${howToStart(ref, settings)} (a start begins a new run)`
      : `${startAgain(ref, armed, settings)} (a start begins a new run)`;
    return {
      state: "graph-failed",
      summary: `the ${run.graph} graph run ended ${run.status} at node ${run.node}${becauseOf(run)}${left}`,
      next: `${cause}, then ${restart}`,
    };
  }
  if (run.status === "done" || run.status === "canceled") {
    const how = run.status === "done" ? "is done" : "was canceled";
    const state = run.status === "done" ? "graph-done" : "graph-canceled";
    if (live) {
      return {
        state,
        summary: `the ${run.graph} graph run ${how} at node ${run.node}${left}`,
        next: `close the session when you no longer need it: \`the-loop sessions close --work-item ${ref}\``,
      };
    }
    return run.status === "done" ? { state, summary: `the ${run.graph} graph run is done at node ${run.node}; no session runs` } : undefined;
  }
  return undefined;
}

function blockedVerdict(ref: string, run: GraphView): WhyVerdict {
  const answer = run.reasonCode === "hook_denied" ? "" : "an authorized gate answer, or ";
  return {
    state: "graph-blocked",
    summary: `the ${run.graph} graph run is blocked at node ${run.node}${becauseOf(run)}`,
    next: `${answer}\`the-loop graph force ${ref} --to NODE --reason TEXT\` (\`the-loop graph show ${run.graph}\` names the nodes)`,
  };
}

/** Gate answers held for want of the login the-loop posts as: that login is what moves them. */
function heldVerdict(run: GraphView, held: readonly HeldAnswerView[], events: readonly EventRecord[]): WhyVerdict {
  const first = held[0];
  const who = [...new Set(held.map((answer) => answer.author))].join(", ");
  const fix = newest(events, (record) => (record.event === "graph.self_login_unknown" ? field(record, "fix") : undefined));
  return {
    state: "answer-held",
    summary: `the ${run.graph} graph run waits at the gate ${run.node}, and ${held.length === 1 ? `${who}'s answer (${first?.decision ?? "?"}) is` : `${held.length} answers (by ${who}) are`} held since ${first?.heldAt ?? "?"}: the login the-loop posts as is unknown (${first?.reason ?? "?"})`,
    next: fix ?? "set integrations.github.selfLogin to the login the-loop's token posts as; the held answers are then decided",
  };
}

/** A run waiting at an edge for a place at its next node (routing.limits.perNode): the daemon moves it, or a force. */
function edgeVerdict(ref: string, run: GraphView, words: string | undefined): WhyVerdict {
  return {
    state: "waiting-at-edge",
    summary: `the ${run.graph} graph run is ${words ?? run.reason ?? `waiting at node ${run.node} for a place at its next node`}`,
    next: `nothing: the daemon moves it within a second of a place freeing, oldest first (\`the-loop graph force ${ref} --to NODE --reason TEXT\` moves it now)`,
  };
}

function waitingVerdict(run: GraphView, settings: WhySettings): WhyVerdict {
  const { approve, requestChanges } = settings.graph.keywords;
  return {
    state: "at-gate",
    summary: `the ${run.graph} graph run waits at the gate ${run.node}${becauseOf(run)}`,
    next: `comment \`${approve}\` or \`${requestChanges}\` as one of: ${authorizedList(settings)}`,
  };
}

/** Whether the newest word on the harness is a dialog on its screen. */
function harnessBlocked(events: readonly EventRecord[]): boolean {
  const screen = newest(events, (record) =>
    record.event === "session.not_ready" ? record.blocked === true : GOOD_NEWS.has(record.event) || record.event === "session.respawned" ? false : undefined,
  );
  return screen === true;
}

function liveVerdict(
  ref: string,
  live: SessionView,
  run: GraphView | undefined,
  events: readonly EventRecord[],
  settings: WhySettings,
  control: ControlView | undefined,
): WhyVerdict {
  const where = run ? `, at node ${run.node} of the ${run.graph} graph (${run.status})` : "";
  // Paused at its budget's limit (docs/fleet.md#budgets): a plain resume would be paused again at the daemon's next look.
  if (live.status === "paused" && control?.command === "pause" && control.source === "budget" && control.clearedAt === undefined) {
    return {
      state: "paused",
      summary: `the session reached its budget and the-loop paused it (budget) at ${control.requestedAt}: its events are recorded and dropped until it resumes${where}`,
      next: `run \`the-loop sessions resume --work-item ${ref} --budget +N\`, which raises the limit it reached by N (+Nk for thousands of tokens, +Nmin for minutes) and resumes it`,
    };
  }
  if (live.status === "paused") {
    const paused = events.find((record) => record.event === "session.paused");
    const by = paused ? ` by ${field(paused, "actor") ?? "someone"} (${field(paused, "command_source") ?? "?"})` : "";
    return {
      state: "paused",
      summary: `the session is paused${by}: its events are recorded and dropped until it resumes${where}`,
      next: settings.control.enabled
        ? `${commentAs(settings.control.keywords.resume, settings)}, or run \`the-loop sessions resume --work-item ${ref}\``
        : `run \`the-loop sessions resume --work-item ${ref}\``,
    };
  }
  const running = runningWords(live, run);
  if (live.awaitingInput) {
    return {
      state: "awaiting-input",
      summary: `${running}; its agent asked: "${live.awaitingInput.question}"`,
      next: `answer it: comment on the item as one of: ${authorizedList(settings)}`,
    };
  }
  return { state: "running", summary: `running and healthy: ${running}; comments by ${authorizedList(settings)} reach it` };
}
