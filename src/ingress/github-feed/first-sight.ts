import type { ConditionalReads, GitHubReader } from "./conditional.js";
import { advance, boundedArmed, compareTimes, createdMark, reviewMark, ARMED_MAX } from "./cursor.js";
import type { Mark, RepoCursor } from "./cursor.js";
import { COMMENTS, ISSUES, PER_PAGE, REVIEW_COMMENTS, isComment, isIssue, isPullIssue, isTime, noteInterval, optional } from "./rest-shapes.js";
import type { PollInterval, RepoName, RestComment, RestIssue } from "./rest-shapes.js";

/**
 * A repository's first sight: its present taken as read, so a new source (or a repository new
 * in a source) replays no history. Also the listing of armed items, which a cursor adopted from
 * an older poller's ledger lacks until its first read.
 */

const ARMED_MAX_PAGES = Math.ceil(ARMED_MAX / PER_PAGE);

/** What a first sight reads with: the feed's client, its conditional reads, its label. */
export interface FirstSightContext {
  readonly client: GitHubReader;
  readonly reads: ConditionalReads;
  /** The watched label; null when every item is watched. */
  readonly label: string | null;
}

/**
 * Takes a repository's present as read. Each boundary is the newest entry's own timestamp with
 * the ids at that second, which is exact: an entry made a moment later in the same second is
 * still news, while nothing that existed is replayed. (The Date header would be the same clock,
 * but it cannot tell which entries of its second existed.)
 */
export async function firstSight(context: FirstSightContext, repo: RepoName, interval: PollInterval): Promise<RepoCursor> {
  const { client } = context;
  const armed = context.label === null ? [] : await armedNumbers(context, repo, interval);
  const items = await newestSecond<RestIssue>(client, repo, ISSUES, { state: "all", sort: "updated", direction: "desc" }, isIssue, interval);
  const seen = items[0]?.updated_at;
  let closed: Mark = {};
  for (const item of items) if (item.closed_at && isTime(item.closed_at)) closed = advance(closed, item.closed_at, item.number);
  // A pull request updated in the newest second may have been reviewed in it: its reviews are
  // marked now, or the first read could not tell them from new ones.
  const reviews: Record<string, Mark> = {};
  for (const item of items) {
    if (isPullIssue(item)) {
      reviews[String(item.number)] = reviewMark({}, await context.reads.reviews(repo, item.number, interval));
    }
  }
  const comments = await newestSecond<RestComment>(client, repo, COMMENTS, { sort: "updated", direction: "desc" }, isComment, interval);
  const reviewComments = await newestSecond<RestComment>(client, repo, REVIEW_COMMENTS, { sort: "updated", direction: "desc" }, isComment, interval);
  return {
    items: { ...optional("since", seen), ...optional("seen", seen), closed },
    comments: { ...optional("since", comments[0]?.updated_at), created: createdMark(comments) },
    reviewComments: { ...optional("since", reviewComments[0]?.updated_at), created: createdMark(reviewComments) },
    armed,
    reviews,
  };
}

/** Open items carrying the label. */
export async function armedNumbers(context: Pick<FirstSightContext, "client" | "label">, repo: RepoName, interval: PollInterval): Promise<number[]> {
  // Labels are compared trimmed (labelMatches): one that is only spaces arms nothing.
  const wanted = context.label?.trim() ?? "";
  if (wanted === "") return [];
  const result = await context.client.list(
    ISSUES,
    { owner: repo.owner, repo: repo.repo, state: "open", labels: wanted, per_page: PER_PAGE },
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
async function newestSecond<T extends { updated_at: string }>(
  client: GitHubReader,
  repo: RepoName,
  route: string,
  params: Record<string, string>,
  check: (value: unknown) => value is T,
  interval: PollInterval,
): Promise<T[]> {
  let top: T[] = [];
  for (const maxPages of [1, 10]) {
    const result = await client.list(route, { owner: repo.owner, repo: repo.repo, ...params, per_page: PER_PAGE }, { maxPages });
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
