import type { EventRecord } from "../events/reader.js";

/**
 * One event of the log in plain words, as `the-loop why` tells a work item's story: what the-loop
 * saw and what it decided, naming who did it and, for a refusal, the setting that refused it. A
 * pure function of the event and the settings in force; an event type it has no words for is
 * shown as its type and fields, so a new one is never hidden.
 */

/** The settings the sentences name (the config's, narrowed to what a reader of `why` needs). */
export interface WhySettings {
  readonly authorizedUsers: readonly string[];
  readonly spawnOnUnmatched: "never" | "always" | "labeled";
  readonly autoExecuteLabel: string;
  readonly control: {
    readonly enabled: boolean;
    readonly requireStartCommand: boolean;
    readonly keywords: { readonly start: string; readonly stop: string; readonly pause: string; readonly resume: string };
  };
  readonly graph: { readonly enabled: boolean; readonly keywords: { readonly approve: string; readonly requestChanges: string } };
}

type Fields = Readonly<Record<string, unknown>>;

function text(fields: Fields, key: string): string | undefined {
  const value = fields[key];
  return typeof value === "string" && value !== "" ? value : undefined;
}

function list(fields: Fields, key: string): string[] {
  const value = fields[key];
  return Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === "string") : [];
}

/** `alice`, or `someone` when the event names no one. */
function who(fields: Fields): string {
  return text(fields, "actor") ?? "someone";
}

/** `alice's comment`, `a labeled event`: what a routing event was about. */
function whoseEvent(fields: Fields): string {
  const kind = text(fields, "kind") ?? "event";
  const noun = kind === "commented" ? "comment" : kind === "opened" ? "opening" : `${kind.replace(/_/g, " ")} event`;
  const actor = text(fields, "actor");
  return actor ? `${actor}'s ${noun}` : `a ${noun}`;
}

/** Labels compare trimmed and case-insensitively, as the router compares them. */
export function isArmingLabel(label: string | undefined, settings: WhySettings): boolean {
  return label !== undefined && label.trim().toLowerCase() === settings.autoExecuteLabel.trim().toLowerCase();
}

/** Who may drive the item, as a sentence ends with it. */
export function authorizedList(settings: WhySettings): string {
  return settings.authorizedUsers.length === 0 ? "no one (routing.authorizedUsers is empty)" : settings.authorizedUsers.join(", ");
}

/** How an item gets armed under the spawn policy. */
export function armingHow(settings: WhySettings): string {
  if (settings.spawnOnUnmatched === "never") return "routing.spawnOnUnmatched is never, so no item is";
  if (settings.spawnOnUnmatched === "always") return "every open item is (routing.spawnOnUnmatched: always)";
  return `it lacks the label "${settings.autoExecuteLabel}"`;
}

function droppedSentence(fields: Fields, settings: WhySettings): string {
  const what = whoseEvent(fields);
  const actor = text(fields, "actor");
  switch (text(fields, "reason")) {
    case "unauthorized-actor":
      return actor
        ? `dropped ${what}: ${actor} is not authorized (authorized: ${authorizedList(settings)})`
        : `dropped ${what}: it names no actor, and only authorized people are acted on (authorized: ${authorizedList(settings)})`;
    case "self-echo":
      return `ignored ${what}: the-loop's own doing come back`;
    // What logs written before self-echo say.
    case "self-authored":
      return `dropped ${what}: the-loop wrote it itself (it carries the loop-prevention marker)`;
    case "spawn-policy":
      return `dropped ${what}: the item is not armed (${armingHow(settings)})`;
    case "awaiting-start":
      return `held ${what}: the item is armed and waits for a start (\`${settings.control.keywords.start}\`)`;
    case "execution-stopped":
      return `held ${what}: execution is paused or stopped until the next start (\`${settings.control.keywords.start}\`)`;
    case "paused":
    case "session-paused":
      return `dropped ${what}: the session is paused`;
    case "item-closed":
      return `dropped ${what}: the item is closed`;
    case "no-session":
      return `dropped ${what}: the item has no live session to deliver it to`;
    case "duplicate-delivery":
      return `dropped ${what}: it was already taken (a duplicate delivery)`;
    default:
      return `dropped ${what} (${text(fields, "reason") ?? "no reason given"})`;
  }
}

