import type { ControlCommand, FeedbackConfig, RoutingConfig, SpawnPolicy } from "../config/schema.js";
import { compileVocabulary, parseControl } from "../control/keywords.js";
import type { ControlVocabulary } from "../control/keywords.js";
import { controlStateOf, sessionStateOf, spawnHold } from "../control/plan.js";
import type { SessionState } from "../control/plan.js";
import type { ControlRecord, ControlState } from "../control/types.js";
import type { SessionStatus } from "../registry/record.js";
import { hasLabel } from "../workitem/index.js";
import type { WorkItem } from "../workitem/index.js";
import { isAuthorized } from "./authz.js";
import { feedbackFor } from "./feedback.js";
import { COMMENT_KINDS } from "./inbound.js";
import type { InboundEvent } from "./inbound.js";
import { isSelfAuthored } from "../workitem/index.js";
import { SELF_LOGIN as LOCAL_SELF_LOGIN } from "../trackers/local/limits.js";

/**
 * The router: one pure function from an event and what is known about sessions to a decision.
 * Every ingress hands its events here, so the poller, the webhook receiver and the CLI share one
 * set of rules. No I/O, no clock, no randomness: the same inputs always decide the same way, which
 * is what lets the guard order be pinned down by a table of tests.
 */

export interface RoutingPolicy {
  readonly authorizedUsers: ReadonlySet<string>;
  readonly spawnOnUnmatched: SpawnPolicy;
  readonly autoExecuteLabel: string;
  readonly control: {
    /** Whether comments are read for control keywords. */
    readonly enabled: boolean;
    readonly requireStartCommand: boolean;
    readonly vocabulary: ControlVocabulary;
  };
  /** routing.feedback: whether CI failures and reviews requesting changes reach a session (their defaults when absent). */
  readonly feedback?: FeedbackConfig;
}

/** Built once per config load: the router then does set lookups, never list scans. */
export function policyOf(
  routing: Pick<RoutingConfig, "authorizedUsers" | "spawnOnUnmatched" | "autoExecuteLabel" | "control"> & { readonly feedback?: FeedbackConfig },
): RoutingPolicy {
  return {
    ...(routing.feedback !== undefined ? { feedback: routing.feedback } : {}),
    authorizedUsers: new Set(routing.authorizedUsers),
    spawnOnUnmatched: routing.spawnOnUnmatched,
    autoExecuteLabel: routing.autoExecuteLabel,
    control: {
      enabled: routing.control.enabled,
      requireStartCommand: routing.control.requireStartCommand,
      vocabulary: compileVocabulary(routing.control.keywords),
    },
  };
}

/** What the router needs of a session record. */
export interface SessionView {
  readonly status: SessionStatus;
  readonly recentDeliveries: readonly string[];
}

/** What the router needs of a work item's last control command. */
export type ControlView = Pick<ControlRecord, "command" | "source" | "actor" | "clearedAt" | "deliveryId" | "recentDeliveries">;

export interface RegistryView {
  sessionFor(ref: string): SessionView | undefined;
  controlFor(ref: string): ControlView | undefined;
}

/**
 * The router's view over the session records and the control records (anything that reads one
 * per work item: the registry and the control store). The one builder: the dispatcher and
 * `the-loop receive` both route through it.
 */
export function registryViewOf(sessions: { get(ref: string): SessionView | undefined }, control: { get(ref: string): ControlView | undefined }): RegistryView {
  return {
    sessionFor: (ref) => sessions.get(ref),
    controlFor: (ref) => control.get(ref),
  };
}

export interface DeliveryMemory {
  /** Whether a delivery id (or a content key, see InboundEvent.contentKey) was seen. */
  has(deliveryId: string): boolean;
}

export type DropReason =
  | "duplicate-delivery"
  | "no-work-item"
  /** the-loop's own doing come back: its marked text, or what the local tracker records under its login. */
  | "self-echo"
  | "unauthorized-actor"
  | "spawn-policy"
  /** Armed, but the start command is required and none has been honoured. */
  | "awaiting-start"
  /** Armed, but the item's last control command paused or stopped it. */
  | "execution-stopped"
  | "item-closed"
  | "no-session"
  /** routing.feedback says `ignore` for this kind of feedback in this repository (a CI failure, a review requesting changes). */
  | "feedback-ignored";

