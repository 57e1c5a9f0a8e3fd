import { messageOf } from "../errors.js";
import { boundExcerpt } from "../routing/inbound.js";
import type { InboundEvent, InboundKind, InboundPullRequest, LinkSource, ReviewState } from "../routing/inbound.js";
import type { ItemState } from "../trackers/tracker.js";
import { formatWorkItemRef, githubItemUrl, workItemOf } from "../workitem/index.js";
import type { GitHubRef, WorkItem, WorkItemKind } from "../workitem/index.js";
import { branchIssueNumber, closingReferences } from "./github-links.js";
import { checkGitHubPayload } from "./github-payloads.js";
import { checkRunEvent, checkSuiteEvent, statusEvent } from "./github-check-events.js";
import {
  MalformedPayload,
  configuredHost,
  githubRef,
  idOf,
  loginOf,
  nowIso,
  objectOf,
  objectOrUndefined,
  optionalString,
  repositoryOf,
  unsupportedAction,
} from "./github-fields.js";
import type { GitHubEventContext, Json, NormalizeResult, Repository } from "./github-fields.js";

export type { GitHubEventContext, NormalizeResult } from "./github-fields.js";
import type { RoutedGitHubEvent } from "./github-payloads.js";

/**
 * Turns one GitHub webhook delivery (or a payload of the same shape read by the poller or the
 * CLI) into an InboundEvent. It only normalizes: whether the event matters is the router's call.
 * Payloads come from the network: the part of a routed payload the-loop reads is checked against
 * GitHub's shapes (github-payloads.ts) before use, and one that is not what GitHub sends is
 * rejected with a reason — never acted on, never thrown into the receiver. What the-loop does not
 * act on (ping, another event or action) is ignored, whatever its shape.
 */

const ITEM_ACTIONS: ReadonlyMap<string, InboundKind> = new Map<string, InboundKind>([
  ["opened", "opened"],
  ["closed", "closed"],
  ["reopened", "reopened"],
  ["labeled", "labeled"],
  ["unlabeled", "unlabeled"],
  ["edited", "updated"],
]);

const PULL_REQUEST_ACTIONS: ReadonlyMap<string, InboundKind> = new Map<string, InboundKind>([
  ...ITEM_ACTIONS,
  ["synchronize", "updated"],
  ["ready_for_review", "updated"],
]);

export function inboundFromGitHub(name: string, payload: unknown, context: GitHubEventContext): NormalizeResult {
  if (name === "ping") return { ignored: "ping" };
  const normalizer = NORMALIZERS.get(name);
  if (normalizer === undefined) return { ignored: "unsupported-event" };
  const root = objectOrUndefined(payload);
  if (root === undefined) return { rejected: "payload: is not an object" };
  // A commit status has no action: its state is what happened.
  const action = name === "status" ? root.state : root.action;
  if (typeof action !== "string" || action === "") return { rejected: "action: is missing" };
  if (!normalizer.actions.has(action)) return unsupportedAction(action);
  const check = checkGitHubPayload(normalizer.name, root, configuredHost(context));
  if (!check.ok) return { rejected: check.reason };
  try {
    return normalizer.normalize(root, action, context);
  } catch (error) {
    if (error instanceof MalformedPayload) return { rejected: error.message };
    // Nothing in a payload may take the receiver down; an unforeseen shape is still refused.
    return { rejected: messageOf(error) };
  }
}

// ---------------------------------------------------------------------------------------------
// Events

type Normalizer = (root: Json, action: string, context: GitHubEventContext) => NormalizeResult;

/**
 * An event under construction. Each normalizer assigns its fields one by one, in the order the
 * event has always had, instead of spreading partial objects into a literal: a literal with
 * spreads of objects of changing shapes cost the receiver's acknowledgement path more than
 * everything else it normalizes (about 6 of 8 µs per delivery).
 */
type Draft = Record<string, unknown>;

/** What every event takes from its delivery and its item; the normalizer assigns the rest. */
function draftOf(context: GitHubEventContext, kind: InboundKind, trackerEvent: string, item: Item): Draft {
  return {
    source: context.source,
    deliveryId: context.deliveryId,
    kind,
    trackerEvent,
    labels: item.labels,
    itemState: item.state,
    title: item.title,
  };
}

