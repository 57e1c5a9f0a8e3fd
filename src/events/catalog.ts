import { CAPABILITY_EVENTS } from "./capability-catalog.js";
import { CI_EVENTS } from "./ci-catalog.js";
import { DASHBOARD_EVENTS } from "./dashboard-catalog.js";
import { GRAPH_EVENTS } from "./graph-catalog.js";
import { NOTIFY_EVENTS } from "./notify-catalog.js";
import { FLEET_EVENTS } from "./fleet-catalog.js";

/**
 * The closed catalog of event types. Every type the-loop records is declared here once (the graph
 * family in graph-catalog.ts, taken in below), with its family, its level and the fields it carries; `EventLog.emit` accepts nothing else, so a type
 * missing from this table fails type-checking, and `the-loop events --types` lists exactly this.
 *
 * Field specs: "string" | "integer" | "boolean" | "string[]", with a trailing "?" when optional.
 * Field names are snake_case; `work_item` always holds a canonical work item ref.
 */

export const EVENT_LEVELS = ["debug", "info", "warning", "error"] as const;
export type EventLevel = (typeof EVENT_LEVELS)[number];

/** Which part of the-loop wrote the event: the envelope's `source`. */
export const EVENT_SOURCES = ["cli", "demo", "daemon", "poll", "gh-webhook", "sessions", "ask", "receive"] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

/** Keys of the envelope; no event may declare a field with one of these names. */
export const ENVELOPE_KEYS = ["ts", "source", "event", "level", "pid"] as const;

type FieldKind = "string" | "integer" | "boolean" | "string[]";
export type FieldSpec = FieldKind | `${FieldKind}?`;

export interface EventSpec {
  readonly family: string;
  readonly level: EventLevel;
  readonly summary: string;
  readonly fields: Readonly<Record<string, FieldSpec>>;
  /**
   * A quieter level for some values of one field: one type for one decision, yet the routine
   * case (the-loop's own echo) is not shown among what a person reads.
   */
  readonly quieterWhen?: { readonly field: string; readonly values: readonly string[]; readonly level: EventLevel };
}