export type Decision =
  | { readonly action: "drop"; readonly reason: DropReason; readonly workItem?: WorkItem }
  /** A comment naming two different commands: nothing is executed and nothing forwarded. */
  | {
      readonly action: "drop";
      readonly reason: "control-ambiguous";
      readonly workItem: WorkItem;
      readonly commands: readonly ControlCommand[];
    }
  | { readonly action: "spawn"; readonly workItem: WorkItem }
  | { readonly action: "deliver"; readonly workItem: WorkItem; readonly status: SessionStatus }
  | { readonly action: "close"; readonly workItem: WorkItem }
  /**
   * A control command from an authorized, named person. The work item is the router's own choice
   * (the one with a live session, else the most authoritative), never anything the comment says.
   */
  | {
      readonly action: "control";
      readonly workItem: WorkItem;
      readonly command: ControlCommand;
      /** The graph a start chose (`graph=NAME` after its keyword); absent when it chose none. */
      readonly graph?: string;
      readonly session: SessionState;
      /** The spawn policy arms the item (what a start needs when there is no session). */
      readonly armed: boolean;
      readonly itemClosed: boolean;
    };

export type DecisionAction = Decision["action"];

/**
 * The guards run in this order and the first that fails decides. (The event filter is not here:
 * it is the webhook receiver's, `webhooks.ghWebhook.events`, which acts on GitHub's event names
 * before a payload is even parsed; the poller reads only what it lists.)
 *  1. delivery dedupe    delivery id or content key seen        → drop duplicate-delivery
 *  2. work item          the event names none                   → drop no-work-item
 *  3. self-echo          the-loop's own doing come back: its    → drop self-echo
 *                        marker in the text, or its login on
 *                        the local tracker (its labels)
 *  4. authorization      actor not allowed (a close is exempt)  → drop unauthorized-actor
 *  5. control keyword    a comment naming a command             → control, or drop (ambiguous,
 *                                                                 actor-less, redelivered)
 *  6. session match      a live session on one of the items     → deliver, or duplicate; a
 *                                                                 closing: close its own item's
 *                                                                 session, else deliver a PR's
 *                                                                 closing to a linked one
 *  7. spawn policy       no live session                        → spawn, or drop (incl. the start
 *                                                                 gate: awaiting-start, stopped)
 *
 * Feedback (routing.feedback) is decided between 5 and 6: a CI failure or a review requesting
 * changes that its repository's settings ignore is dropped (feedback-ignored) before it can reach
 * a session, and a CI failure never starts one (no-session): it is news for a running agent only.
 */
export function route(event: InboundEvent, policy: RoutingPolicy, registry: RegistryView, memory: DeliveryMemory): Decision {
  if (memory.has(event.deliveryId) || (event.contentKey !== undefined && memory.has(event.contentKey))) {
    return drop("duplicate-delivery");
  }

  const primary = event.workItems[0];
  if (primary === undefined) return drop("no-work-item");

  // Before authorization, and only ever a drop: the-loop's own words and label changes must never
  // come back as input (even when posted under an authorized person's login), and are no refusal
  // of anyone. Nothing is interpreted here; authorization still comes before any keyword is read.
  if (isSelfEcho(event)) return drop("self-echo", primary);

  // A close is exempt because it can only end a session the-loop started (guard 7 never spawns
  // for it), and an item closed by anyone is finished whoever closed it. A pull request's closing
  // told to a linked item's session is exempt for the same reason: it is a fact about the
  // repository, not a request, and carries no one's words (see closedDecision).
  if (event.kind !== "closed" && !isAuthorized(event.actor, policy.authorizedUsers)) {
    return drop("unauthorized-actor", primary);
  }

  // After authorization, so only allowed people steer; before the session match, so a keyword is
  // acted on by the-loop instead of reaching the agent as an ordinary comment.
  const control = controlDecision(event, policy, registry, primary);
  if (control !== undefined) return control;

  if (event.kind === "closed") return closedDecision(event, registry);

  if (isIgnoredFeedback(event, policy)) return drop("feedback-ignored", primary);

  const match = liveSession(event.workItems, registry);
  if (match !== undefined) {
    // The record's own delivery ids catch a redelivery the in-memory dedupe forgot (a restart).
    if (seenIn(match.session.recentDeliveries, event)) return drop("duplicate-delivery", match.workItem);
    return { action: "deliver", workItem: match.workItem, status: match.session.status };
  }

  // A CI failure is a status, not a request: it tells a running agent, and never starts one.
  if (event.kind === "check_failed") return drop("no-session", primary);
  return spawnDecision(event, policy, registry, primary);
}

