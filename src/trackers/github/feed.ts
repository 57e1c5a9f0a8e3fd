import { z } from "zod";
import { messageOf } from "../../errors.js";
import type { EventSink } from "../../events/index.js";
import { inboundFromGitHub } from "../../ingress/github-events.js";
import { closingReferences } from "../../ingress/github-links.js";
import type { LegacyLedger } from "../../ingress/legacy-poll-state.js";
import type { PollSourceRuntime, SourceBatch, SourceItem } from "../../ingress/poller.js";
import { formatWorkItemRef } from "../../workitem/index.js";
import type { GitHubClient } from "./client.js";

/**
 * The GitHub change feed the poller reads: per repository, three conditional, `since`-bounded
 * listings (items, conversation comments, review comments) and, only for pull requests that
 * changed and are watched, their reviews. An idle cycle is answered 304 throughout and costs no
 * rate limit at all; a new comment is seen by the next cycle.
 *
 * What it reads is shaped into webhook payloads and normalized by the one function the webhook
 * receiver uses, so a comment means the same thing whichever way it arrived.
 *
 * The cursor is everything needed to resume exactly: the poller stores it and moves it only once
 * a batch is settled, so reading again from an older cursor hands out the same changes again
 * (under the same ids). Nothing here depends on the local clock: every boundary is a timestamp
 * GitHub wrote.
 */

/** The part of the GitHub client the feed uses (tests may pass anything shaped like it). */
export type GitHubReader = Pick<GitHubClient, "host" | "list" | "get">;

export interface GitHubFeedOptions {
  /** The poll source key, e.g. `github:octo/api,octo/web`. */
  readonly key: string;
  readonly client: GitHubReader;
  /** `owner/repo`, on the client's host. */
  readonly repos: readonly string[];
  /** Items carrying it are watched; null: every item is (routing.spawnOnUnmatched "always"). */
  readonly label: string | null;
  /** Whether events on `ref` matter regardless of the label: a live session, or a PR bound to one. */
  readonly isWatched: (ref: string) => boolean;
  /** Told about payloads the normalizer could not read (a sign GitHub changed a shape). */
  readonly events?: EventSink;
  /** Only for X-Poll-Interval: a duration from now, not a boundary. */
  readonly now?: () => Date;
}

// ------------------------------------------------------------------------------------------------
// Routes and bounds

const ISSUES = "GET /repos/{owner}/{repo}/issues";
const ISSUE = "GET /repos/{owner}/{repo}/issues/{issue_number}";
const ISSUE_EVENTS = "GET /repos/{owner}/{repo}/issues/{issue_number}/events";
const COMMENTS = "GET /repos/{owner}/{repo}/issues/comments";
const REVIEW_COMMENTS = "GET /repos/{owner}/{repo}/pulls/comments";
const PULL = "GET /repos/{owner}/{repo}/pulls/{pull_number}";
const REVIEWS = "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews";

const PER_PAGE = 100;
/**
 * A listing keeps its `since` while its answers stay short, so its ETag stays valid and the cycle
 * after a change is a free 304 rather than a charged 200 for a moved `since`; past this many
 * entries the window moves up to the newest one, which keeps answers about a page long.
 */
const WINDOW_ENTRIES = 50;
const ARMED_MAX = 5_000;
const ARMED_MAX_PAGES = Math.ceil(ARMED_MAX / PER_PAGE);
/** Pull requests whose review boundary is remembered; one forgotten falls back to the item boundary. */
const REVIEW_MARKS_MAX = 500;
/** Ids of entries at one listing's boundary second; more than this in one second is not expected. */
const BOUNDARY_IDS_MAX = 1_000;
const LEGACY_SKIP_MAX = 10_000;
/** ETag-validated answers kept between cycles (items, pull requests, reviews). */
const CACHE_MAX = 2_000;

// ------------------------------------------------------------------------------------------------
// The cursor

/**
 * A boundary of one listing: the greatest timestamp seen and the ids seen at exactly that second.
 * GitHub's timestamps have one-second resolution and `since` is inclusive, so an entry is new iff
 * its time is later, or equal and its id not among `ids`. No `at`: everything is new.
 */
interface Mark {
  at?: string;
  ids?: number[];
}

interface ListingCursor {
  /** ETag of the answer to the request with this `since`. */
  etag?: string;
  /** The `since` parameter sent (an updated_at); trails the newest entry, see WINDOW_ENTRIES. */
  since?: string;
}

interface RepoCursor {
  items: ListingCursor & {
    /** The newest updated_at seen: items at or after it have changed since the last read. */
    seen?: string;
    /** Boundary of closed_at. */
    closed: Mark;
  };
  /** Conversation comments; `created` is the boundary of created_at (an edit is not news). */
  comments: ListingCursor & { created: Mark };
  reviewComments: ListingCursor & { created: Mark };
  /** Open items carrying the label, by number; null: not known yet (adopted from a ledger). */
  armed: number[] | null;
  /** Per pull request number, the boundary of its reviews' submitted_at. */
  reviews: Record<string, Mark>;
  /** Node ids an older poller already forwarded (see adoptLegacy); dropped after the first read. */
  skip?: string[];
}

interface FeedCursor {
  v: 1;
  repos: Record<string, RepoCursor>;
}

