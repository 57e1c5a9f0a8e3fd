import type { PollSource } from "../config/schema.js";
import { ciFailureKey } from "../routing/feedback.js";
import { boundExcerpt } from "../routing/inbound.js";
import type { InboundEvent, InboundKind } from "../routing/inbound.js";
import type { FeedTracker, TrackerChange, TrackerComment, TrackerScope } from "../trackers/tracker.js";
import type { PollSourceRuntime, SourceBatch } from "./source.js";

/**
 * Normalizes one change of a tracker's feed into the shape every ingress hands the router. Only
 * normalization happens here; whether the change matters is the router's decision.
 */

const COMMENT_KIND: Readonly<Record<TrackerComment["kind"], InboundKind>> = {
  comment: "commented",
  review: "reviewed",
  review_comment: "review_commented",
};

export function inboundFromChange(change: TrackerChange): InboundEvent {
  if (change.kind === "checked") return checkFailedFrom(change);
  const comment = change.kind === "commented" ? change.comment : undefined;
  const kind: InboundKind = change.kind === "commented" ? COMMENT_KIND[comment?.kind ?? "comment"] : (change.kind as Exclude<TrackerChange["kind"], "checked">);
  return {
    source: "poll",
    // The change id is stable across reads of the feed, so a change read twice (a retry, a
    // restart before the cursor moved) keeps its delivery id and the dedupe can recognize it.
    deliveryId: `poll-${change.id}`,
    kind,
    trackerEvent: `${change.item.tracker}:${change.kind}`,
    workItems: [change.item],
    actor: change.actor,
    // An item's opening text is context, not an instruction: only a comment may carry one
    // (COMMENT_KINDS), so the opened body goes to the excerpt alone.
    body: comment ? comment.body : null,
    labels: [...change.labels],
    ...(change.label !== undefined ? { label: change.label } : {}),
    itemState: change.state,
    ...(change.title !== undefined ? { title: change.title } : {}),
    ...(comment ? { commentId: comment.id, commentUrl: comment.url } : {}),
    occurredAt: change.at,
    excerpt: boundExcerpt({
      title: change.title,
      comment: comment?.body,
      body: change.kind === "opened" ? change.body : undefined,
      label: change.label,
    }),
  };
}

/**
 * Whether a change is news for the router: every change but a passing check, which (as on GitHub)
 * tells no one anything.
 */
export function isNews(change: TrackerChange): boolean {
  return change.kind !== "checked" || change.check?.conclusion === "failure";
}

/**
 * A failed check recorded on a local item, as a CI failure on it (docs/github.md#ci-failures): no
 * actor and no body, a status and never a request; the item is its own pull request, for the count
 * and the key — one message per commit and check, or per recording when no commit is named. The
 * log was recorded by a person at this machine, so it may reach the session (fenced all the same).
 */
function checkFailedFrom(change: TrackerChange): InboundEvent {
  const check = change.check ?? { name: "check", conclusion: "failure" as const };
  return {
    source: "poll",
    deliveryId: `poll-${change.id}`,
    kind: "check_failed",
    trackerEvent: `${change.item.tracker}:checked`,
    workItems: [change.item],
    actor: null,
    body: null,
    labels: [...change.labels],
    itemState: change.state,
    pullRequest: { ref: change.item.ref },
    check: {
      source: "local",
      name: check.name,
      conclusion: check.conclusion,
      ...(check.url !== undefined ? { url: check.url } : {}),
      ...(check.commit !== undefined ? { headSha: check.commit } : {}),
      ...(check.log !== undefined ? { log: check.log } : {}),
      logAllowed: true,
    },
    contentKey: ciFailureKey(change.item.ref, check.commit ?? `change-${change.id}`, check.name),
    occurredAt: change.at,
    excerpt: boundExcerpt({ check: check.name, conclusion: check.conclusion, commit: check.commit, url: check.url }),
  };
}

/** A source read through a tracker's own change feed (the local tracker). */
export interface TrackerPollSource {
  /** Names the source in the poll state and in events, e.g. `local:*` or `local:demo,other`. */
  readonly key: string;
  /** Only a tracker with a change feed (the GitHub one has none: see TrackerChangeFeed). */
  readonly tracker: FeedTracker;
  readonly scope: TrackerScope;
}

/** The poller's view of a tracker's change feed: each change becomes one item, keyed by its id. */
export function trackerPollSource(key: string, tracker: FeedTracker, scope: TrackerScope): PollSourceRuntime & TrackerPollSource {
  const watchChanges = tracker.watchChanges?.bind(tracker);
  return {
    key,
    tracker,
    scope,
    async read(cursor: string | undefined): Promise<SourceBatch> {
      const batch = await tracker.changesSince(scope, cursor);
      return { cursor: batch.cursor, items: batch.changes.filter(isNews).map((change) => ({ id: change.id, event: inboundFromChange(change) })) };
    },
    ...(watchChanges ? { watch: (onChange, onUnwatchable) => watchChanges(scope, onChange, onUnwatchable) } : {}),
  };
}

/**
 * The runtime sources for the configured local ones (other providers are skipped). The key is
 * the sorted project list, so reordering the config keeps the cursor; changing the list starts
 * a new source from now.
 */
export function localPollSources(sources: readonly PollSource[], tracker: FeedTracker): (PollSourceRuntime & TrackerPollSource)[] {
  const runtimes = new Map<string, PollSourceRuntime & TrackerPollSource>();
  for (const source of sources) {
    if (source.provider !== "local") continue;
    const projects = source.projects === undefined ? undefined : [...new Set(source.projects)].sort();
    const key = `local:${projects === undefined ? "*" : projects.join(",")}`;
    if (!runtimes.has(key)) runtimes.set(key, trackerPollSource(key, tracker, projects === undefined ? {} : { repositories: projects }));
  }
  return [...runtimes.values()];
}