/**
 * Whether routing.feedback ignores the event in its repository: a CI failure under `ciFailed:
 * ignore`, a review requesting changes under `changesRequested: ignore`. The repository is the
 * pull request's (the event's last work item), whose settings the operator wrote for it.
 */
function isIgnoredFeedback(event: InboundEvent, policy: RoutingPolicy): boolean {
  const isCheck = event.kind === "check_failed";
  const isChangesRequested = event.kind === "reviewed" && event.reviewState === "changes_requested";
  if (!isCheck && !isChangesRequested) return false;
  const pullRequest = event.workItems.find((item) => item.ref === event.pullRequest?.ref) ?? event.workItems.at(-1);
  if (pullRequest === undefined) return false;
  const settings = feedbackFor(policy.feedback, pullRequest);
  return isCheck ? settings.ciFailed === "ignore" : settings.changesRequested === "ignore";
}

/**
 * Guard 7 for a closing, which ends only the session of the item that closed: the pull request
 * itself when the event is about one, else the first item named with a live session. A pull
 * request's closing that finds no session of its own but reaches the session of a work item it is
 * linked to is delivered there, as news: the work item is not finished because its PR merged (its
 * own `closed` event says when it is), and an abandoned PR's item still needs its agent. With no
 * session to end or to tell, it is dropped: a closing never starts a session.
 */
function closedDecision(event: InboundEvent, registry: RegistryView): Decision {
  const pullRequest = event.pullRequest?.ref;
  const closing = pullRequest === undefined ? event.workItems : event.workItems.filter((item) => item.ref === pullRequest);
  const own = liveSession(closing, registry);
  if (own !== undefined) {
    if (seenIn(own.session.recentDeliveries, event)) return drop("duplicate-delivery", own.workItem);
    return { action: "close", workItem: own.workItem };
  }
  const linked =
    pullRequest === undefined
      ? undefined
      : liveSession(
          event.workItems.filter((item) => item.ref !== pullRequest),
          registry,
        );
  if (linked !== undefined) {
    if (seenIn(linked.session.recentDeliveries, event)) return drop("duplicate-delivery", linked.workItem);
    return { action: "deliver", workItem: linked.workItem, status: linked.session.status };
  }
  return drop("no-session", closing[0]);
}

/**
 * Guard 6. Only comments are read (an item's own body is rewritten over time; a comment is one
 * attributable act), and only when control is on. A command needs a named actor: authorization
 * lets an actor-less event through because it carries no instructions, which a command is.
 */
function controlDecision(event: InboundEvent, policy: RoutingPolicy, registry: RegistryView, primary: WorkItem): Decision | undefined {
  if (!policy.control.enabled || !COMMENT_KINDS.has(event.kind)) return undefined;
  const parsed = parseControl(event.body, policy.control.vocabulary);
  if (parsed.kind === "none") return undefined;
  // Before the ambiguity is recorded (and reacted to): a comment nobody can be named for is
  // dropped as unauthorized whatever it says, like any other command from no one.
  if (!isNamedActor(event.actor)) return drop("unauthorized-actor", primary);
  if (parsed.kind === "ambiguous") return { action: "drop", reason: "control-ambiguous", workItem: primary, commands: parsed.commands };
  const match = liveSession(event.workItems, registry);
  const workItem = match?.workItem ?? primary;
  // A command redelivered after a restart, or seen again by the other ingress path, must not act
  // twice. The session records remember the deliveries they saw, closed ones included (a start
  // replayed after the stop that closed its session); the control record remembers the commands
  // it took, including those that left no session and older ones a newer command replaced.
  const recorded = registry.controlFor(workItem.ref);
  if (recorded?.deliveryId === event.deliveryId || seenIn(recorded?.recentDeliveries, event) || seenBySession(event, registry)) {
    return drop("duplicate-delivery", workItem);
  }
  return {
    action: "control",
    workItem,
    command: parsed.command,
    ...(parsed.graph !== undefined ? { graph: parsed.graph } : {}),
    session: sessionStateOf(match?.session),
    armed: armsSpawn(event.labels, policy),
    itemClosed: event.itemState === "closed",
  };
}