export const EVENT_CATALOG = {
  "item.opened": {
    family: "item",
    level: "info",
    summary: "A work item was created on the local tracker.",
    fields: { work_item: "string", actor: "string", title: "string", labels: "string[]" },
  },
  "item.commented": {
    family: "item",
    level: "info",
    summary: "A comment was added to a local work item.",
    fields: { work_item: "string", actor: "string", comment_id: "string", marked: "boolean" },
  },
  "item.labeled": {
    family: "item",
    level: "info",
    summary: "A label was added to a local work item.",
    fields: { work_item: "string", actor: "string", label: "string" },
  },
  "item.unlabeled": {
    family: "item",
    level: "info",
    summary: "A label was removed from a local work item.",
    fields: { work_item: "string", actor: "string", label: "string" },
  },
  "item.closed": {
    family: "item",
    level: "info",
    summary: "A local work item was closed.",
    fields: { work_item: "string", actor: "string" },
  },
  "item.reopened": {
    family: "item",
    level: "info",
    summary: "A closed local work item was reopened.",
    fields: { work_item: "string", actor: "string" },
  },
  "item.checked": {
    family: "item",
    level: "info",
    summary: "A check was recorded on a local work item (`the-loop item check`); a failure is told to its live session as CI feedback.",
    fields: { work_item: "string", actor: "string", check: "string", conclusion: "string" },
  },
  "item.repaired": {
    family: "item",
    level: "warning",
    summary:
      "A local project's journal was repaired (`the-loop item repair`): its readable lines were kept, the others (`moved`, a torn last line among them when `torn`) went to the file `aside`.",
    fields: { project: "string", journal: "string", kept: "integer", moved: "integer", torn: "boolean", aside: "string" },
  },
  "routing.routed": {
    family: "routing",
    level: "debug",
    summary: "An inbound event passed every guard; `decision` says what the dispatcher does with it.",
    fields: { work_item: "string", delivery_id: "string", kind: "string", decision: "string", actor: "string?" },
  },
  "routing.dropped": {
    family: "routing",
    level: "info",
    summary:
      "An inbound event was dropped by a guard. Reasons: duplicate-delivery, no-work-item, self-echo (the-loop's own comment or label change come back; at debug level), unauthorized-actor, spawn-policy, awaiting-start, execution-stopped, item-closed, no-session, feedback-ignored (routing.feedback ignores a CI failure or a review requesting changes).",
    fields: { reason: "string", delivery_id: "string", kind: "string", work_item: "string?", actor: "string?" },
    quieterWhen: { field: "reason", values: ["self-echo"], level: "debug" },
  },
  "routing.fail_closed": {
    family: "routing",
    level: "warning",
    summary: "The authorized-users list (`routing.authorizedUsers`) is empty, so nothing a person does is acted on.",
    fields: { hint: "string" },
  },
  "dispatch.queued": {
    family: "dispatch",
    level: "debug",
    summary: "A decision was queued for its work item (`action`: spawn, deliver or close).",
    fields: { work_item: "string", delivery_id: "string", action: "string" },
  },
  "dispatch.dropped": {
    family: "dispatch",
    level: "info",
    summary: "The dispatcher settled an event without acting on it (e.g. duplicate-delivery, session-paused).",
    fields: { work_item: "string", delivery_id: "string", reason: "string" },
  },
  "dispatch.succeeded": {
    family: "dispatch",
    level: "info",
    summary: "An event was delivered into its work item's live session.",
    fields: { work_item: "string", delivery_id: "string", tmux_target: "string" },
  },
  "dispatch.failed": {
    family: "dispatch",
    level: "error",
    summary: "An event could not be delivered or acted on; `will_retry` says whether it comes back.",
    fields: { work_item: "string", delivery_id: "string", action: "string", error: "string", will_retry: "boolean" },
  },
  "session.spawned": {
    family: "session",
    level: "info",
    summary: "A session started for a work item: registry record written, harness running in tmux.",
    fields: {
      work_item: "string",
      harness: "string",
      harness_session_id: "string",
      tmux_target: "string",
      cwd: "string",
      delivery_id: "string?",
    },
  },
  "session.spawn_failed": {
    family: "session",
    level: "error",
    summary: "Starting a session failed; the work item has no live session.",
    fields: { work_item: "string", harness: "string", error: "string", delivery_id: "string?" },
  },
  "session.respawned": {
    family: "session",
    level: "info",
    summary:
      "A live session's pane had died and was started again (`resumed`: the same conversation; from the supervision, `restart`: which in a row, `how`: how it ended).",
    fields: { work_item: "string", tmux_target: "string", harness_session_id: "string", resumed: "boolean", restart: "integer?", how: "string?" },
  },
  "session.failed_to_start": {
    family: "session",
    level: "error",
    summary: "The session's harness kept dying past `routing.supervision.maxRestarts`: the session is `failed` (not live), with `reason`, a marked comment.",
    fields: { work_item: "string", harness: "string", tmux_target: "string", restarts: "integer", reason: "string" },
  },
  "session.not_ready": {
    family: "session",
    level: "warning",
    summary:
      "An input waited `routing.tmux.readyTimeoutSeconds` for the session's harness to take input and it never did (a dialog on its screen, or a start that hangs); nothing was pasted and the event is tried again. `screen`: the bottom of the pane.",
    fields: { work_item: "string", tmux_target: "string", waited_ms: "integer", blocked: "boolean", screen: "string" },
  },
  "session.sandboxed": {
    family: "session",
    level: "info",
    summary:
      "A session's harness started inside its bubblewrap sandbox (routing.sandbox): its folder, its agent's config, its own socket and the binds named, nothing else of this machine.",
    fields: { work_item: "string", sandbox: "string", binds: "string[]" },
  },
  "session.unsandboxed": {
    family: "session",
    level: "warning",
    summary:
      "A session's harness started without a sandbox because bubblewrap does not work here (routing.sandbox.mode: auto): its agent reaches everything the daemon's OS user can. The reason says how to fix it.",
    fields: { work_item: "string", reason: "string" },
  },
  "session.socket_opened": {
    family: "session",
    level: "debug",
    summary: "The daemon opened the socket of a live session (THE_LOOP_SESSION_SOCKET): the one way its agent reaches the-loop, for its own item only.",
    fields: { work_item: "string" },
  },
  "session.socket_closed": {
    family: "session",
    level: "debug",
    summary: "The daemon closed a session's socket: the session is no longer live.",
    fields: { work_item: "string" },
  },
  "session.resume_failed": {
    family: "session",
    level: "warning",
    summary: "Resuming the conversation failed; a fresh conversation was started instead.",
    fields: { work_item: "string", tmux_target: "string", error: "string" },
  },
  "session.harness_id_unknown": {
    family: "session",
    level: "warning",
    summary:
      "The harness picks its conversation's id itself (Codex) and it could not be read off the harness's own files after the start (`error`: why); a respawn of this session starts a fresh conversation instead of resuming it.",
    fields: { work_item: "string", harness: "string", tmux_target: "string", error: "string" },
  },
  "session.announced": {
    family: "session",
    level: "info",
    summary: "The session announcement was posted on the work item.",
    fields: { work_item: "string", comment_id: "string" },
  },
  "session.announce_failed": {
    family: "session",
    level: "warning",
    summary: "The session announcement could not be posted; the session runs anyway.",
    fields: { work_item: "string", error: "string" },
  },
  "session.awaiting_input": {
    family: "session",
    level: "info",
    summary: "An agent asked a person a question with `the-loop ask`; the next authorized comment is the answer.",
    fields: { work_item: "string", question: "string", comment_posted: "boolean", comment_id: "string?", error: "string?" },
  },
  "session.closed": {
    family: "session",
    level: "info",
    summary: "A session was closed (`reason`: item-closed, cli, spawn-failed, …).",
    fields: { work_item: "string", reason: "string", tmux_target: "string", kept_tmux_session: "boolean" },
  },
  "session.record_moved_aside": {
    family: "session",
    level: "warning",
    summary: "A session record that did not parse was moved aside (kept, never deleted) so its session could still be closed.",
    fields: { work_item: "string", file: "string", moved_to: "string", reason: "string" },
  },
  "session.harness_terminated": {
    family: "session",
    level: "info",
    summary: "A closed session's harness was stopped (`signal`: the last signal it needed).",
    fields: { work_item: "string", tmux_target: "string", signal: "string" },
  },
  "session.paused": {
    family: "session",
    level: "info",
    summary: "A session was paused: its events are recorded and dropped (`session-paused`) until it resumes.",
    fields: { work_item: "string", tmux_target: "string", command_source: "string", actor: "string" },
  },
  "session.resumed": {
    family: "session",
    level: "info",
    summary: "A paused session is active again; `notified` says whether its harness was told to re-read the thread.",
    fields: { work_item: "string", tmux_target: "string", command_source: "string", actor: "string", notified: "boolean", error: "string?" },
  },
  "control.command": {
    family: "control",
    level: "info",
    summary: "A control command was applied (`command_source`: comment or cli; `effect`: started, start-pending, resumed, paused, stopped, recorded, noop).",
    fields: {
      work_item: "string",
      command: "string",
      command_source: "string",
      actor: "string",
      effect: "string",
      delivery_id: "string?",
      error: "string?",
    },
  },
  "control.rejected": {
    family: "control",
    level: "info",
    summary: "A control command was recognised but refused and not recorded (`reason`: not-armed, item-closed, nothing-to-resume, hook-refused).",
    fields: { work_item: "string", command: "string", command_source: "string", actor: "string", reason: "string", delivery_id: "string?" },
  },
  "control.ambiguous": {
    family: "control",
    level: "warning",
    summary: "A comment carried two different control keywords: nothing was executed and nothing forwarded.",
    fields: { work_item: "string", commands: "string[]", actor: "string?", delivery_id: "string" },
  },
  "control.cleared": {
    family: "control",
    level: "info",
    summary: "A work item's session ended for another reason, so its last control command no longer governs whether it starts.",
    fields: { work_item: "string", command: "string", cleared_by: "string" },
  },
  "control.announced": {
    family: "control",
    level: "info",
    summary: "The marked comment recording a CLI control command was posted on the work item.",
    fields: { work_item: "string", command: "string", comment_id: "string" },
  },
  "control.announce_failed": {
    family: "control",
    level: "warning",
    summary: "The comment recording a CLI control command could not be posted; the command was applied anyway.",
    fields: { work_item: "string", command: "string", error: "string" },
  },
  "hooks.loaded": {
    family: "hooks",
    level: "info",
    summary: "The `hooks:` declaration was loaded: every module imported and constructed, every remote entry checked (`hooks`: the entries, in order).",
    fields: { hooks: "string[]", config: "string?" },
  },
  "hooks.load_failed": {
    family: "hooks",
    level: "error",
    summary: "The `hooks:` declaration could not be loaded; a daemon refuses to start, a one-shot command runs with no hooks.",
    fields: { error: "string", hook: "string?", config: "string?" },
  },
  "hooks.decided": {
    family: "hooks",
    level: "info",
    summary: "A hook changed decisions at a point (`changed`: the decision fields it set to a new value).",
    fields: { point: "string", hook: "string", changed: "string[]", work_item: "string?" },
  },
  "hooks.ignored": {
    family: "hooks",
    level: "warning",
    summary: "A hook's answer set facts or unknown keys, which were ignored (`fields`); its decisions were read as usual.",
    fields: { point: "string", hook: "string", fields: "string[]", work_item: "string?" },
  },
  "hooks.failed": {
    family: "hooks",
    level: "warning",
    summary: "A hook failed at a point (raised, timed out, answered malformed or with a wrong-typed decision): its changes were dropped and the chain went on.",
    fields: { point: "string", hook: "string", error: "string", required: "boolean", work_item: "string?" },
  },
  "hooks.refused": {
    family: "hooks",
    level: "warning",
    summary: "A `proceed: false` was applied: the start or launch did not happen, the item was disarmed and the refusal commented on it.",
    fields: { point: "string", hook: "string", reason: "string", work_item: "string", delivery_id: "string?", comment_posted: "boolean" },
  },
  "hooks.ran": {
    family: "hooks",
    level: "info",
    summary:
      "A hook was called at a point (`outcome`: agh's applied, denied, failed, skipped or rejected; `duration_ms`). Applied calls past the first 5 per hook, point and minute are one event with their `count`, the longest `duration_ms` and `median_ms`, for the minute `since`.",
    fields: {
      hook: "string",
      point: "string",
      outcome: "string",
      duration_ms: "integer",
      work_item: "string?",
      loop_run_id: "string?",
      error: "string?",
      changed: "string[]?",
      count: "integer?",
      median_ms: "integer?",
      since: "string?",
    },
    quieterWhen: { field: "outcome", values: ["applied", "skipped"], level: "debug" },
  },
  "hooks.loop_annotated": {
    family: "hooks",
    level: "info",
    summary: "A hook answered labels at an observe-only `loop.*` event (`labels`: `name=text`): recorded, never applied.",
    fields: { point: "string", hook: "string", labels: "string[]", loop_run_id: "string", work_item: "string" },
  },
  "hooks.loop_dropped": {
    family: "hooks",
    level: "warning",
    summary: "An observe-only `loop.*` event was not delivered: its run already had `waiting` events queued behind a slow hook.",
    fields: { point: "string", loop_run_id: "string", waiting: "integer", work_item: "string" },
  },
  "config.reloaded": {
    family: "config",
    level: "info",
    summary: "The daemon re-read its config file; `applied` took effect at once, `restart_required` waits for a restart.",
    fields: { config: "string", applied: "string[]", restart_required: "string[]" },
  },
  "config.reload_failed": {
    family: "config",
    level: "error",
    summary: "The changed config file is not valid; the daemon keeps running on the config it had.",
    fields: { config: "string", error: "string" },
  },
  "poll.baseline": {
    family: "poll",
    level: "info",
    summary: "First sight of a source: existing history was taken as read, not replayed.",
    fields: { poll_source: "string" },
  },
  "poll.cycle": {
    family: "poll",
    level: "debug",
    summary: "One poll cycle finished.",
    fields: { changes: "integer", dispatched: "integer", errors: "integer", duration_ms: "integer", interrupted: "boolean" },
  },
  "poll.provider_error": {
    family: "poll",
    level: "warning",
    summary: "Reading a source failed; it is retried next cycle.",
    fields: { poll_source: "string", error: "string" },
  },
  "poll.rejected": {
    family: "poll",
    level: "warning",
    summary:
      "A change the poller read is not what GitHub sends (a field the-loop reads has another type, an html_url not https on the configured host); it is not acted on. `reason` names the field.",
    fields: { poll_source: "string", delivery_id: "string", github_event: "string", reason: "string" },
  },
  "poll.rate_limited": {
    family: "poll",
    level: "warning",
    summary: "GitHub asked the poller to slow down (rate limit, secondary limit or X-Poll-Interval); the source is read again after `resume_at`.",
    fields: { poll_source: "string", resume_at: "string", reason: "string" },
  },
  "poll.legacy_state": {
    family: "poll",
    level: "warning",
    summary: "The poll state is read from the pre-state-root file because the new default does not exist yet; move it to the new location.",
    fields: { legacy_file: "string", new_file: "string" },
  },
  "webhook.listening": {
    family: "webhook",
    level: "info",
    summary: "The webhook receiver accepts deliveries (`verified`: signatures are checked).",
    fields: { host: "string", port: "integer", path: "string", verified: "boolean" },
  },
  "webhook.insecure": {
    family: "webhook",
    level: "warning",
    summary: "The webhook receiver accepts unsigned deliveries (`insecureAllowUnsigned`); anyone who reaches the port can drive sessions.",
    fields: { secret_env: "string" },
  },
  "webhook.server_error": {
    family: "webhook",
    level: "error",
    summary: "The receiver's listening socket reported an error (a failed accept, for example out of file descriptors); it keeps listening.",
    fields: { error: "string" },
  },
  "webhook.received": {
    family: "webhook",
    level: "info",
    summary: "A delivery was verified, acknowledged with 202 and queued for the router.",
    fields: { delivery_id: "string", github_event: "string", action: "string?", bytes: "integer", verified: "boolean" },
  },
  "webhook.ignored": {
    family: "webhook",
    level: "debug",
    summary: "A verified delivery of an event the-loop does not act on (ping, an event not in `webhooks.ghWebhook.events`).",
    fields: { delivery_id: "string", github_event: "string", reason: "string" },
  },
  "webhook.rejected": {
    family: "webhook",
    level: "warning",
    summary:
      "A delivery was refused. Reasons: missing-signature, invalid-signature, body-too-large, overloaded, unsupported-content-encoding, not-utf8, invalid-payload, duplicate-delivery, not-found, method-not-allowed, timeout, headers-too-large. `detail`: which field of a signed payload did not match what GitHub sends (never its value).",
    fields: { reason: "string", status: "integer", delivery_id: "string?", github_event: "string?", detail: "string?" },
  },
  "reaction.added": {
    family: "reaction",
    level: "debug",
    summary: "A reaction was added on GitHub to the comment or item an event came from.",
    fields: { work_item: "string", content: "string", target: "string", delivery_id: "string?" },
  },
  "reaction.failed": {
    family: "reaction",
    level: "warning",
    summary: "Adding a reaction failed; nothing else depends on it.",
    fields: { work_item: "string", content: "string", target: "string", error: "string", delivery_id: "string?" },
  },
  "workspace.prepared": {
    family: "workspace",
    level: "info",
    summary: "A checkout was made ready for a work item's session (`branch`: the PR head it tracks, absent for the default branch).",
    fields: { work_item: "string", checkout: "string", strategy: "string", branch: "string?", reused: "boolean" },
  },
  "workspace.failed": {
    family: "workspace",
    level: "error",
    summary: "A checkout could not be prepared, so the session was not started; the next event tries again.",
    fields: { work_item: "string", error: "string" },
  },
  "workspace.trusted": {
    family: "workspace",
    level: "info",
    summary:
      "The harness's own config now holds what an unattended start in the session's folder needs, so it starts without a dialog: Claude Code's user config marks the folder trusted and onboarded; Gemini CLI's `trustedFolders.json` trusts it and its `settings.json` settles the sign-in choice and nudges (`written`: false when it already did; `note`: why a wider scope was narrowed, or which settings were set).",
    fields: { work_item: "string", file: "string", dirs: "string[]", written: "boolean", note: "string?" },
  },
  "workspace.trust_failed": {
    family: "workspace",
    level: "warning",
    summary:
      "The harness's own config (Claude Code's user config, one of Gemini CLI's files) could not be updated for the session's folder (it does not parse as plain JSON, or cannot be written); it was left as it is, the error says what to set by hand, and the session starts anyway.",
    fields: { work_item: "string", file: "string", dirs: "string[]", error: "string" },
  },
  "workspace.cleaned": {
    family: "workspace",
    level: "info",
    summary: "A closed session's checkout was removed (the shared clone is kept).",
    fields: { work_item: "string", checkout: "string" },
  },
  "workspace.kept": {
    family: "workspace",
    level: "info",
    summary: "A closed session's checkout was kept (`routing.workspace.keepCheckoutOnClose`).",
    fields: { work_item: "string", checkout: "string" },
  },
  "workspace.clean_failed": {
    family: "workspace",
    level: "warning",
    summary: "A closed session's checkout could not be removed; remove it by hand.",
    fields: { work_item: "string", checkout: "string", error: "string" },
  },
  "session.pr_linked": {
    family: "session",
    level: "info",
    summary: "A pull request was bound to a work item, so its events reach that item's session (`linked_by`: explicit, closing-reference, branch).",
    fields: { work_item: "string", pull_request: "string", linked_by: "string" },
  },
  "routing.linkage_dropped": {
    family: "routing",
    level: "info",
    summary: "A work item inferred from a pull request's branch name does not exist, so the PR is not linked to it.",
    fields: { pull_request: "string", work_item: "string", reason: "string" },
  },
  ...GRAPH_EVENTS,
  ...CI_EVENTS,
  ...CAPABILITY_EVENTS,
  ...NOTIFY_EVENTS,
  ...DASHBOARD_EVENTS,
  ...FLEET_EVENTS,
  "daemon.started": {
    family: "daemon",
    level: "info",
    summary: "The daemon took its pidfile locks and runs its services.",
    fields: { services: "string[]", config: "string?" },
  },
  "daemon.unhandled_rejection": {
    family: "daemon",
    level: "error",
    summary:
      "A promise rejected with no one to handle it, while local hooks run in the daemon (a hook's own background work, most likely); the daemon went on.",
    fields: { error: "string" },
  },
  "daemon.stopped": {
    family: "daemon",
    level: "info",
    summary: "The daemon drained its work and released its locks.",
    fields: { services: "string[]", reason: "string", abandoned: "integer" },
  },
} as const satisfies Readonly<Record<string, EventSpec>>;

