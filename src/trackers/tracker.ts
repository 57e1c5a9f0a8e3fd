import { NotFoundError } from "../errors.js";
import type { TrackerKind, WorkItem, WorkItemRef } from "../workitem/index.js";

/**
 * The seam between the-loop and an issue tracker. The embedded local tracker and GitHub both
 * implement `Tracker`, so the router and the dispatcher never know which one they talk to; the
 * local tracker also has a change feed (`TrackerChangeFeed`). Everything here is data; nothing
 * carries a credential.
 */

export type ItemState = "open" | "closed";

/** What a checkout of a pull request's branch needs to know of it. */
export interface PullRequestHead {
  /** The branch the pull request proposes. */
  readonly headBranch: string;
  /** The head branch lives in the same repository (not a fork), so a checkout can fetch it by name. */
  readonly headInRepository: boolean;
  readonly state: ItemState;
}

export interface TrackerComment {
  /** Unique within the tracker (across repositories / projects). */
  readonly id: string;
  readonly author: string | null;
  readonly body: string;
  readonly createdAt: string;
  readonly url: string;
  /** Conversation comment, pull-request review body, or inline review comment. */
  readonly kind: "comment" | "review" | "review_comment";
}

/** An item's title and its last comments, oldest first (Tracker.recentComments). */
export interface ItemThread {
  readonly title: string;
  readonly comments: readonly TrackerComment[];
}

/** A work item as the tracker sees it now. */
export interface WorkItemState {
  readonly item: WorkItem;
  readonly title: string;
  readonly body: string;
  /** The login that opened it; null for a deleted account. */
  readonly author: string | null;
  readonly state: ItemState;
  readonly labels: readonly string[];
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly closedAt: string | null;
}

export type TrackerChangeKind = "opened" | "commented" | "labeled" | "unlabeled" | "closed" | "reopened" | "checked";

/** A check recorded on a local item (`the-loop item check`): what CI would report on its pull request. */
export interface TrackerCheck {
  readonly name: string;
  readonly conclusion: "failure" | "success";
  /** Where a person sees it. */
  readonly url?: string;
  /** The commit it ran on; a failure is told once per commit and check. */
  readonly commit?: string;
  /** The end of its log, as recorded (capped, not yet cleaned). */
  readonly log?: string;
}

/** One thing that happened on a tracker, as the change feed reports it. */
export interface TrackerChange {
  /** Stable and unique across the tracker: the poller derives its delivery ids from it. */
  readonly id: string;
  readonly kind: TrackerChangeKind;
  readonly item: WorkItem;
  /** Who did it; null when the tracker does not say (a deleted account). */
  readonly actor: string | null;
  readonly at: string;
  /** The item's labels and state right after this change. */
  readonly labels: readonly string[];
  readonly state: ItemState;
  /** For `commented`. */
  readonly comment?: TrackerComment;
  /** For `labeled` and `unlabeled`. */
  readonly label?: string;
  /** For `checked`. */
  readonly check?: TrackerCheck;
  /** For `opened`. */
  readonly title?: string;
  readonly body?: string;
}

/** Which part of a tracker to read: repositories (`owner/repo`) or local projects; all when omitted. */
export interface TrackerScope {
  readonly repositories?: readonly string[];
}

export interface ChangeBatch {
  readonly changes: readonly TrackerChange[];
  /** Opaque; pass it back to read what happens next. Persist it only once the changes are handled. */
  readonly cursor: string;
}

/** What a reaction is put on: a comment of the item, or the item itself. */
export interface ReactionTarget {
  readonly workItem: WorkItemRef;
  /** The tracker's comment id; the item itself when absent. */
  readonly commentId?: string;
  readonly commentKind?: "comment" | "review" | "review_comment";
}

/** Where a repository's code is fetched from. */
export interface RepositoryInfo {
  readonly cloneUrl: string;
  readonly defaultBranch: string;
}

/**
 * What every tracker does: read an item, write to it. The change feed is not part of it; see
 * TrackerChangeFeed.
 */