/** Whether a session record of one of the event's items, live or closed, already saw this delivery. */
function seenBySession(event: InboundEvent, registry: RegistryView): boolean {
  for (const workItem of event.workItems) {
    if (seenIn(registry.sessionFor(workItem.ref)?.recentDeliveries, event)) return true;
  }
  return false;
}

/**
 * The item's control state for the start gate. A start given in a comment (or from the dashboard, as
 * its operator) stands for the person
 * who gave it: once they are no longer in the allowlist it starts nothing (shell access, the CLI's
 * authority, is not something a config change takes away).
 */
export function standingState(standing: ControlView | undefined, policy: Pick<RoutingPolicy, "authorizedUsers">): ControlState {
  const state = controlStateOf(standing);
  if (state === "start-requested" && (standing?.source === "comment" || standing?.source === "dashboard") && !policy.authorizedUsers.has(standing.actor))
    return "none";
  return state;
}

/**
 * Whether the event is the-loop's own doing coming back through an ingress: text it wrote (the
 * marker, whoever appears as its author), or a change the local tracker records under the login
 * it keeps for the-loop (its phase labels, its comments). On GitHub only the marker tells: the
 * login the-loop posts as may be an operator's own, whose label changes are theirs and count.
 */
function isSelfEcho(event: Pick<InboundEvent, "body" | "actor" | "workItems">): boolean {
  if (isSelfAuthored(event.body)) return true;
  return event.actor === LOCAL_SELF_LOGIN && event.workItems[0]?.tracker === "local";
}

/** Whether `ids` holds the event's delivery id or its content key. */
function seenIn(ids: readonly string[] | undefined, event: Pick<InboundEvent, "deliveryId" | "contentKey">): boolean {
  if (ids === undefined) return false;
  return ids.includes(event.deliveryId) || (event.contentKey !== undefined && ids.includes(event.contentKey));
}

/** `ghost` is what a tracker calls a person it cannot name (a deleted account). */
function isNamedActor(actor: string | null): actor is string {
  return actor !== null && actor !== "ghost";
}

/** Whether the spawn policy arms an item with these labels. */
export function armsSpawn(labels: readonly string[], policy: Pick<RoutingPolicy, "spawnOnUnmatched" | "autoExecuteLabel">): boolean {
  switch (policy.spawnOnUnmatched) {
    case "never":
      return false;
    case "always":
      return true;
    case "labeled":
      return isArmed(labels, policy.autoExecuteLabel);
  }
}

/** Whether the labels carry the arming label; labels are compared trimmed and case-insensitively. */
export function isArmed(labels: readonly string[], autoExecuteLabel: string): boolean {
  return hasLabel(labels, autoExecuteLabel);
}

function drop(reason: DropReason, workItem?: WorkItem): Decision {
  return workItem === undefined ? { action: "drop", reason } : { action: "drop", reason, workItem };
}

/**
 * Items are tried in the event's order, most authoritative first: a pull request's linked work
 * items come before the PR itself, so an event on the PR reaches the work item's session.
 */
function liveSession(workItems: readonly WorkItem[], registry: RegistryView): { workItem: WorkItem; session: SessionView } | undefined {
  for (const workItem of workItems) {
    const session = registry.sessionFor(workItem.ref);
    if (session !== undefined && sessionStateOf(session) !== "none") return { workItem, session };
  }
  return undefined;
}

function spawnDecision(event: InboundEvent, policy: RoutingPolicy, registry: RegistryView, primary: WorkItem): Decision {
  // Work on a finished item is never started, whatever the policy says.
  if (event.itemState === "closed") return drop("item-closed", primary);
  if (!armsSpawn(event.labels, policy)) return drop("spawn-policy", primary);
  // The label (or "always") only arms: who may start is decided by the start gate.
  const hold = spawnHold(standingState(registry.controlFor(primary.ref), policy), policy.control);
  return hold === undefined ? { action: "spawn", workItem: primary } : drop(hold, primary);
}
