import type { RoutingConfig, SpawnPolicy } from "../config/schema.js";
import { isLive } from "../sessions/record.js";
import type { SessionStatus } from "../sessions/record.js";
import type { WorkItem } from "../workitem/index.js";
import { isAuthorized } from "./authz.js";
import type { InboundEvent, InboundKind } from "./inbound.js";
import { isSelfAuthored } from "./marker.js";

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
  /** null: every kind. */
  readonly acceptedKinds: ReadonlySet<InboundKind> | null;
}

/** Built once per config load: the router then does set lookups, never list scans. */
export function policyOf(
  routing: Pick<RoutingConfig, "authorizedUsers" | "spawnOnUnmatched" | "autoExecuteLabel">,
  acceptedKinds: readonly InboundKind[] | null = null,
): RoutingPolicy {
  return {
    authorizedUsers: new Set(routing.authorizedUsers),
    spawnOnUnmatched: routing.spawnOnUnmatched,
    autoExecuteLabel: routing.autoExecuteLabel,
    acceptedKinds: acceptedKinds === null ? null : new Set(acceptedKinds),
  };
}

/** What the router needs of a session record. */
export interface SessionView {
  readonly status: SessionStatus;
  readonly recentDeliveries: readonly string[];
}

export interface RegistryView {
  sessionFor(ref: string): SessionView | undefined;
}

export interface DeliveryMemory {
  has(deliveryId: string): boolean;
}

export type DropReason =
  | "disabled-event"
  | "duplicate-delivery"
  | "no-work-item"
  | "self-authored"
  | "unauthorized-actor"
  | "spawn-policy"
  | "item-closed"
  | "no-session";

export type Decision =
  | { readonly action: "drop"; readonly reason: DropReason; readonly workItem?: WorkItem }
  | { readonly action: "spawn"; readonly workItem: WorkItem }
  | { readonly action: "deliver"; readonly workItem: WorkItem; readonly status: SessionStatus }
  | { readonly action: "close"; readonly workItem: WorkItem };

export type DecisionAction = Decision["action"];

/**
 * The guards run in this order and the first that fails decides:
 *  1. event filter       kind not accepted                      → drop disabled-event
 *  2. delivery dedupe    delivery id already seen               → drop duplicate-delivery
 *  3. work item          the event names none                   → drop no-work-item
 *  4. self-authored      the text carries the-loop's marker     → drop self-authored
 *  5. authorization      actor not allowed (a close is exempt)  → drop unauthorized-actor
 *  6. control keyword    (seam: not yet)
 *  7. session match      a live session on one of the items     → deliver / close, or duplicate
 *  8. spawn policy       no live session                        → spawn, or drop
 */
export function route(event: InboundEvent, policy: RoutingPolicy, registry: RegistryView, memory: DeliveryMemory): Decision {
  if (policy.acceptedKinds !== null && !policy.acceptedKinds.has(event.kind)) return drop("disabled-event");
  if (memory.has(event.deliveryId)) return drop("duplicate-delivery");

  const primary = event.workItems[0];
  if (primary === undefined) return drop("no-work-item");

  // Before authorization: the marker means "the-loop wrote this", and the-loop's own words must
  // never come back as input, even when they were posted under an authorized person's login.
  if (isSelfAuthored(event.body)) return drop("self-authored", primary);

  // A close is exempt because it can only end a session the-loop started (guard 7 never spawns
  // for it), and an item closed by anyone is finished whoever closed it.
  if (event.kind !== "closed" && !isAuthorized(event.actor, policy.authorizedUsers)) {
    return drop("unauthorized-actor", primary);
  }

  // Guard 6, control keyword: the execution-control change inserts its one line here, e.g.
  //   const control = controlDecision(event, policy, registry); if (control) return control;
  // It runs after authorization (only allowed people steer) and before the session match (a
  // keyword such as "stop" must not be delivered to the agent as an ordinary comment).

  const match = liveSession(event.workItems, registry);
  if (match !== undefined) {
    // The record's own delivery ids catch a redelivery the in-memory dedupe forgot (a restart).
    if (match.session.recentDeliveries.includes(event.deliveryId)) return drop("duplicate-delivery", match.workItem);
    if (event.kind === "closed") return { action: "close", workItem: match.workItem };
    return { action: "deliver", workItem: match.workItem, status: match.session.status };
  }
  // Closing an item with no session must not start one.
  if (event.kind === "closed") return drop("no-session", primary);

  return spawnDecision(event, policy, primary);
}

/** Whether the labels carry the arming label; labels are compared trimmed and case-insensitively. */
export function isArmed(labels: readonly string[], autoExecuteLabel: string): boolean {
  const wanted = normalizeLabel(autoExecuteLabel);
  if (wanted === "") return false;
  return labels.some((label) => normalizeLabel(label) === wanted);
}

function normalizeLabel(label: string): string {
  return label.trim().toLowerCase();
}

function drop(reason: DropReason, workItem?: WorkItem): Decision {
  return workItem === undefined ? { action: "drop", reason } : { action: "drop", reason, workItem };
}

/**
 * Items are tried in the event's order, most authoritative first: a pull request's linked work
 * items come before the PR itself, so an event on the PR reaches the work item's session.
 */
function liveSession(
  workItems: readonly WorkItem[],
  registry: RegistryView,
): { workItem: WorkItem; session: SessionView } | undefined {
  for (const workItem of workItems) {
    const session = registry.sessionFor(workItem.ref);
    if (session !== undefined && isLive(session)) return { workItem, session };
  }
  return undefined;
}

function spawnDecision(event: InboundEvent, policy: RoutingPolicy, primary: WorkItem): Decision {
  // Work on a finished item is never started, whatever the policy says.
  if (event.itemState === "closed") return drop("item-closed", primary);
  switch (policy.spawnOnUnmatched) {
    case "never":
      return drop("spawn-policy", primary);
    case "always":
      return { action: "spawn", workItem: primary };
    case "labeled":
      return isArmed(event.labels, policy.autoExecuteLabel) ? { action: "spawn", workItem: primary } : drop("spawn-policy", primary);
  }
}
