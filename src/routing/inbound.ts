import type { LinkSource } from "../registry/pr-links.js";
import type { ItemState } from "../trackers/tracker.js";
import type { WorkItem } from "../workitem/index.js";

/**
 * The one shape every ingress (poller, webhook receiver, CLI) turns what it saw into. Ingresses
 * only normalize; every policy decision is the router's, so both paths behave the same.
 */

export type InboundSource = "poll" | "gh-webhook" | "cli";

// How a work item other than the event's own entity came to be named by it: a record kind's word.
export type { LinkSource };

/** The pull request an event is about, when it is about one. */
export interface InboundPullRequest {
  /** Canonical ref of the PR; also among the event's work items. */
  readonly ref: string;
  /** Its head branch, when known: a workspace checks it out. */
  readonly headBranch?: string;
  /** Whether the head lives in the same repository (a fork's branch is not in the shared clone). */
  readonly headInRepository?: boolean;
  /** On a `closed` event: whether the PR was merged, or closed without merging. */
  readonly merged?: boolean;
}

/** What happened, independent of the tracker's own vocabulary. */
export type InboundKind =
  | "opened"
  | "commented"
  | "reviewed"
  | "review_commented"
  | "labeled"
  | "unlabeled"
  | "closed"
  | "reopened"
  | "updated"
  /** A check or commit status of a pull request's head commit failed (see InboundCheck). */
  | "check_failed";

export const INBOUND_KINDS: readonly InboundKind[] = [
  "opened",
  "commented",
  "reviewed",
  "review_commented",
  "labeled",
  "unlabeled",
  "closed",
  "reopened",
  "updated",
  "check_failed",
];

/**
 * What a pull request review decided, as GitHub names its states (lower case): the structured
 * half of a human gate's answer, next to the gate keywords in a comment's text.
 */
export type ReviewState = "approved" | "changes_requested" | "commented" | "dismissed";

/**
 * A failed check on a pull request's head commit: a GitHub check run (or a check suite's failing
 * runs), a failing commit status, or a local `the-loop item check`. It is a status, not an
 * instruction: its event has no actor and no body, and the log tail it may carry comes from code
 * the pull request's author controls, so it reaches a session only fenced as untrusted output
 * (docs/github.md#ci-failures).
 */
export interface InboundCheck {
  /** Where it came from. */
  readonly source: "check_run" | "check_suite" | "status" | "local";
  /** The check's name (a check run's name, a status's context, a suite's app). */
  readonly name: string;
  /** GitHub's conclusion (`failure`, `timed_out`, `startup_failure`) or a status's state (`failure`, `error`). */
  readonly conclusion: string;
  /** Where a person sees it: from GitHub only ever an https URL on the configured host; a local check's as its recorder gave it (or absent). */
  readonly url?: string;
  /** The commit it ran on (GitHub); the pull request's head when it is current. */
  readonly headSha?: string;
  /** `owner/repo` of the repository it ran in (GitHub). */
  readonly repository?: string;
  /** A GitHub Actions job (its check run's id): the log tail is read from the job-log API at delivery. */
  readonly jobId?: number;
  /** A check suite whose failing runs are to be read (check_suite events, before they are expanded). */
  readonly suiteId?: number;
  /** The pull request numbers the payload names (empty for a fork's pull request). */
  readonly pullNumbers?: readonly number[];
  /** The log tail itself, when the ingress already has it (the local tracker): capped, not yet cleaned. */
  readonly log?: string;
  /**
   * Whether the log may reach the session: the pull request's head branch is the-loop's own or its
   * author is authorized. Decided where the pull request is looked up; absent means withheld.
   */
  readonly logAllowed?: boolean;
  /** Why the log is withheld, for the message (e.g. `the pull request's author mallory is not in routing.authorizedUsers`). */
  readonly logWithheld?: string;
}

/** Kinds whose body is a person's comment: the only text that can carry instructions. */
export const COMMENT_KINDS: ReadonlySet<InboundKind> = new Set(["commented", "reviewed", "review_commented"]);

/** Free text kept for prompts and logs is bounded: per field and in total. */
export const EXCERPT_FIELD_MAX = 3_500;
export const EXCERPT_TOTAL_MAX = 4_000;