const markSchema = z.object({ at: z.string().optional(), ids: z.array(z.number()).optional() });
const listingSchema = { etag: z.string().optional(), since: z.string().optional() };
const cursorSchema = z.object({
  v: z.literal(1),
  repos: z.record(
    z.string(),
    z.object({
      items: z.object({ ...listingSchema, seen: z.string().optional(), closed: markSchema }),
      comments: z.object({ ...listingSchema, created: markSchema }),
      reviewComments: z.object({ ...listingSchema, created: markSchema }),
      armed: z.array(z.number()).nullable(),
      reviews: z.record(z.string(), markSchema),
      skip: z.array(z.string()).optional(),
    }),
  ),
});

function parseCursor(text: string): FeedCursor {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error("the stored GitHub cursor is not JSON; move the poll state file aside to start from now");
  }
  const result = cursorSchema.safeParse(value);
  if (!result.success) throw new Error("the stored GitHub cursor is not one this version reads; move the poll state file aside to start from now");
  return result.data as FeedCursor;
}

// ------------------------------------------------------------------------------------------------
// What the REST API answers (only the fields read here; the rest travels in the payloads)

interface RestUser {
  readonly login?: string;
}
interface RestIssue {
  readonly number: number;
  readonly state: "open" | "closed";
  readonly labels?: readonly (string | { readonly name?: string })[];
  readonly updated_at: string;
  readonly closed_at?: string | null;
  readonly body?: string | null;
  readonly pull_request?: unknown;
}
interface RestComment {
  readonly id: number;
  readonly node_id?: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly issue_url?: string;
  readonly pull_request_url?: string;
  readonly user?: RestUser | null;
}
interface RestReview {
  readonly id: number;
  readonly node_id?: string;
  readonly state?: string;
  readonly submitted_at?: string | null;
  readonly user?: RestUser | null;
}
interface RestIssueEvent {
  readonly event?: string;
  readonly created_at?: string;
  readonly actor?: RestUser | null;
  readonly label?: { readonly name?: string } | null;
}

function isIssue(value: unknown): value is RestIssue {
  const item = value as Partial<RestIssue> | null;
  return (
    typeof item === "object" &&
    item !== null &&
    typeof item.number === "number" &&
    (item.state === "open" || item.state === "closed") &&
    isTime(item.updated_at)
  );
}

function isComment(value: unknown): value is RestComment {
  const comment = value as Partial<RestComment> | null;
  return typeof comment === "object" && comment !== null && typeof comment.id === "number" && isTime(comment.created_at) && isTime(comment.updated_at);
}

function isReview(value: unknown): value is RestReview {
  const review = value as Partial<RestReview> | null;
  return typeof review === "object" && review !== null && typeof review.id === "number";
}

/** The issues API serves pull requests too; those carry a `pull_request` key. */
function isPullIssue(item: RestIssue): boolean {
  return item.pull_request !== undefined && item.pull_request !== null;
}

function isTime(value: unknown): value is string {
  return typeof value === "string" && !Number.isNaN(Date.parse(value));
}

// ------------------------------------------------------------------------------------------------
// Boundaries

function compareTimes(a: string, b: string): number {
  return Date.parse(a) - Date.parse(b);
}

function laterOf(a: string | undefined, b: string): string {
  return a === undefined || compareTimes(b, a) > 0 ? b : a;
}

function isNew(mark: Mark, at: string, id: number): boolean {
  if (mark.at === undefined) return true;
  const order = compareTimes(at, mark.at);
  return order > 0 || (order === 0 && !(mark.ids ?? []).includes(id));
}

/** The boundary after also seeing entry `id` at `at`. */
function advance(mark: Mark, at: string, id: number): Mark {
  if (mark.at === undefined || compareTimes(at, mark.at) > 0) return { at, ids: [id] };
  if (compareTimes(at, mark.at) < 0) return mark;
  const ids = mark.ids ?? [];
  if (ids.includes(id)) return mark;
  return { at: mark.at, ids: [...ids, id].slice(-BOUNDARY_IDS_MAX) };
}

/** `since` for the next request: kept while answers stay short (its ETag then still matches). */
function nextSince(current: string | undefined, entries: readonly { updated_at: string }[], truncated: boolean): string | undefined {
  if (entries.length < WINDOW_ENTRIES && !truncated) return current;
  let newest = current;
  for (const entry of entries) newest = laterOf(newest, entry.updated_at);
  return newest;
}

/** Whole seconds, as GitHub writes them: a boundary from elsewhere must not fall between two. */
function toGitHubSeconds(date: Date): string {
  return new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

// ------------------------------------------------------------------------------------------------

/** One event found in a read, before normalization; sorted by `at` across repositories. */
interface Found {
  readonly at: string;
  /** Tie-break at one second: what happened to an item before what was said about it. */
  readonly rank: number;
  readonly id: string;
  readonly name: string;
  readonly payload: Record<string, unknown>;
}

const RANK = { labeled: 0, comment: 1, review: 2, reviewComment: 3, closed: 4 } as const;

interface RepoName {
  /** Lower case `owner/repo`: the cursor key. */
  readonly key: string;
  readonly owner: string;
  readonly repo: string;
}

interface Cached {
  readonly etag: string;
  readonly data: unknown;
}

/** Thrown by a read when GitHub limits the rate; shaped like GitHubRateLimitError. */
interface RateLimitLike {
  readonly resetAt: Date;
  readonly secondary?: boolean;
}

function rateLimitOf(error: unknown): RateLimitLike | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const resetAt = (error as { resetAt?: unknown }).resetAt;
  return resetAt instanceof Date ? (error as RateLimitLike) : undefined;
}