export type EventCatalog = typeof EVENT_CATALOG;
export type EventType = keyof EventCatalog;

type KindValue<K> = K extends "string"
  ? string
  : K extends "integer"
    ? number
    : K extends "boolean"
      ? boolean
      : K extends "string[]"
        ? readonly string[]
        : never;
type Optional<S> = S extends `${infer K}?` ? K : never;
type SpecFields<T extends EventType> = EventCatalog[T]["fields"];

/** The fields `emit(type, …)` takes: required ones required, optional ones optional. */
export type EventFields<T extends EventType> = {
  -readonly [F in keyof SpecFields<T> as SpecFields<T>[F] extends `${string}?` ? never : F]: KindValue<SpecFields<T>[F]>;
} & {
  -readonly [F in keyof SpecFields<T> as SpecFields<T>[F] extends `${string}?` ? F : never]?: KindValue<Optional<SpecFields<T>[F]>>;
};

export const EVENT_TYPES = Object.keys(EVENT_CATALOG) as EventType[];

export function isEventType(name: string): name is EventType {
  return Object.hasOwn(EVENT_CATALOG, name);
}

export function specOf(type: EventType): EventSpec {
  return EVENT_CATALOG[type];
}

/** The level an event of this type with these fields is written at. */
export function levelOf(type: EventType, fields: Readonly<Record<string, unknown>>): EventLevel {
  const spec: EventSpec = EVENT_CATALOG[type];
  const quieter = spec.quieterWhen;
  if (quieter !== undefined && quieter.values.some((value) => value === fields[quieter.field])) return quieter.level;
  return spec.level;
}

export function levelRank(level: string): number {
  return EVENT_LEVELS.indexOf(level as EventLevel);
}