export interface InboundEvent {
  readonly source: InboundSource;
  /** Unique per delivery: a GitHub delivery id, `poll-<change id>`, `cli-<uuid>`. */
  readonly deliveryId: string;
  readonly kind: InboundKind;
  /** The tracker's own name for it, for logs (`issue_comment`, `local:commented`). */
  readonly trackerEvent: string;
  /** Work items the event concerns, most authoritative first. Empty: nothing to route. */
  readonly workItems: readonly WorkItem[];
  /**
   * Who did it; null only for events no person did (a status change, an item closing). A person
   * the tracker cannot name (a deleted account) is `ghost`, which no allowlist names.
   */
  readonly actor: string | null;
  /** The comment or review text; null when the event carries none. */
  readonly body: string | null;
  /** The item's labels right after the event. */
  readonly labels: readonly string[];
  /** The label added or removed (`labeled` / `unlabeled`). */
  readonly label?: string;
  /** The item's state right after the event. */
  readonly itemState: ItemState;
  readonly title?: string;
  /**
   * What the event carries, named the same on every ingress path (a GitHub comment's own id, with
   * its kind): the webhook and the poller give one comment different delivery ids, and this is how
   * a comment seen by both is carried out once. Absent when the event carries no such text.
   */
  readonly contentKey?: string;
  /** The tracker's id of the comment, review or review comment the event carries. */
  readonly commentId?: string;
  /** Which kind of text `commentId` names (reactions go to different places for each). */
  readonly commentKind?: "comment" | "review" | "review_comment";
  readonly commentUrl?: string;
  /**
   * For `reviewed` only: the review's state, when the tracker gave one this type names. An
   * unknown state is left out rather than guessed, so nothing reads it as an approval.
   */
  readonly reviewState?: ReviewState;
  readonly pullRequest?: InboundPullRequest;
  /** For `check_failed` only: what failed. */
  readonly check?: InboundCheck;
  /** Work items named through a pull request, by ref, with how they were found; absent for the event's own entity. */
  readonly linkedBy?: Readonly<Record<string, LinkSource>>;
  readonly occurredAt: string;
  /** A bounded excerpt of the payload for prompts (see boundExcerpt). */
  readonly excerpt: Readonly<Record<string, string>>;
  /** Text the boot prompt of a session this event starts ends with (an adoption's note and transcript tail); never from a payload. */
  readonly bootNote?: string;
  /** The branch the checkout of a session this event starts is made on when no pull request names one (an adoption's); never from a payload. */
  readonly checkoutBranch?: string;
}

/** Every id a duplicate of this event may arrive under: its delivery id, and its content key. */
export function deliveryKeys(event: Pick<InboundEvent, "deliveryId" | "contentKey">): readonly string[] {
  return event.contentKey === undefined ? [event.deliveryId] : [event.deliveryId, event.contentKey];
}

/** Keeps each field under EXCERPT_FIELD_MAX and the whole under EXCERPT_TOTAL_MAX characters. */
export function boundExcerpt(fields: Readonly<Record<string, string | null | undefined>>): Record<string, string> {
  const excerpt: Record<string, string> = {};
  let total = 0;
  for (const [key, value] of Object.entries(fields)) {
    if (value === null || value === undefined || value === "") continue;
    const room = EXCERPT_TOTAL_MAX - total;
    if (room <= 0) break;
    const limit = Math.min(EXCERPT_FIELD_MAX, room);
    const text = value.length > limit ? `${value.slice(0, limit)}…` : value;
    excerpt[key] = text;
    total += text.length;
  }
  return excerpt;
}

export interface HandleResult {
  /** False: handling failed and the change should be handed out again next cycle. */
  readonly settled: boolean;
  /**
   * With `settled` false: nothing failed, the event waits for work under way (an adoption's start
   * in the start queue, docs/scale.md), so it is handed out again without counting as a failed attempt.
   */
  readonly held?: true;
}

export interface EventHandler {
  /**
   * Must queue the event before returning (synchronously, in call order): calling handle(a) then
   * handle(b) keeps a before b for the same work item. Resolves once the event is dealt with.
   */
  handle(event: InboundEvent): Promise<HandleResult>;
}