/** Assigns the work items, and for a pull request the PR and how its linked items were found. */
function assignShape(
  event: Draft,
  shape: { readonly workItems: WorkItem[]; readonly pullRequest?: InboundPullRequest; readonly linkedBy?: Record<string, LinkSource> },
): void {
  event.workItems = shape.workItems;
  if (shape.pullRequest !== undefined) event.pullRequest = shape.pullRequest;
  if (shape.linkedBy !== undefined) event.linkedBy = shape.linkedBy;
}

/** Assigns a comment's id and kind (`commentUrl` follows them when the payload has one). */
function assignComment(event: Draft, commentId: string, commentKind: NonNullable<InboundEvent["commentKind"]>, url: string | undefined): void {
  event.commentId = commentId;
  event.commentKind = commentKind;
  if (url !== undefined) event.commentUrl = url;
}

function eventOf(event: Draft, item: Item): NormalizeResult {
  // The webhook and the poller give one comment different delivery ids; its own id is the same on
  // both, so a comment seen by both paths is carried out once.
  if (event.commentId !== undefined && event.commentKind !== undefined) {
    event.contentKey = `github:${item.workItem.host}/${item.workItem.repository}:${String(event.kind)}:${String(event.commentKind)}:${String(event.commentId)}`;
  }
  return { event: event as unknown as InboundEvent };
}

function issuesEvent(root: Json, action: string, context: GitHubEventContext): NormalizeResult {
  const kind = ITEM_ACTIONS.get(action);
  if (kind === undefined) return unsupportedAction(action);
  const repository = repositoryOf(root, context);
  const issue = objectOf(root.issue, "issue");
  const item = itemOf(issue, isPullRequestIssue(issue) ? "pull_request" : "issue", repository);
  const label = kind === "labeled" || kind === "unlabeled" ? labelOf(root) : undefined;
  const event = draftOf(context, kind, `issues.${action}`, item);
  event.workItems = [item.workItem];
  event.actor = actorOf(kind, root.sender);
  // An item's own text is context, not an instruction: only comments may carry one.
  event.body = null;
  if (label !== undefined) event.label = label;
  event.occurredAt = item.updatedAt ?? nowIso();
  event.excerpt = boundExcerpt({ title: item.title, body: kind === "opened" ? item.body : undefined, label });
  return eventOf(event, item);
}

function issueCommentEvent(root: Json, action: string, context: GitHubEventContext): NormalizeResult {
  if (action !== "created") return unsupportedAction(action);
  const repository = repositoryOf(root, context);
  const issue = objectOf(root.issue, "issue");
  const comment = objectOf(root.comment, "comment");
  const isPullRequest = isPullRequestIssue(issue);
  const item = itemOf(issue, isPullRequest ? "pull_request" : "issue", repository);
  const body = optionalString(comment.body, "comment.body") ?? "";
  const shape = isPullRequest ? pullRequestShape(item, repository, undefined, undefined) : { workItems: [item.workItem] };
  const event = draftOf(context, "commented", `issue_comment.${action}`, item);
  assignShape(event, shape);
  event.actor = personOf(comment.user);
  event.body = body;
  assignComment(event, idOf(comment.id, "comment.id"), "comment", optionalString(comment.html_url, "comment.html_url"));
  event.occurredAt = optionalString(comment.created_at, "comment.created_at") ?? nowIso();
  event.excerpt = boundExcerpt({ title: item.title, comment: body });
  return eventOf(event, item);
}