const EFFECT_WORDS: Readonly<Record<string, string>> = {
  started: "a session started",
  "start-pending": "honoured, but the session could not be spawned; it is retried at the item's next event or daemon start",
  resumed: "the paused session runs again",
  paused: "the session is paused",
  stopped: "the session was closed",
  recorded: "recorded: nothing starts until the next start",
  noop: "it already was so",
  refused: "a hook refused it",
};

function rejectedWords(reason: string | undefined, settings: WhySettings): string {
  switch (reason) {
    case "not-armed":
      return `the item is not armed (${armingHow(settings)}); a refused start is not remembered, so arm it and start again`;
    case "item-closed":
      return "the item is closed";
    case "nothing-to-resume":
      return "there is no session to resume";
    case "hook-refused":
      return "a lifecycle hook refused it";
    default:
      return reason ?? "no reason given";
  }
}

function seconds(fields: Fields, key: string): string {
  const value = fields[key];
  return typeof value === "number" ? `${Math.round(value / 100) / 10}s` : "a while";
}

function ended(fields: Fields, status: string): string {
  return `the graph run ended ${status} at node ${text(fields, "node") ?? "?"} (${text(fields, "reason_code") ?? status}): ${text(fields, "reason") ?? ""}`.replace(
    /: $/,
    "",
  );
}

type Sentence = (fields: Fields, settings: WhySettings) => string;

