import type { LegacyLedger } from "../legacy-poll-state.js";
import { toGitHubSeconds } from "./cursor.js";
import type { FeedCursor } from "./cursor.js";

/**
 * Adopting the state of an older poller, which kept a per-item ledger (`legacy-poll-state.ts`)
 * instead of a cursor: the feed's first cursor is derived from it, so an upgrade neither replays
 * history nor loses what was said while the daemon was being upgraded.
 */

/** Node ids of forwarded entries carried into the cursor; the oldest beyond this are let go. */
const LEGACY_SKIP_MAX = 10_000;

/** What a GitHub feed source is, as far as adopting a ledger goes. */
export interface LegacySource {
  /** The client's host, lower case. */
  readonly host: string;
  /** The cursor keys of its repositories: lower case `owner/repo`. */
  readonly repos: readonly string[];
  /** The watched label; null when every item is watched. */
  readonly label: string | null;
}

/**
 * The cursor a ledger implies for this source: every repository resumes at the latest time the
 * old poller looked at any of them, so what was said since is forwarded, and what it had already
 * forwarded (its node ids) is skipped. Undefined when the ledger knows none of its repositories.
 */
export function legacyCursor(ledger: LegacyLedger, source: LegacySource): string | undefined {
  const mine = new Set(source.repos);
  let latest: Date | undefined;
  const skip = new Set<string>();
  for (const item of ledger.items) {
    if (item.ref.tracker !== "github" || item.ref.host !== source.host || !mine.has(`${item.ref.owner}/${item.ref.repo}`)) continue;
    if (latest === undefined || item.lastPolledAt > latest) latest = item.lastPolledAt;
    for (const id of item.seenComments) skip.add(id);
  }
  if (latest === undefined) return undefined;
  const since = toGitHubSeconds(latest);
  const skipped = [...skip].slice(-LEGACY_SKIP_MAX);
  const cursor: FeedCursor = { v: 1, repos: {} };
  for (const key of source.repos) {
    cursor.repos[key] = {
      items: { since, seen: since, closed: { at: since, ids: [] } },
      comments: { since, created: { at: since, ids: [] } },
      reviewComments: { since, created: { at: since, ids: [] } },
      // The ledger does not say what was labelled: the first read takes today's labels as known.
      armed: source.label === null ? [] : null,
      reviews: {},
      ...(skipped.length > 0 ? { skip: skipped } : {}),
    };
  }
  return JSON.stringify(cursor);
}