function pullRequestEvent(root: Json, action: string, context: GitHubEventContext): NormalizeResult {
  const kind = PULL_REQUEST_ACTIONS.get(action);
  if (kind === undefined) return unsupportedAction(action);
  const repository = repositoryOf(root, context);
  const pull = objectOf(root.pull_request, "pull_request");
  const item = itemOf(pull, "pull_request", repository);
  const head = headOf(pull, repository);
  const label = kind === "labeled" || kind === "unlabeled" ? labelOf(root) : undefined;
  const shape = pullRequestShape(item, repository, head.branch, head.inRepository);
  const closing = kind === "closed" ? closingOf(pull, root.sender, item) : undefined;
  const event = draftOf(context, kind, `pull_request.${action}`, item);
  if (closing === undefined) {
    assignShape(event, shape);
    event.actor = actorOf(kind, root.sender);
  } else {
    // The PR is replaced where it stood, with whether it was merged.
    assignShape(event, { workItems: shape.workItems, pullRequest: { ...shape.pullRequest, merged: closing.merged }, linkedBy: shape.linkedBy });
    event.actor = closing.actor;
    if (closing.contentKey !== undefined) event.contentKey = closing.contentKey;
  }
  event.body = null;
  if (label !== undefined) event.label = label;
  event.occurredAt = item.updatedAt ?? nowIso();
  event.excerpt = boundExcerpt({ title: item.title, body: kind === "opened" ? item.body : undefined, label });
  return eventOf(event, item);
}

function reviewEvent(root: Json, action: string, context: GitHubEventContext): NormalizeResult {
  if (action !== "submitted") return unsupportedAction(action);
  const repository = repositoryOf(root, context);
  const pull = objectOf(root.pull_request, "pull_request");
  const review = objectOf(root.review, "review");
  const item = itemOf(pull, "pull_request", repository);
  const head = headOf(pull, repository);
  // An approval without words still reaches the router, which decides what an empty review means.
  const body = optionalString(review.body, "review.body") ?? null;
  const state = optionalString(review.state, "review.state");
  const reviewState = reviewStateOf(state);
  const event = draftOf(context, "reviewed", `pull_request_review.${action}`, item);
  assignShape(event, pullRequestShape(item, repository, head.branch, head.inRepository));
  event.actor = personOf(review.user);
  event.body = body;
  assignComment(event, idOf(review.id, "review.id"), "review", optionalString(review.html_url, "review.html_url"));
  if (reviewState !== undefined) event.reviewState = reviewState;
  event.occurredAt = optionalString(review.submitted_at, "review.submitted_at") ?? nowIso();
  event.excerpt = boundExcerpt({ title: item.title, state: state?.toLowerCase(), review: body });
  return eventOf(event, item);
}

function reviewCommentEvent(root: Json, action: string, context: GitHubEventContext): NormalizeResult {
  if (action !== "created") return unsupportedAction(action);
  const repository = repositoryOf(root, context);
  const pull = objectOf(root.pull_request, "pull_request");
  const comment = objectOf(root.comment, "comment");
  const item = itemOf(pull, "pull_request", repository);
  const head = headOf(pull, repository);
  const body = optionalString(comment.body, "comment.body") ?? "";
  const path = optionalString(comment.path, "comment.path");
  const line = lineOf(comment.line) ?? lineOf(comment.original_line);
  const event = draftOf(context, "review_commented", `pull_request_review_comment.${action}`, item);
  assignShape(event, pullRequestShape(item, repository, head.branch, head.inRepository));
  event.actor = personOf(comment.user);
  event.body = body;
  assignComment(event, idOf(comment.id, "comment.id"), "review_comment", optionalString(comment.html_url, "comment.html_url"));
  event.occurredAt = optionalString(comment.created_at, "comment.created_at") ?? nowIso();
  event.excerpt = boundExcerpt({ title: item.title, path, line: line === undefined ? undefined : String(line), comment: body });
  return eventOf(event, item);
}

// A Map, not an object: a state named `constructor` must find nothing.
const REVIEW_STATES: ReadonlyMap<string, ReviewState> = new Map<string, ReviewState>([
  ["approved", "approved"],
  ["changes_requested", "changes_requested"],
  ["commented", "commented"],
  ["dismissed", "dismissed"],
]);

/**
 * A review's state in the event's vocabulary. The webhook writes it in lower case (`approved`),
 * the REST answers the poller reads in upper case (`APPROVED`); both mean the same. Anything else
 * (`PENDING`, a state GitHub adds later) is no state at all: a gate must never guess an approval.
 */