function isGone(error: unknown): boolean {
  const status = (error as { status?: unknown } | null)?.status;
  return status === 404 || status === 410;
}

export class GitHubFeed implements PollSourceRuntime {
  readonly key: string;
  private readonly client: GitHubReader;
  private readonly host: string;
  private readonly repos: readonly RepoName[];
  private readonly label: string | null;
  private readonly isWatched: (ref: string) => boolean;
  private readonly events: EventSink | undefined;
  private readonly now: () => Date;
  /** Answers behind ETags kept in memory only: a restart costs one full read of each. */
  private readonly cache = new Map<string, Cached>();
  /** The armed sets as of the latest read, for PRs that close an item in another repository. */
  private readonly armedNow = new Map<string, ReadonlySet<number>>();

  constructor(options: GitHubFeedOptions) {
    this.key = options.key;
    this.client = options.client;
    this.host = options.client.host.toLowerCase();
    const names = new Map<string, RepoName>();
    for (const full of options.repos) {
      const [owner, repo, ...rest] = full.split("/");
      if (!owner || !repo || rest.length > 0) throw new RangeError(`a GitHub poll source names repositories as owner/repo, not "${full}"`);
      const key = `${owner}/${repo}`.toLowerCase();
      if (!names.has(key)) names.set(key, { key, owner, repo });
    }
    this.repos = [...names.values()];
    this.label = options.label;
    this.isWatched = options.isWatched;
    this.events = options.events;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Reads every repository. One whose reads fail keeps its old cursor and is reported in `errors`
   * while the others progress; a rate limit stops the read where it is — repositories not read
   * keep their cursors, and the batch says when to come back — unless nothing was read yet, when
   * the error itself is thrown for the poller to back off. Repositories are read one after
   * another, never at once: GitHub meets concurrent requests with secondary rate limits.
   */
  async read(cursorText: string | undefined, signal?: AbortSignal): Promise<SourceBatch> {
    const prior = cursorText === undefined ? undefined : parseCursor(cursorText);
    const next: FeedCursor = { v: 1, repos: {} };
    const found: Found[] = [];
    const errors: string[] = [];
    const interval = { seconds: 0 };
    let limited: RateLimitLike | undefined;
    let read = 0;
    let unread = 0;
    // What the cursor knows is armed, for a pull request that closes an item of a repository read
    // after its own; memory alone would be empty after a restart.
    for (const [key, state] of Object.entries(prior?.repos ?? {})) {
      if (state.armed) this.armedNow.set(key, new Set(state.armed));
    }
    for (const repo of this.repos) {
      const known = prior?.repos[repo.key];
      if (limited !== undefined || signal?.aborted) {
        if (known) next.repos[repo.key] = known;
        unread++;
        continue;
      }
      try {
        // A repository the cursor does not know (new in the list, or its first sight failed) is
        // taken as read like a new source: its history is not replayed.
        const result = known === undefined ? await this.baseline(repo, interval) : await this.readRepo(repo, known, interval);
        next.repos[repo.key] = result.cursor;
        found.push(...result.found);
        read++;
      } catch (error) {
        if (known) next.repos[repo.key] = known;
        const limit = rateLimitOf(error);
        if (limit === undefined) {
          errors.push(`${repo.owner}/${repo.repo}: ${messageOf(error)}`);
          continue;
        }
        if (read === 0) throw error;
        limited = limit;
      }
    }
    // A first sight that read nothing took nothing as read: it fails as a whole, so the poller
    // reports it and takes its baseline when GitHub can be reached.
    if (prior === undefined && read === 0 && errors.length > 0) throw new Error(errors.join("; "));
    for (const [key, state] of Object.entries(next.repos)) {
      if (state.armed) this.armedNow.set(key, new Set(state.armed));
    }

    found.sort((a, b) => compareTimes(a.at, b.at) || a.rank - b.rank);
    const items: SourceItem[] = [];
    for (const entry of found) {
      const result = inboundFromGitHub(entry.name, entry.payload, { deliveryId: `poll-${entry.id}`, source: "poll", defaultHost: this.host });
      if ("event" in result) items.push({ id: entry.id, event: result.event });
      else if (result.ignored.startsWith("malformed-payload")) {
        this.events?.emit("poll.provider_error", { poll_source: this.key, error: `${entry.id}: ${result.ignored}` });
      }
    }

    const pause = limited
      ? { notBefore: limited.resetAt, notBeforeReason: limited.secondary === true ? "secondary-limit" : "rate-limit" }
      : interval.seconds > 0
        ? { notBefore: new Date(this.now().getTime() + interval.seconds * 1000), notBeforeReason: "poll-interval" }
        : {};
    const partial = errors.length > 0 || unread > 0;
    return { items, cursor: JSON.stringify(next), ...pause, ...(errors.length > 0 ? { errors } : {}), ...(partial ? { partial } : {}) };
  }

  /**
   * The cursor an older per-item ledger implies for this source: every repository resumes at the
   * latest time the old poller looked at any of them, so what was said since is forwarded, and
   * what it had already forwarded (its node ids) is skipped.
   */
  adoptLegacy(ledger: LegacyLedger): string | undefined {
    const mine = new Set(this.repos.map((repo) => repo.key));
    let latest: Date | undefined;
    const skip = new Set<string>();
    for (const item of ledger.items) {
      if (item.ref.tracker !== "github" || item.ref.host !== this.host || !mine.has(`${item.ref.owner}/${item.ref.repo}`)) continue;
      if (latest === undefined || item.lastPolledAt > latest) latest = item.lastPolledAt;
      for (const id of item.seenComments) skip.add(id);
    }
    if (latest === undefined) return undefined;
    const since = toGitHubSeconds(latest);
    const skipped = [...skip].slice(-LEGACY_SKIP_MAX);
    const cursor: FeedCursor = { v: 1, repos: {} };
    for (const repo of this.repos) {
      cursor.repos[repo.key] = {
        items: { since, seen: since, closed: { at: since, ids: [] } },
        comments: { since, created: { at: since, ids: [] } },
        reviewComments: { since, created: { at: since, ids: [] } },
        // The ledger does not say what was labelled: the first read takes today's labels as known.
        armed: this.label === null ? [] : null,
        reviews: {},
        ...(skipped.length > 0 ? { skip: skipped } : {}),
      };
    }
    return JSON.stringify(cursor);
  }

  // ----------------------------------------------------------------------------------------------
  // First sight

  /**
   * Takes a repository's present as read. Each boundary is the newest entry's own timestamp with
   * the ids at that second, which is exact: an entry made a moment later in the same second is
   * still news, while nothing that existed is replayed. (The Date header would be the same clock,
   * but it cannot tell which entries of its second existed.)
   */
  private async baseline(repo: RepoName, interval: { seconds: number }): Promise<{ cursor: RepoCursor; found: Found[] }> {
    const armed = this.label === null ? [] : await this.armedNumbers(repo, interval);
    const items = await this.newestSecond<RestIssue>(repo, ISSUES, { state: "all", sort: "updated", direction: "desc" }, isIssue, interval);
    const seen = items[0]?.updated_at;
    let closed: Mark = {};
    for (const item of items) if (item.closed_at && isTime(item.closed_at)) closed = advance(closed, item.closed_at, item.number);
    // A pull request updated in the newest second may have been reviewed in it: its reviews are
    // marked now, or the first read could not tell them from new ones.
    const reviews: Record<string, Mark> = {};
    for (const item of items) {
      if (isPullIssue(item)) {
        reviews[String(item.number)] = reviewMark({}, await this.reviewsOf(repo, item.number, interval));
      }
    }
    const comments = await this.newestSecond<RestComment>(repo, COMMENTS, { sort: "updated", direction: "desc" }, isComment, interval);
    const reviewComments = await this.newestSecond<RestComment>(repo, REVIEW_COMMENTS, { sort: "updated", direction: "desc" }, isComment, interval);
    return {
      cursor: {
        items: { ...optional("since", seen), ...optional("seen", seen), closed },
        comments: { ...optional("since", comments[0]?.updated_at), created: createdMark(comments) },
        reviewComments: { ...optional("since", reviewComments[0]?.updated_at), created: createdMark(reviewComments) },
        armed,
        reviews,
      },
      found: [],
    };
  }

  /** Open items carrying the label. */
  private async armedNumbers(repo: RepoName, interval: { seconds: number }): Promise<number[]> {
    const result = await this.client.list<unknown>(
      ISSUES,
      { owner: repo.owner, repo: repo.repo, state: "open", labels: this.label ?? "", per_page: PER_PAGE },
      { maxPages: ARMED_MAX_PAGES },
    );
    noteInterval(interval, result.pollIntervalSeconds);
    if (result.notModified) return [];
    return boundedArmed(new Set(result.items.filter(isIssue).map((item) => item.number)));
  }

  /**
   * The entries of a listing (sorted newest first by updated_at) that share the newest second.
   * One page is asked for; more only when the whole page is one second.
   */
  private async newestSecond<T extends { updated_at: string }>(
    repo: RepoName,
    route: string,
    params: Record<string, string>,
    check: (value: unknown) => value is T,
    interval: { seconds: number },
  ): Promise<T[]> {
    let top: T[] = [];
    for (const maxPages of [1, 10]) {
      const result = await this.client.list<unknown>(route, { owner: repo.owner, repo: repo.repo, ...params, per_page: PER_PAGE }, { maxPages });
      noteInterval(interval, result.pollIntervalSeconds);
      if (result.notModified) break;
      const entries = result.items.filter(check);
      const newest = entries[0]?.updated_at;
      if (newest === undefined) break;
      top = entries.filter((entry) => compareTimes(entry.updated_at, newest) === 0);
      if (top.length < entries.length || result.truncated !== true) break;
    }
    return top;
  }

  // ----------------------------------------------------------------------------------------------
  // A cycle

  private async readRepo(repo: RepoName, known: RepoCursor, interval: { seconds: number }): Promise<{ cursor: RepoCursor; found: Found[] }> {
    const found: Found[] = [];
    const base = { owner: repo.owner, repo: repo.repo };
    const skip = new Set(known.skip ?? []);
    const skipped = (entry: { id: number; node_id?: string }): boolean =>
      skip.size > 0 && (skip.has(String(entry.id)) || (entry.node_id !== undefined && skip.has(entry.node_id)));

    let armedList = known.armed;
    if (armedList === null && this.label !== null) armedList = await this.armedNumbers(repo, interval);
    const armed = new Set(armedList ?? []);
    this.armedNow.set(repo.key, armed);
    // What a comment, review or review comment met: an item armed before this read, or one whose
    // labelling this read found no later than the text was written. The payload carries the item
    // as it is now, so without this a label put on after a start would arm that start — which the
    // webhook, whose payload holds the labels of the moment, refuses (a start counts only when it
    // is given while the item is armed).
    const armedBefore: ReadonlySet<number> = new Set(armed);
    const armedSince = new Map<number, string>();
    const asMadeAt = <T extends RestIssue>(item: T, at: string): T => {
      if (this.label === null || armedBefore.has(item.number)) return item;
      const since = armedSince.get(item.number);
      if (since !== undefined && compareTimes(since, at) <= 0) return item;
      const labels = item.labels ?? [];
      const kept = labels.filter((label) => !sameLabel(typeof label === "string" ? label : (label.name ?? ""), this.label));
      // A copy: the item may be a cached answer, read again by later cycles.
      return kept.length === labels.length ? item : { ...item, labels: kept };
    };

    // 1. Items that changed: closings, labels, and which pull requests' reviews to read.
    const itemsCursor = { ...known.items };
    const listed = await this.client.list<unknown>(
      ISSUES,
      { ...base, state: "all", sort: "updated", direction: "asc", per_page: PER_PAGE, ...optional("since", known.items.since) },
      optional("etag", known.items.etag),
    );
    noteInterval(interval, listed.pollIntervalSeconds);
    const byNumber = new Map<number, RestIssue>();
    const changed: RestIssue[] = [];
    if (!listed.notModified) {
      const entries = listed.items.filter(isIssue);
      for (const item of entries) {
        byNumber.set(item.number, item);
        if (known.items.seen === undefined || compareTimes(item.updated_at, known.items.seen) >= 0) changed.push(item);
        itemsCursor.seen = laterOf(itemsCursor.seen, item.updated_at);
      }
      setListing(itemsCursor, onePage(listed), nextSince(known.items.since, entries, listed.truncated === true));
    }
    for (const item of changed) {
      const isPull = isPullIssue(item);
      if (item.state === "closed" && isTime(item.closed_at)) {
        // Against the boundary of the last read: this listing is in order of update, not of
        // closing, so an item closed earlier may come after one closed later.
        if (isNew(known.items.closed, item.closed_at, item.number) && this.closingWatched(repo, item, isPull)) {
          found.push(await this.closedEvent(repo, item, isPull, interval));
        }
        itemsCursor.closed = advance(itemsCursor.closed, item.closed_at, item.number);
      }
      if (this.label !== null) {
        const carries = item.state === "open" && labelsOf(item).some((name) => sameLabel(name, this.label));
        if (carries && !armed.has(item.number)) {
          armed.add(item.number);
          const { found: labeled, since } = await this.labeledEvent(repo, item, isPull, interval);
          if (labeled !== undefined) found.push(labeled);
          if (since !== undefined) armedSince.set(item.number, since);
        } else if (!carries) {
          armed.delete(item.number);
        }
      }
    }
    if (!listed.notModified && listed.truncated) {
      // Items past the pages read were updated later but may have closed earlier than any
      // closing read here, and a pull request among them may have been reviewed before `seen`:
      // both boundaries wait until a read reaches the end. (A closing read again meanwhile
      // keeps its id.)
      itemsCursor.closed = known.items.closed;
      if (known.items.seen === undefined) delete itemsCursor.seen;
      else itemsCursor.seen = known.items.seen;
    }
    // Only once every item of the listing is armed or not: a pull request may close one that
    // comes later in it.
    const reviewsToRead = changed.filter((item) => isPullIssue(item) && this.watched(repo, item));

    // 2. Conversation comments, on issues and pull requests alike.
    const commentsCursor = { ...known.comments };
    const comments = await this.client.list<unknown>(
      COMMENTS,
      { ...base, sort: "created", direction: "asc", per_page: PER_PAGE, ...optional("since", known.comments.since) },
      optional("etag", known.comments.etag),
    );
    noteInterval(interval, comments.pollIntervalSeconds);
    if (!comments.notModified) {
      const entries = comments.items.filter(isComment);
      for (const comment of entries) {
        if (!isNew(known.comments.created, comment.created_at, comment.id)) continue;
        commentsCursor.created = advance(commentsCursor.created, comment.created_at, comment.id);
        const number = numberIn(comment.issue_url, "issues");
        if (number === undefined || skipped(comment)) continue;
        const listed = byNumber.get(number);
        const item =
          listed !== undefined && (this.watched(repo, listed) || !isLater(comment.created_at, listed.updated_at))
            ? listed
            : await this.fetch<RestIssue>(ISSUE, { ...base, issue_number: number }, interval);
        if (item === undefined || !isIssue(item) || !this.watched(repo, item)) continue;
        found.push({
          at: comment.created_at,
          rank: RANK.comment,
          id: `comment-${comment.id}`,
          name: "issue_comment",
          payload: {
            action: "created",
            issue: asMadeAt(item, comment.created_at),
            comment,
            sender: comment.user ?? null,
            repository: this.repositoryOf(repo),
          },
        });
      }
      setListing(commentsCursor, onePage(comments), nextCommentsSince(known.comments.since, entries, comments.truncated === true));
    }

    // 3. Review comments (on a pull request's diff).
    const reviewCommentsCursor = { ...known.reviewComments };
    const reviewComments = await this.client.list<unknown>(
      REVIEW_COMMENTS,
      { ...base, sort: "created", direction: "asc", per_page: PER_PAGE, ...optional("since", known.reviewComments.since) },
      optional("etag", known.reviewComments.etag),
    );
    noteInterval(interval, reviewComments.pollIntervalSeconds);
    if (!reviewComments.notModified) {
      const entries = reviewComments.items.filter(isComment);
      for (const comment of entries) {
        if (!isNew(known.reviewComments.created, comment.created_at, comment.id)) continue;
        reviewCommentsCursor.created = advance(reviewCommentsCursor.created, comment.created_at, comment.id);
        const number = numberIn(comment.pull_request_url, "pulls");
        if (number === undefined || skipped(comment)) continue;
        const listedItem = byNumber.get(number);
        const listedWatched = listedItem !== undefined && this.watched(repo, listedItem);
        // The item listing tells whether the PR is watched without asking for it, unless the
        // comment is newer than what the listing saw of the PR.
        if (listedItem !== undefined && !listedWatched && !isLater(comment.created_at, listedItem.updated_at)) continue;
        const pull = await this.fetch<RestIssue>(PULL, { ...base, pull_number: number }, interval);
        if (pull === undefined || !isIssue(pull) || (!listedWatched && !this.watched(repo, pull, true))) continue;
        found.push({
          at: comment.created_at,
          rank: RANK.reviewComment,
          id: `review-comment-${comment.id}`,
          name: "pull_request_review_comment",
          payload: {
            action: "created",
            comment,
            pull_request: asMadeAt(pull, comment.created_at),
            sender: comment.user ?? null,
            repository: this.repositoryOf(repo),
          },
        });
      }
      setListing(
        reviewCommentsCursor,
        onePage(reviewComments),
        nextCommentsSince(known.reviewComments.since, entries, reviewComments.truncated === true),
      );
    }

    // 4. Reviews, only of the pull requests that changed and are watched. A review shows in the
    // item listing only through the PR's updated_at, so one submitted within the very second of
    // the PR's previous update, after that update was read, waits for the PR's next change: the
    // price of not asking every watched PR for its reviews every cycle.
    const reviews: Record<string, Mark> = { ...known.reviews };
    for (const item of reviewsToRead) {
      const key = String(item.number);
      // A PR whose reviews were never read: a review is new when it is not older than the last
      // read of the item listing (submitting one updates the PR, so an older one was there then).
      const mark: Mark = reviews[key] ?? (known.items.seen === undefined ? {} : { at: known.items.seen, ids: [] });
      const all = await this.reviewsOf(repo, item.number, interval);
      const fresh = all.filter((review) => isTime(review.submitted_at) && isNew(mark, review.submitted_at, review.id));
      reviews[key] = reviewMark(mark, all);
      if (fresh.length === 0) continue;
      const pull = await this.fetch<RestIssue>(PULL, { ...base, pull_number: item.number }, interval);
      if (pull === undefined) continue;
      for (const review of fresh) {
        if (skipped(review)) continue;
        found.push({
          at: review.submitted_at as string,
          rank: RANK.review,
          id: `review-${review.id}`,
          name: "pull_request_review",
          payload: {
            action: "submitted",
            review,
            pull_request: asMadeAt(pull, review.submitted_at as string),
            sender: review.user ?? null,
            repository: this.repositoryOf(repo),
          },
        });
      }
    }

    return {
      cursor: {
        items: itemsCursor,
        comments: commentsCursor,
        reviewComments: reviewCommentsCursor,
        armed: this.label === null ? [] : boundedArmed(armed),
        reviews: boundedReviewMarks(reviews),
        // No `skip`: this read has passed every entry an adopted ledger's poller had forwarded.
      },
      found,
    };
  }

  private async closedEvent(repo: RepoName, item: RestIssue, isPull: boolean, interval: { seconds: number }): Promise<Found> {
    const ref = this.refOf(repo, item.number);
    const common = { at: item.closed_at as string, rank: RANK.closed, id: `closed-${ref}-${item.closed_at as string}` };
    const pull = isPull ? await this.fetch<RestIssue>(PULL, { owner: repo.owner, repo: repo.repo, pull_number: item.number }, interval) : undefined;
    // Who closed it is not in the item (a merged PR names its merger); a close needs no authorization.
    return pull !== undefined
      ? { ...common, name: "pull_request", payload: { action: "closed", pull_request: pull, sender: null, repository: this.repositoryOf(repo) } }
      : { ...common, name: "issues", payload: { action: "closed", issue: item, sender: null, repository: this.repositoryOf(repo) } };
  }

  /**
   * A label arming an item. Who added it is read from the item's events, so the router checks
   * that person's authorization as it would for a webhook's sender. No `found` when the item is
   * armed without anyone arming it now: it was reopened with the label on, or its events do not
   * show who put the label on (then it is said, and it arms nothing: an event without an actor
   * would pass authorization). `since`: when the label was put on, when the events tell.
   */
  private async labeledEvent(
    repo: RepoName,
    item: RestIssue,
    isPull: boolean,
    interval: { seconds: number },
  ): Promise<{ readonly found?: Found; readonly since?: string }> {
    const ref = this.refOf(repo, item.number);
    const name = labelsOf(item).find((label) => sameLabel(label, this.label)) ?? this.label ?? "";
    const base = { owner: repo.owner, repo: repo.repo };
    const history = await this.client.list<RestIssueEvent>(ISSUE_EVENTS, { ...base, issue_number: item.number, per_page: PER_PAGE }, { maxPages: 10 });
    noteInterval(interval, history.pollIntervalSeconds);
    // The events are oldest first. Only a whole history tells who put the label on last: the
    // newest events are on the pages not read.
    let labeling: RestIssueEvent | undefined;
    let reopened = false;
    if (!history.notModified && !history.truncated) {
      for (const event of history.items) {
        if (event.event === "labeled" && sameLabel(event.label?.name ?? "", name)) [labeling, reopened] = [event, false];
        else if (event.event === "unlabeled" && sameLabel(event.label?.name ?? "", name)) [labeling, reopened] = [undefined, false];
        else if (event.event === "reopened") reopened = labeling !== undefined;
      }
    }
    // Reopened with the label still on: nobody armed it now, so nobody's arming is handed out.
    if (reopened) return isTime(labeling?.created_at) ? { since: labeling.created_at } : {};
    const sender = labeling?.actor;
    if (labeling === undefined || typeof sender?.login !== "string" || sender.login === "") {
      this.events?.emit("poll.provider_error", {
        poll_source: this.key,
        error: `${repo.owner}/${repo.repo}#${item.number}: who added the label "${name}" is not in the item's events, so it arms nothing; take the label off and put it back to arm it`,
      });
      return {};
    }
    // The labelling's own time: the same whenever it is read (the item's updated_at moves with
    // every later change), so a labelling settled once keeps its id.
    const at = isTime(labeling.created_at) ? labeling.created_at : item.updated_at;
    const common = { at, rank: RANK.labeled, id: `labeled-${ref}-${at}` };
    const pull = isPull ? await this.fetch<RestIssue>(PULL, { ...base, pull_number: item.number }, interval) : undefined;
    const found: Found =
      pull !== undefined
        ? { ...common, name: "pull_request", payload: { action: "labeled", pull_request: pull, label: { name }, sender, repository: this.repositoryOf(repo) } }
        : { ...common, name: "issues", payload: { action: "labeled", issue: item, label: { name }, sender, repository: this.repositoryOf(repo) } };
    return { found, since: at };
  }

  private async reviewsOf(repo: RepoName, number: number, interval: { seconds: number }): Promise<RestReview[]> {
    const key = `reviews:${repo.key}#${number}`;
    const cached = this.cache.get(key);
    let result;
    try {
      result = await this.client.list<unknown>(
        REVIEWS,
        { owner: repo.owner, repo: repo.repo, pull_number: number, per_page: PER_PAGE },
        optional("etag", cached?.etag),
      );
    } catch (error) {
      if (isGone(error)) return [];
      throw error;
    }
    noteInterval(interval, result.pollIntervalSeconds);
    let items: unknown[];
    if (result.notModified) items = (cached?.data as unknown[] | undefined) ?? [];
    else {
      items = result.items;
      const etag = onePage(result);
      if (etag !== undefined) this.remember(key, { etag, data: items });
      // A longer answer's ETag covers its first page only: a review on a later page would be
      // answered 304 with what is kept here. Such a list is read whole each time.
      else this.cache.delete(key);
    }
    return items.filter(isReview).filter((review) => review.state !== "PENDING");
  }

  /** One resource behind an ETag kept in memory; undefined when it is gone. */
  private async fetch<T>(route: string, params: Record<string, string | number>, interval: { seconds: number }): Promise<T | undefined> {
    const key = `${route} ${JSON.stringify(params)}`;
    const cached = this.cache.get(key);
    let result;
    try {
      result = await this.client.get<T>(route, params, optional("etag", cached?.etag));
    } catch (error) {
      if (isGone(error)) return undefined;
      throw error;
    }
    noteInterval(interval, result.pollIntervalSeconds);
    if (result.notModified) {
      if (cached !== undefined) return cached.data as T;
      // A 304 without a cached answer cannot happen (no ETag was sent); read it whole.
      const whole = await this.client.get<T>(route, params);
      return whole.notModified ? undefined : whole.data;
    }
    if (result.etag !== undefined) this.remember(key, { etag: result.etag, data: result.data });
    return result.data;
  }

  private remember(key: string, entry: Cached): void {
    this.cache.delete(key);
    this.cache.set(key, entry);
    // Maps iterate in insertion order: the first key is the least recently stored.
    if (this.cache.size > CACHE_MAX) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
  }

  /**
   * Whether events on the item are worth handing out: it carries the label, it has a live
   * session, or it is a pull request whose description closes an item that does.
   */
  private watched(repo: RepoName, item: RestIssue, isPull = isPullIssue(item)): boolean {
    if (this.label === null) return true;
    if (labelsOf(item).some((name) => sameLabel(name, this.label))) return true;
    if (this.isWatched(this.refOf(repo, item.number))) return true;
    if (!isPull) return false;
    for (const target of closingReferences(item.body, { host: this.host, owner: repo.owner, repo: repo.repo, number: item.number })) {
      if (this.isWatched(formatWorkItemRef(target))) return true;
      if (this.armedNow.get(`${target.owner}/${target.repo}`)?.has(target.number) === true) return true;
    }
    return false;
  }

  /**
   * Whether an item's closing is worth handing out: it has a live session (which it ends), or it
   * is a pull request bound to, or closing, an item that has one (whose agent is told).
   */
  private closingWatched(repo: RepoName, item: RestIssue, isPull: boolean): boolean {
    if (this.isWatched(this.refOf(repo, item.number))) return true;
    if (!isPull) return false;
    const context = { host: this.host, owner: repo.owner, repo: repo.repo, number: item.number };
    return closingReferences(item.body, context).some((target) => this.isWatched(formatWorkItemRef(target)));
  }

  private refOf(repo: RepoName, number: number): string {
    return formatWorkItemRef({ tracker: "github", host: this.host, owner: repo.owner.toLowerCase(), repo: repo.repo.toLowerCase(), number });
  }

  /** The payload's repository: its URL carries the client's host, so refs match this feed's. */
  private repositoryOf(repo: RepoName): Record<string, unknown> {
    return {
      full_name: `${repo.owner}/${repo.repo}`,
      name: repo.repo,
      owner: { login: repo.owner },
      html_url: `https://${this.host}/${repo.owner}/${repo.repo}`,
    };
  }
}

// ------------------------------------------------------------------------------------------------

function noteInterval(interval: { seconds: number }, seconds: number | undefined): void {
  if (seconds !== undefined && seconds > interval.seconds) interval.seconds = seconds;
}

/**
 * The ETag worth keeping from a listing's answer: only one that fits on one page. The ETag is
 * the first page's, so for a longer listing a change on a later page would still be answered 304.
 */
function onePage(result: { items: readonly unknown[]; etag?: string; truncated: boolean }): string | undefined {
  return result.items.length < PER_PAGE && !result.truncated ? result.etag : undefined;
}

/** Whether `a` is a later second than `b`. */
function isLater(a: string, b: string): boolean {
  return compareTimes(a, b) > 0;
}

/**
 * `since` after a read of a comment listing, which is in order of creation. When it was cut at
 * its page bound, every entry not read was created no earlier than the last one read, so was
 * updated no earlier either: resuming there loses none of them. (In order of update, one edited
 * later would be past the cut while the boundary of creation moved past it.)
 */
function nextCommentsSince(current: string | undefined, entries: readonly RestComment[], truncated: boolean): string | undefined {
  const last = entries.at(-1)?.created_at;
  if (truncated && last !== undefined && (current === undefined || isLater(last, current))) return last;
  // Not cut, or cut within entries all created before `since` (edits of old comments): then the
  // newest update is the only way forward.
  return nextSince(current, entries, truncated);
}

function setListing(cursor: ListingCursor, etag: string | undefined, since: string | undefined): void {
  // An ETag answers one exact request: with `since` moved it would never match again.
  if (etag !== undefined && since === cursor.since) cursor.etag = etag;
  else delete cursor.etag;
  if (since === undefined) delete cursor.since;
  else cursor.since = since;
}

function createdMark(entries: readonly RestComment[]): Mark {
  const newest = entries[0]?.updated_at;
  if (newest === undefined) return {};
  // Nothing was created after the newest update; what was created in that very second is listed.
  return {
    at: newest,
    ids: entries.filter((entry) => compareTimes(entry.created_at, newest) === 0).map((entry) => entry.id),
  };
}

function reviewMark(mark: Mark, reviews: readonly RestReview[]): Mark {
  let next = mark;
  for (const review of reviews) if (isTime(review.submitted_at)) next = advance(next, review.submitted_at, review.id);
  return next;
}

function boundedArmed(armed: ReadonlySet<number>): number[] {
  // The newest items are the likeliest to be labelled again; an item dropped here only repeats
  // a `labeled` event should it change.
  return [...armed].sort((a, b) => a - b).slice(-ARMED_MAX);
}

function boundedReviewMarks(marks: Record<string, Mark>): Record<string, Mark> {
  const entries = Object.entries(marks);
  if (entries.length <= REVIEW_MARKS_MAX) return marks;
  entries.sort(([, a], [, b]) => (a.at === undefined ? -1 : b.at === undefined ? 1 : compareTimes(a.at, b.at)));
  return Object.fromEntries(entries.slice(-REVIEW_MARKS_MAX));
}

function labelsOf(item: { labels?: RestIssue["labels"] }): string[] {
  const names: string[] = [];
  for (const label of item.labels ?? []) {
    const name = typeof label === "string" ? label : label.name;
    if (typeof name === "string" && name !== "") names.push(name);
  }
  return names;
}

function sameLabel(name: string, label: string | null): boolean {
  return label !== null && name.toLowerCase() === label.toLowerCase();
}

/** The number at the end of `.../issues/12` or `.../pulls/12`. */
function numberIn(url: string | undefined, section: "issues" | "pulls"): number | undefined {
  const match = url === undefined ? null : new RegExp(`/${section}/([0-9]+)$`).exec(url);
  return match ? Number(match[1]) : undefined;
}

// exactOptionalPropertyTypes-friendly: leave a key out rather than set it to undefined.
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
