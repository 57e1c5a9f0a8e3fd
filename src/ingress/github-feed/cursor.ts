import { z } from "zod";
import { isTime } from "./rest-shapes.js";
import type { RestComment, RestReview } from "./rest-shapes.js";

/**
 * The GitHub feed's cursor and the arithmetic on it, all pure: which entry is new against a
 * boundary, how a boundary and a listing's `since` move after a read, and how the stored cursor
 * is read back. The cursor is everything needed to resume exactly; nothing here depends on the
 * local clock, every boundary is a timestamp GitHub wrote.
 */

/**
 * A listing keeps its `since` while its answers stay short, so its ETag stays valid and the cycle
 * after a change is a free 304 rather than a charged 200 for a moved `since`; past this many
 * entries the window moves up to the newest one, which keeps answers about a page long.
 */
export const WINDOW_ENTRIES = 50;
/** Armed item numbers kept per repository. */
export const ARMED_MAX = 5_000;
/** Pull requests whose review boundary is remembered; one forgotten falls back to the item boundary. */
export const REVIEW_MARKS_MAX = 500;
/** Ids of entries at one listing's boundary second; more than this in one second is not expected. */
export const BOUNDARY_IDS_MAX = 1_000;

/**
 * A boundary of one listing: the greatest timestamp seen and the ids seen at exactly that second.
 * GitHub's timestamps have one-second resolution and `since` is inclusive, so an entry is new iff
 * its time is later, or equal and its id not among `ids`. No `at`: everything is new.
 */
export interface Mark {
  at?: string;
  ids?: number[];
}

export interface ListingCursor {
  /** ETag of the answer to the request with this `since`. */
  etag?: string;
  /** The `since` parameter sent (an updated_at); trails the newest entry, see WINDOW_ENTRIES. */
  since?: string;
}

export interface RepoCursor {
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
  /** Node ids an older poller already forwarded (see legacy.ts); dropped after the first read. */
  skip?: string[];
}

export interface FeedCursor {
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

/** The stored cursor; throws with the fix when it is not JSON or not one this version reads. */
export function parseCursor(text: string): FeedCursor {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error("the stored GitHub cursor is not JSON; move the poll state file aside to start from now");
  }
  const result = cursorSchema.safeParse(value);
  if (!result.success) throw new Error("the stored GitHub cursor is not one this version reads; move the poll state file aside to start from now");
  return result.data;
}

// ------------------------------------------------------------------------------------------------
// Times

export function compareTimes(a: string, b: string): number {
  return Date.parse(a) - Date.parse(b);
}

export function laterOf(a: string | undefined, b: string): string {
  return a === undefined || compareTimes(b, a) > 0 ? b : a;
}

/** Whether `a` is a later second than `b`. */
export function isLater(a: string, b: string): boolean {
  return compareTimes(a, b) > 0;
}

/** Whole seconds, as GitHub writes them: a boundary from elsewhere must not fall between two. */
export function toGitHubSeconds(date: Date): string {
  return new Date(Math.floor(date.getTime() / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

// ------------------------------------------------------------------------------------------------
// Boundaries

export function isNew(mark: Mark, at: string, id: number): boolean {
  if (mark.at === undefined) return true;
  const order = compareTimes(at, mark.at);
  return order > 0 || (order === 0 && !(mark.ids ?? []).includes(id));
}

/** The boundary after also seeing entry `id` at `at`. */
export function advance(mark: Mark, at: string, id: number): Mark {
  if (mark.at === undefined || compareTimes(at, mark.at) > 0) return { at, ids: [id] };
  if (compareTimes(at, mark.at) < 0) return mark;
  const ids = mark.ids ?? [];
  if (ids.includes(id)) return mark;
  return { at: mark.at, ids: [...ids, id].slice(-BOUNDARY_IDS_MAX) };
}

/** The boundary of a comment listing's first sight, from its entries newest (by update) first. */
export function createdMark(entries: readonly RestComment[]): Mark {
  const newest = entries[0]?.updated_at;
  if (newest === undefined) return {};
  // Nothing was created after the newest update; what was created in that very second is listed.
  return {
    at: newest,
    ids: entries.filter((entry) => compareTimes(entry.created_at, newest) === 0).map((entry) => entry.id),
  };
}

/** A pull request's review boundary after also seeing `reviews` (unsubmitted ones do not count). */
export function reviewMark(mark: Mark, reviews: readonly RestReview[]): Mark {
  let next = mark;
  for (const review of reviews) if (isTime(review.submitted_at)) next = advance(next, review.submitted_at, review.id);
  return next;
}

// ------------------------------------------------------------------------------------------------
// Listings

/** `since` for the next request: kept while answers stay short (its ETag then still matches). */
export function nextSince(current: string | undefined, entries: readonly { updated_at: string }[], truncated: boolean): string | undefined {
  if (entries.length < WINDOW_ENTRIES && !truncated) return current;
  let newest = current;
  for (const entry of entries) newest = laterOf(newest, entry.updated_at);
  return newest;
}

/**
 * `since` after a read of a comment listing, which is in order of creation. When it was cut at
 * its page bound, every entry not read was created no earlier than the last one read, so was
 * updated no earlier either: resuming there loses none of them. (In order of update, one edited
 * later would be past the cut while the boundary of creation moved past it.)
 */
export function nextCommentsSince(current: string | undefined, entries: readonly RestComment[], truncated: boolean): string | undefined {
  const last = entries.at(-1)?.created_at;
  if (truncated && last !== undefined && (current === undefined || isLater(last, current))) return last;
  // Not cut, or cut within entries all created before `since` (edits of old comments): then the
  // newest update is the only way forward.
  return nextSince(current, entries, truncated);
}

/** Records a listing's answer in its cursor (in place). */
export function setListing(cursor: ListingCursor, etag: string | undefined, since: string | undefined): void {
  // An ETag answers one exact request: with `since` moved it would never match again.
  if (etag !== undefined && since === cursor.since) cursor.etag = etag;
  else delete cursor.etag;
  if (since === undefined) delete cursor.since;
  else cursor.since = since;
}

// ------------------------------------------------------------------------------------------------
// Bounds

export function boundedArmed(armed: ReadonlySet<number>): number[] {
  // The newest items are the likeliest to be labelled again; an item dropped here only repeats
  // a `labeled` event should it change.
  return [...armed].sort((a, b) => a - b).slice(-ARMED_MAX);
}

export function boundedReviewMarks(marks: Record<string, Mark>): Record<string, Mark> {
  const entries = Object.entries(marks);
  if (entries.length <= REVIEW_MARKS_MAX) return marks;
  entries.sort(([, a], [, b]) => (a.at === undefined ? -1 : b.at === undefined ? 1 : compareTimes(a.at, b.at)));
  return Object.fromEntries(entries.slice(-REVIEW_MARKS_MAX));
}