function reviewStateOf(state: string | undefined): ReviewState | undefined {
  return state === undefined ? undefined : REVIEW_STATES.get(state.toLowerCase());
}

/**
 * What a pull request's closing says: whether it was merged, and by whom. A webhook names the
 * closer as its sender; the poller cannot (GitHub's listings do not say who closed an item), but a
 * merged PR names its merger itself. The content key is the closing's own time, the same on both
 * paths, so a closing both paths saw reaches a linked item's session once, and a PR closed again
 * after a reopen is news again.
 */
function closingOf(pull: Json, sender: unknown, item: Item): { merged: boolean; actor: string | null; contentKey?: string } {
  const merged = pull.merged === true || optionalString(pull.merged_at, "pull_request.merged_at") !== undefined;
  const actor = loginOf(sender) ?? (merged ? loginOf(pull.merged_by) : null);
  const closedAt = optionalString(pull.closed_at, "pull_request.closed_at");
  if (closedAt === undefined) return { merged, actor };
  return { merged, actor, contentKey: `github:${item.workItem.host}/${item.workItem.repository}:closed:pull_request:${item.ref.number}:${closedAt}` };
}

interface RoutedEvent {
  readonly name: RoutedGitHubEvent;
  /** The actions acted on: a payload is checked only for those. */
  readonly actions: ReadonlySet<string>;
  readonly normalize: Normalizer;
}

const routed = (name: RoutedGitHubEvent, actions: Iterable<string>, normalize: Normalizer): [string, RoutedEvent] => [
  name,
  { name, actions: new Set(actions), normalize },
];

// A Map, not an object: an event named `constructor` or `__proto__` must find nothing.
const NORMALIZERS: ReadonlyMap<string, RoutedEvent> = new Map<string, RoutedEvent>([
  routed("issues", ITEM_ACTIONS.keys(), issuesEvent),
  routed("issue_comment", ["created"], issueCommentEvent),
  routed("pull_request", PULL_REQUEST_ACTIONS.keys(), pullRequestEvent),
  routed("pull_request_review", ["submitted"], reviewEvent),
  routed("pull_request_review_comment", ["created"], reviewCommentEvent),
  routed("check_run", ["completed"], checkRunEvent),
  routed("check_suite", ["completed"], checkSuiteEvent),
  routed("status", ["failure", "error"], statusEvent),
]);

// ---------------------------------------------------------------------------------------------
// Shapes

interface Item {
  readonly ref: GitHubRef;
  readonly workItem: WorkItem;
  readonly title: string;
  readonly body: string | undefined;
  readonly labels: string[];
  readonly state: ItemState;
  readonly updatedAt: string | undefined;
}

interface PullRequestShape {
  readonly workItems: WorkItem[];
  readonly pullRequest: InboundPullRequest;
  readonly linkedBy?: Record<string, LinkSource>;
}

/**
 * Work items of an event about a pull request: what it links to first (its closing references,
 * then the issue its branch is named after), the PR itself last. The branch is only read when
 * the head lives in the repository (a fork's `issue-3` says nothing about this repository's #3).
 */
function pullRequestShape(item: Item, repository: Repository, headBranch: string | undefined, headInRepository: boolean | undefined): PullRequestShape {
  const own = item.workItem.ref;
  const linkedBy: Record<string, LinkSource> = {};
  const linked: WorkItem[] = [];
  const link = (ref: GitHubRef, source: LinkSource): void => {
    const text = formatWorkItemRef(ref);
    // The first source to name an item wins, and closing references are read first.
    if (text === own || linkedBy[text] !== undefined) return;
    linkedBy[text] = source;
    linked.push(workItemOf(ref, { kind: "issue", url: githubItemUrl(ref, "issue"), id: "" }));
  };
  const context = { host: repository.host, owner: repository.owner, repo: repository.repo, number: item.ref.number };
  for (const ref of closingReferences(item.body, context)) link(ref, "closing-reference");
  const branchNumber = headInRepository === true ? branchIssueNumber(headBranch) : undefined;
  if (branchNumber !== undefined) {
    link(githubRef(repository, branchNumber), "branch");
  }
  const pullRequest: InboundPullRequest = {
    ref: own,
    ...(headBranch !== undefined ? { headBranch } : {}),
    ...(headInRepository !== undefined ? { headInRepository } : {}),
  };
  return linked.length === 0 ? { workItems: [item.workItem], pullRequest } : { workItems: [...linked, item.workItem], pullRequest, linkedBy };
}