const SENTENCES: Readonly<Record<string, Sentence>> = {
  "item.opened": (f, s) => {
    const labels = list(f, "labels");
    const arms = labels.some((label) => isArmingLabel(label, s)) && s.spawnOnUnmatched === "labeled";
    return `${who(f)} opened it ("${text(f, "title") ?? ""}")${labels.length > 0 ? ` with the labels ${labels.join(", ")}` : ""}${arms ? ", which arms it" : ""}`;
  },
  "item.commented": (f) => `${who(f)} commented (${text(f, "comment_id") ?? "?"})${f.marked === true ? ", marked as the-loop's own" : ""}`,
  "item.labeled": (f, s) =>
    `${who(f)} added the label "${text(f, "label") ?? ""}"${isArmingLabel(text(f, "label"), s) && s.spawnOnUnmatched === "labeled" ? ", which arms it" : ""}`,
  "item.unlabeled": (f, s) =>
    `${who(f)} removed the label "${text(f, "label") ?? ""}"${isArmingLabel(text(f, "label"), s) && s.spawnOnUnmatched === "labeled" ? ", which disarms it" : ""}`,
  "item.closed": (f) => `${who(f)} closed it`,
  "item.reopened": (f) => `${who(f)} reopened it`,
  "routing.routed": (f) => `took ${whoseEvent(f)}: ${text(f, "decision") ?? "?"}`,
  "routing.dropped": droppedSentence,
  "routing.linkage_dropped": (f) => `did not link ${text(f, "pull_request") ?? "a pull request"} (${text(f, "reason") ?? "?"})`,
  "dispatch.queued": (f) => `queued a ${text(f, "action") ?? "?"}`,
  "dispatch.dropped": (f) =>
    text(f, "reason") === "session-paused"
      ? "recorded an event and dropped it: the session is paused"
      : `settled an event without acting on it (${text(f, "reason") ?? "?"})`,
  "dispatch.succeeded": (f) => `delivered an event into the session (${text(f, "tmux_target") ?? "?"})`,
  "dispatch.failed": (f) =>
    `could not ${text(f, "action") ?? "act"}: ${text(f, "error") ?? "?"}${f.will_retry === true ? " (it is tried again)" : " (not tried again)"}`,
  "session.spawned": (f) => `started a ${text(f, "harness") ?? ""} session in tmux ${text(f, "tmux_target") ?? "?"}`,
  "session.spawn_failed": (f) => `could not start the ${text(f, "harness") ?? ""} session: ${text(f, "error") ?? "?"}`,
  "session.respawned": (f) => `started the session's harness again (its pane had died)${f.resumed === true ? ", same conversation" : ", new conversation"}`,
  "session.not_ready": (f) =>
    `the harness did not take input within ${seconds(f, "waited_ms")}${f.blocked === true ? " (a dialog is on its screen)" : ""}; the event is tried again`,
  "session.resume_failed": (f) => `could not resume the conversation (${text(f, "error") ?? "?"}); a fresh one was started`,
  "session.harness_id_unknown": (f) =>
    `could not learn the ${text(f, "harness") ?? ""} conversation's id (${text(f, "error") ?? "?"}); a respawn starts a new conversation`,
  "session.announced": (f) => `announced the session on the item (comment ${text(f, "comment_id") ?? "?"})`,
  "session.announce_failed": (f) => `could not announce the session: ${text(f, "error") ?? "?"}`,
  "session.awaiting_input": (f) => `the agent asked: "${text(f, "question") ?? ""}"; the next authorized comment is the answer`,
  "session.closed": (f) => `closed the session (${text(f, "reason") ?? "?"})`,
  "session.record_moved_aside": (f) => `moved the unreadable session record aside to ${text(f, "moved_to") ?? "?"} (${text(f, "reason") ?? "?"})`,
  "session.harness_terminated": (f) => `ended the closed session's harness (${text(f, "signal") ?? "?"})`,
  "session.paused": (f) => `${who(f)} paused the session (${text(f, "command_source") ?? "?"})`,
  "session.resumed": (f) =>
    `${who(f)} resumed the session (${text(f, "command_source") ?? "?"})${f.notified === false ? `; it could not be told to re-read the thread: ${text(f, "error") ?? "?"}` : ""}`,
  "session.pr_linked": (f) => `linked ${text(f, "pull_request") ?? "a pull request"} (${text(f, "linked_by") ?? "?"})`,
  "control.command": (f) =>
    `${who(f)}'s ${text(f, "command") ?? "command"} (${text(f, "command_source") ?? "?"}) was applied: ${EFFECT_WORDS[text(f, "effect") ?? ""] ?? text(f, "effect") ?? "?"}${text(f, "error") ? `: ${text(f, "error")}` : ""}`,
  "control.rejected": (f, s) =>
    `refused ${who(f)}'s ${text(f, "command") ?? "command"} (${text(f, "command_source") ?? "?"}): ${rejectedWords(text(f, "reason"), s)}`,
  "control.ambiguous": (f) => `ignored ${who(f)}'s comment naming two commands (${list(f, "commands").join(", ")}): nothing was done; give one`,
  "control.cleared": (f) => `the last ${text(f, "command") ?? "command"} no longer governs starting: the session ended (${text(f, "cleared_by") ?? "?"})`,
  "control.announced": (f) => `recorded the CLI's ${text(f, "command") ?? "command"} on the item (comment ${text(f, "comment_id") ?? "?"})`,
  "control.announce_failed": (f) => `could not record the CLI's ${text(f, "command") ?? "command"} on the item: ${text(f, "error") ?? "?"}`,
  "hooks.refused": (f) =>
    `the hook ${text(f, "hook") ?? "?"} refused at ${text(f, "point") ?? "?"}: ${text(f, "reason") ?? "?"}; the item was disarmed${f.comment_posted === true ? " and told so" : ""}`,
  "hooks.failed": (f) =>
    `the hook ${text(f, "hook") ?? "?"} failed at ${text(f, "point") ?? "?"}${f.required === true ? " (required)" : ""}: ${text(f, "error") ?? "?"}`,
  "hooks.decided": (f) => `the hook ${text(f, "hook") ?? "?"} changed ${list(f, "changed").join(", ")} at ${text(f, "point") ?? "?"}`,
  "hooks.ignored": (f) => `ignored what the hook ${text(f, "hook") ?? "?"} may not set at ${text(f, "point") ?? "?"} (${list(f, "fields").join(", ")})`,
  "workspace.prepared": (f) =>
    `${f.reused === true ? "reused" : "prepared"} the checkout ${text(f, "checkout") ?? "?"}${text(f, "branch") ? ` on ${text(f, "branch")}` : ""}`,
  "workspace.failed": (f) => `could not prepare a checkout, so no session started: ${text(f, "error") ?? "?"}`,
  "workspace.trust_failed": (f) => `could not mark the folder trusted for Claude Code: ${text(f, "error") ?? "?"}`,
  "workspace.clean_failed": (f) => `could not remove the checkout ${text(f, "checkout") ?? "?"}: ${text(f, "error") ?? "?"}`,
  "graph.started": (f) => `the ${text(f, "graph") ?? "?"} graph run began at node ${text(f, "node") ?? "?"}`,
  "graph.choice_refused": (f) =>
    `${who(f)} chose the graph ${text(f, "chosen") ?? "?"}, which the config does not have; it runs ${text(f, "graph") ?? "?"} (known: ${list(f, "known").join(", ")})`,
  "graph.advanced": (f) =>
    `moved from node ${text(f, "from") ?? "?"} to ${text(f, "node") ?? "?"} on ${text(f, "outcome") ?? "?"} (by ${text(f, "actor_kind") ?? ""} ${who(f)})`,
  "graph.waiting": (f) => `reached the gate ${text(f, "node") ?? "?"}: ${text(f, "reason") ?? "it waits for an answer"}`,
  "graph.blocked": (f) => `blocked at node ${text(f, "node") ?? "?"} (${text(f, "reason_code") ?? "?"}): ${text(f, "reason") ?? "?"}`,
  "graph.gate_decided": (f) => `${who(f)} answered the gate ${text(f, "node") ?? "?"}: ${text(f, "decision") ?? "?"}`,
  "graph.gate_ambiguous": (f) => `${who(f)}'s comment gave both gate answers; nothing moved`,
  "graph.gate_refused": (f) => `${who(f)}'s gate answer did not count (${text(f, "reason_code") ?? "?"}): ${text(f, "reason") ?? "?"}`,
  "graph.gate_answer_held": (f) =>
    `${who(f)}'s gate answer (${text(f, "decision") ?? "?"}) is held: the-loop could not check that it is not its own agent's, because the login it posts as is unknown (${text(f, "reason") ?? "?"}); it is decided once the login is known, or refused after ${text(f, "until") ?? "?"}`,
  "graph.gate_answer_released": (f) =>
    `${who(f)}'s held gate answer (${text(f, "decision") ?? "?"}, held since ${text(f, "held_at") ?? "?"}) is decided: the login the-loop posts as is known`,
  "graph.gate_answer_refused": (f) =>
    `${who(f)}'s held gate answer did not count (${text(f, "reason_code") ?? "?"}): ${text(f, "reason") ?? "?"}; a comment asks for it again`,
  "graph.self_login_unknown": (f) =>
    `could not check ${text(f, "checked") ?? "the self-approval guard"}: the login the-loop posts as is unknown${f.permanent === true ? " for good" : " for now"} (${text(f, "reason") ?? "?"}); ${text(f, "fix") ?? "?"}`,
  "graph.self_login_learned": (f) => `learned the login the-loop posts as (${text(f, "login") ?? "?"}): held gate answers are decided`,
  "graph.claim_refused": (f) =>
    `the claim${text(f, "claimed") ? ` of node ${text(f, "claimed")}` : ""} did not move it (${text(f, "reason_code") ?? "?"}): ${text(f, "reason") ?? "?"}`,
  "graph.forced": (f) =>
    `${who(f)} forced it onto node ${text(f, "node") ?? "?"}${text(f, "from") ? ` from ${text(f, "from")}` : ""}: ${text(f, "reason") ?? "?"}`,
  "graph.completed": (f) => `the graph run is done at node ${text(f, "node") ?? "?"}`,
  "graph.failed": (f) => ended(f, "failed"),
  "graph.exhausted": (f) => ended(f, "exhausted"),
  "graph.stalled": (f) => ended(f, "stalled"),
  "graph.canceled": (f) => ended(f, "canceled"),
  "graph.assignment_delivered": (f) => `gave the session its assignment for node ${text(f, "node") ?? "?"} (${text(f, "how") ?? "?"})`,
  "graph.assignment_failed": (f) =>
    `could not give the session its assignment for node ${text(f, "node") ?? "?"}: ${text(f, "error") ?? "?"}${f.will_retry === true ? " (it is given later)" : ""}`,
  "graph.record_moved_aside": (f) => `moved the unreadable graph state aside to ${text(f, "moved_to") ?? "?"} (${text(f, "reason") ?? "?"})`,
  "graph.effect_failed": (f) => `could not carry out ${text(f, "effect") ?? "an effect"} at node ${text(f, "node") ?? "?"}: ${text(f, "error") ?? "?"}`,
  "capability.step_run": (f) =>
    `${hookOf(f)} at ${text(f, "point") ?? "?"} (node ${text(f, "node") ?? "?"}): ${text(f, "how") === "command" ? `ran \`the-loop ${text(f, "ref") ?? "?"}\`` : `asked the session to use the ${text(f, "how") ?? "?"} ${text(f, "ref") ?? "?"}`}`,
  "capability.step_failed": (f) =>
    `${hookOf(f)} failed at ${text(f, "point") ?? "?"} (node ${text(f, "node") ?? "?"}): ${text(f, "error") ?? "?"}; ${text(f, "on_error") === "halt" ? "its onError is halt, so the item was blocked" : "skipped"}`,
  "capability.gate_decided": (f) => gateSentence(f),
  "capability.runtime_refused": (f) =>
    `did not run ${hookOf(f)} at ${text(f, "point") ?? "?"} (node ${text(f, "node") ?? "?"}), so the node was blocked: ${text(f, "reason") ?? `it does not run in the harness ${text(f, "harness") ?? "?"}`}`,
  "capability.use_refused": (f) =>
    `did not use ${hookOf(f)} at ${text(f, "point") ?? "?"} (node ${text(f, "node") ?? "?"}), so the node was blocked: its bundle changed since consent (${text(f, "files") || text(f, "reason") || "?"})`,
  "capability.resolver_failed": (f) =>
    `the resolver of ${text(f, "capability") ?? "?"} could not resolve task ${text(f, "task_id") ?? "?"}, so node ${text(f, "node") ?? "?"} was blocked: ${text(f, "error") ?? "?"}`,
};

/**
 * A gate's verdict. A check that itself failed is said plainly — skipped (onError skip) or halted
 * (onError halt) — with why, so a gate that never ran is never read as one that passed.
 */
function gateSentence(f: Readonly<Record<string, unknown>>): string {
  const where = `${hookOf(f)} at ${text(f, "point") ?? "?"} (node ${text(f, "node") ?? "?"})`;
  const decision = text(f, "decision");
  const error = text(f, "error") ?? text(f, "message") ?? "?";
  if (decision === "error-skipped") return `${where} was skipped, its check having failed (onError skip): ${error}`;
  if (decision === "error-halted") return `${where} halted the node, its check having failed (onError halt): ${error}`;
  return `${where} decided ${decision ?? "?"}${text(f, "message") ? `: ${text(f, "message")}` : ""}`;
}

/** A capability's hook as the sentences name it: `checks gates[1]`. */
function hookOf(f: Readonly<Record<string, unknown>>): string {
  return `the capability ${text(f, "capability") ?? "?"}'s ${text(f, "hook") ?? "hook"}`;
}

const ENVELOPE = new Set(["ts", "source", "event", "level", "pid", "work_item", "work_items"]);

/** An event with no sentence of its own: its type and fields, so nothing is left out. */
function fallback(record: EventRecord): string {
  const fields = Object.entries(record)
    .filter(([key]) => !ENVELOPE.has(key))
    .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`);
  return [record.event.replace(/[._]/g, " "), ...fields].join(" ");
}

/** The event in plain words. */
export function describeEvent(record: EventRecord, settings: WhySettings): string {
  const sentence = SENTENCES[record.event];
  return sentence ? sentence(record, settings) : fallback(record);
}
