import { messageOf } from "../../errors.js";
import type { EventSink } from "../../events/index.js";
import { formatWorkItemRef, labelMatches } from "../../workitem/index.js";
import { inboundFromGitHub } from "../github-events.js";
import { closingReferences } from "../github-links.js";
import type { LegacyLedger } from "../legacy-poll-state.js";
import type { PollSourceRuntime, SourceBatch, SourceItem } from "../source.js";
import { ConditionalReads } from "./conditional.js";
import type { GitHubReader } from "./conditional.js";
import {
  advance,
  boundedArmed,
  boundedReviewMarks,
  compareTimes,
  isLater,
  isNew,
  laterOf,
  nextCommentsSince,
  nextSince,
  parseCursor,
  reviewMark,
  setListing,
} from "./cursor.js";
import type { FeedCursor, Mark, RepoCursor } from "./cursor.js";
import { armedNumbers, firstSight } from "./first-sight.js";
import type { FirstSightContext } from "./first-sight.js";
import { legacyCursor } from "./legacy.js";
import { COMMENTS, ISSUE, ISSUES, ISSUE_EVENTS, PER_PAGE, PULL, REVIEW_COMMENTS } from "./rest-shapes.js";
import { isComment, isIssue, isIssueEvent, isPullIssue, isTime, labelsOf, noteInterval, numberIn, onePage, optional, rateLimitOf } from "./rest-shapes.js";
import type { PollInterval, RateLimitLike, RepoName, RestIssue, RestIssueEvent, RestReview } from "./rest-shapes.js";

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
  /** Told about payloads the normalizer refused (`poll.rejected`: not what GitHub sends). */
  readonly events?: EventSink;
  /** Only for X-Poll-Interval: a duration from now, not a boundary. */
  readonly now?: () => Date;
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
  private readonly reads: ConditionalReads;
  private readonly sight: FirstSightContext;
  /** The armed sets as of the latest read, for PRs that close an item in another repository. */
  private readonly armedNow = new Map<string, ReadonlySet<number>>();

  constructor(options: GitHubFeedOptions) {
    this.key = options.key;
    this.client = options.client;
    this.reads = new ConditionalReads(options.client);
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
    this.sight = { client: this.client, reads: this.reads, label: this.label };
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
    const interval: PollInterval = { seconds: 0 };
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
        const result = known === undefined ? { cursor: await firstSight(this.sight, repo, interval), found: [] } : await this.readRepo(repo, known, interval);
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
      // Not what GitHub sends: refused as the receiver refuses such a delivery, and said.
      else if ("rejected" in result) {
        this.events?.emit("poll.rejected", { poll_source: this.key, delivery_id: `poll-${entry.id}`, github_event: entry.name, reason: result.rejected });
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

  /** The cursor an older per-item ledger implies for this source (see legacy.ts). */
  adoptLegacy(ledger: LegacyLedger): string | undefined {
    return legacyCursor(ledger, { host: this.host, repos: this.repos.map((repo) => repo.key), label: this.label });
  }

  // ----------------------------------------------------------------------------------------------
  // A cycle

  private async readRepo(repo: RepoName, known: RepoCursor, interval: PollInterval): Promise<{ cursor: RepoCursor; found: Found[] }> {
    const found: Found[] = [];
    const base = { owner: repo.owner, repo: repo.repo };
    const skip = new Set(known.skip ?? []);
    const skipped = (entry: { id: number; node_id?: string }): boolean =>
      skip.size > 0 && (skip.has(String(entry.id)) || (entry.node_id !== undefined && skip.has(entry.node_id)));

    let armedList = known.armed;
    if (armedList === null && this.label !== null) armedList = await armedNumbers(this.sight, repo, interval);
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
      const kept = labels.filter((label) => !this.isLabel(typeof label === "string" ? label : (label.name ?? "")));
      // A copy: the item may be a cached answer, read again by later cycles.
      return kept.length === labels.length ? item : { ...item, labels: kept };
    };

    // 1. Items that changed: closings, labels, and which pull requests' reviews to read.
    const itemsCursor = { ...known.items };
    const listed = await this.client.list(
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
          found.push(await this.closedEvent(repo, item, item.closed_at, isPull, interval));
        }
        itemsCursor.closed = advance(itemsCursor.closed, item.closed_at, item.number);
      }
      if (this.label !== null) {
        const carries = item.state === "open" && labelsOf(item).some((name) => this.isLabel(name));
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
    const comments = await this.client.list(
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
            : await this.reads.get(ISSUE, { ...base, issue_number: number }, interval);
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
    const reviewComments = await this.client.list(
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
        const pull = await this.reads.get(PULL, { ...base, pull_number: number }, interval);
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
      setListing(reviewCommentsCursor, onePage(reviewComments), nextCommentsSince(known.reviewComments.since, entries, reviewComments.truncated === true));
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
      const all = await this.reads.reviews(repo, item.number, interval);
      const fresh = all.filter(
        (review): review is RestReview & { submitted_at: string } => isTime(review.submitted_at) && isNew(mark, review.submitted_at, review.id),
      );
      reviews[key] = reviewMark(mark, all);
      if (fresh.length === 0) continue;
      const pull = await this.reads.get(PULL, { ...base, pull_number: item.number }, interval);
      // As for a comment's item: what is not a pull request as GitHub sends one carries no review.
      if (pull === undefined || !isIssue(pull)) continue;
      for (const review of fresh) {
        if (skipped(review)) continue;
        found.push({
          at: review.submitted_at,
          rank: RANK.review,
          id: `review-${review.id}`,
          name: "pull_request_review",
          payload: {
            action: "submitted",
            review,
            pull_request: asMadeAt(pull, review.submitted_at),
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

  private async closedEvent(repo: RepoName, item: RestIssue, closedAt: string, isPull: boolean, interval: PollInterval): Promise<Found> {
    const ref = this.refOf(repo, item.number);
    const common = { at: closedAt, rank: RANK.closed, id: `closed-${ref}-${closedAt}` };
    const pull = isPull ? await this.reads.get(PULL, { owner: repo.owner, repo: repo.repo, pull_number: item.number }, interval) : undefined;
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
    interval: PollInterval,
  ): Promise<{ readonly found?: Found; readonly since?: string }> {
    const ref = this.refOf(repo, item.number);
    const name = labelsOf(item).find((label) => this.isLabel(label)) ?? this.label ?? "";
    const base = { owner: repo.owner, repo: repo.repo };
    const history = await this.client.list(ISSUE_EVENTS, { ...base, issue_number: item.number, per_page: PER_PAGE }, { maxPages: 10 });
    noteInterval(interval, history.pollIntervalSeconds);
    // The events are oldest first. Only a whole history tells who put the label on last: the
    // newest events are on the pages not read.
    let labeling: RestIssueEvent | undefined;
    let reopened = false;
    if (!history.notModified && !history.truncated) {
      for (const event of history.items.filter(isIssueEvent)) {
        if (event.event === "labeled" && labelMatches(event.label?.name ?? "", name)) [labeling, reopened] = [event, false];
        else if (event.event === "unlabeled" && labelMatches(event.label?.name ?? "", name)) [labeling, reopened] = [undefined, false];
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
    const pull = isPull ? await this.reads.get(PULL, { ...base, pull_number: item.number }, interval) : undefined;
    const found: Found =
      pull !== undefined
        ? { ...common, name: "pull_request", payload: { action: "labeled", pull_request: pull, label: { name }, sender, repository: this.repositoryOf(repo) } }
        : { ...common, name: "issues", payload: { action: "labeled", issue: item, label: { name }, sender, repository: this.repositoryOf(repo) } };
    return { found, since: at };
  }

  /**
   * Whether events on the item are worth handing out: it carries the label, it has a live
   * session, or it is a pull request whose description closes an item that does.
   */
  private watched(repo: RepoName, item: RestIssue, isPull = isPullIssue(item)): boolean {
    if (this.label === null) return true;
    if (labelsOf(item).some((name) => this.isLabel(name))) return true;
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

  /** Whether `name` is the watched label (never, when every item is watched). */
  private isLabel(name: string): boolean {
    return this.label !== null && labelMatches(name, this.label);
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