function itemOf(raw: Json, kind: WorkItemKind, repository: Repository): Item {
  const what = kind === "pull_request" ? "pull_request" : "issue";
  const number = raw.number;
  if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 1) {
    throw new MalformedPayload(`${what}.number is not a positive whole number`);
  }
  const ref = githubRef(repository, number);
  const url = optionalString(raw.html_url, `${what}.html_url`) ?? githubItemUrl(ref, kind);
  const id = optionalString(raw.node_id, `${what}.node_id`) ?? (typeof raw.id === "number" ? String(raw.id) : "");
  const state = raw.state;
  if (state !== "open" && state !== "closed") throw new MalformedPayload(`${what}.state is neither open nor closed`);
  return {
    ref,
    workItem: workItemOf(ref, { kind, url, id }),
    title: optionalString(raw.title, `${what}.title`) ?? "",
    body: optionalString(raw.body, `${what}.body`),
    labels: labelsOf(raw.labels, `${what}.labels`),
    state,
    updatedAt: optionalString(raw.updated_at, `${what}.updated_at`),
  };
}

function headOf(pull: Json, repository: Repository): { branch: string | undefined; inRepository: boolean | undefined } {
  const head = objectOrUndefined(pull.head);
  if (head === undefined) return { branch: undefined, inRepository: undefined };
  const branch = optionalString(head.ref, "pull_request.head.ref");
  // A head whose repository was deleted comes as null: it is in no repository we can check out.
  const headRepo = objectOrUndefined(head.repo);
  const headName = headRepo === undefined ? undefined : optionalString(headRepo.full_name, "pull_request.head.repo.full_name");
  const base = objectOrUndefined(objectOrUndefined(pull.base)?.repo);
  const baseName = (base === undefined ? undefined : optionalString(base.full_name, "pull_request.base.repo.full_name")) ?? repository.fullName;
  const inRepository = head.repo === undefined ? undefined : headName !== undefined && headName.toLowerCase() === baseName.toLowerCase();
  return { branch, inRepository };
}

// ---------------------------------------------------------------------------------------------
// Fields

/** GitHub serves pull requests through its issues API too; those carry a `pull_request` key. */
function isPullRequestIssue(issue: Json): boolean {
  return issue.pull_request !== undefined && issue.pull_request !== null;
}

/**
 * GitHub's own login for an account it cannot name (a deleted one). It is reserved, so no
 * allowlist names it, which is the point: see personOf.
 */
const UNKNOWN_PERSON = "ghost";

/**
 * Who did something a person does (wrote a comment, added a label, opened an item). The router
 * lets an event without an actor through — that is how a status event passes — so a person the
 * payload cannot name (a deleted account comes as null, a poller may not find who added a label)
 * must not become "no actor": they are GitHub's `ghost`, whom no allowlist names.
 */
function personOf(user: unknown): string {
  return loginOf(user) ?? UNKNOWN_PERSON;
}

/** Only a closure is a status event: whoever closed an item, the router needs no one for it. */
function actorOf(kind: InboundKind, sender: unknown): string | null {
  return kind === "closed" ? loginOf(sender) : personOf(sender);
}

function labelsOf(value: unknown, what: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new MalformedPayload(`${what} is not a list`);
  const names: string[] = [];
  for (const label of value) {
    const name = typeof label === "string" ? label : objectOrUndefined(label)?.name;
    if (typeof name === "string" && name !== "") names.push(name);
  }
  return names;
}

function labelOf(root: Json): string {
  const name = objectOrUndefined(root.label)?.name;
  if (typeof name !== "string" || name === "") throw new MalformedPayload("label.name is missing");
  return name;
}

function lineOf(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}