export interface Tracker {
  readonly kind: TrackerKind;
  /** Throws WorkItemNotFoundError when there is no such item. */
  getItem(ref: WorkItemRef): Promise<WorkItemState>;
  /** Posts a comment as the-loop itself. The caller marks the body (loop prevention). */
  postComment(ref: WorkItemRef, body: string): Promise<TrackerComment>;
  /**
   * The item's title and its last `limit` conversation comments, oldest first. Throws
   * WorkItemNotFoundError when there is no such item. Absent where a tracker cannot list them.
   */
  recentComments?(ref: WorkItemRef, limit: number): Promise<ItemThread>;
  /** Adding a label the item has, or removing one it lacks, is not an error (GitHub: a 404 on remove). */
  addLabel(ref: WorkItemRef, label: string): Promise<void>;
  removeLabel(ref: WorkItemRef, label: string): Promise<void>;
  /** Best-effort acknowledgement on the tracker (GitHub reactions); absent where there is none. */
  react?(target: ReactionTarget, content: string): Promise<void>;
  /** The repository behind a work item, for checkouts; absent for trackers without code. */
  repository?(ref: WorkItemRef): Promise<RepositoryInfo>;
  /** A pull request's head and state, for a checkout of its branch; absent for trackers without pull requests. */
  pullRequest?(ref: WorkItemRef): Promise<PullRequestHead>;
  /**
   * The login the tracker shows as the author of what the-loop posts, so that an answer written
   * under the-loop's own name (an agent acting with the operator's token) can be told apart from
   * a person's. A failure is never collapsed into "no login": it is `unknown`, permanent (asking
   * again cannot help) or not, with the fix. The caller decides what an unknown identity allows
   * (a gate answer is held, never taken). Never throws.
   */
  selfLogin(): Promise<SelfLogin>;
}

/** What a tracker knows of the login the-loop posts as (Tracker.selfLogin). */
export type SelfLogin =
  | { readonly kind: "known"; readonly login: string }
  | {
      readonly kind: "unknown";
      /** Asking again cannot help (GitHub's 401 or 403: a GitHub App installation token always gets 403). */
      readonly permanent: boolean;
      /** What went wrong, secret-free. */
      readonly reason: string;
      /** What a person does about it. */
      readonly fix: string;
    };

/**
 * A tracker that keeps its own change feed, which the poller reads through `trackerPollSource`
 * (`ingress/local-source.ts`). Only the local tracker has one: its journal is the feed.
 *
 * A capability of its own, rather than a `Tracker` method, because GitHub has no such feed to
 * give: what changed on GitHub is read by the poller's GitHub feed (`ingress/github-feed/`), from
 * conditional listings behind ETags, with rate-limit pauses, per-repository errors and partial
 * batches that a `ChangeBatch` cannot carry, and normalized from webhook-shaped payloads by the
 * webhook's own normalizer — a feed of ingress, not of the tracker. Implementing `changesSince`
 * on `GitHubTracker` would mean either a second GitHub feed or a wrapper that drops those, and
 * it would pull ingress back under trackers. So `GitHubTracker` does not claim it, and a caller
 * that needs a feed asks for `Tracker & TrackerChangeFeed`: the compiler does the checking.
 */
export interface TrackerChangeFeed {
  /**
   * What happened after `cursor`, oldest first. Without a cursor this is first sight: no
   * history is replayed, and the returned cursor marks "now".
   */
  changesSince(scope: TrackerScope, cursor: string | undefined): Promise<ChangeBatch>;
  /**
   * Calls `onChange` soon after the feed may hold something new, so a reader need not wait for
   * its next poll; `onUnwatchable` is told once when that stops working. Returns how to stop.
   */
  watchChanges?(scope: TrackerScope, onChange: () => void, onUnwatchable: (problem: string) => void): () => void;
}

/** A tracker the poller can read changes from. */
export type FeedTracker = Tracker & TrackerChangeFeed;

export class WorkItemNotFoundError extends NotFoundError {
  override readonly name: string = "WorkItemNotFoundError";
  constructor(
    readonly ref: string,
    hint = "",
  ) {
    super(`no work item ${ref}${hint ? `; ${hint}` : ""}`);
  }
}
