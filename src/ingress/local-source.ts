import { boundExcerpt } from "../routing/inbound.js";
import type { InboundEvent, InboundKind } from "../routing/inbound.js";
import type { TrackerChange, TrackerComment } from "../trackers/tracker.js";

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
  const comment = change.kind === "commented" ? change.comment : undefined;
  const kind: InboundKind = change.kind === "commented" ? COMMENT_KIND[comment?.kind ?? "comment"] : change.kind;
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
