import { clip, stripControlCharacters } from "../subprocess/index.js";
import type { TrackerComment } from "../trackers/index.js";
import { isSelfAuthored } from "../workitem/index.js";

/**
 * An item's comments as the page shows them (`GET /api/v1/items/{ref}/comments`): oldest first,
 * the last COMMENTS_MAX, each body plain text with no control character (the page renders it as
 * text, never as HTML), and whether the-loop wrote it (it carries the loop marker).
 */

export const COMMENTS_MAX = 200;
/** A body longer than this is cut (GitHub allows 65,536 characters; the page links to the rest). */
export const COMMENT_BODY_MAX = 20_000;

export interface CommentView {
  readonly id: string;
  readonly author: string;
  readonly createdAt: string;
  readonly body: string;
  readonly fromTheLoop: boolean;
  readonly url: string | null;
}

/** What a person reads of one comment; a deleted account is `ghost`, as GitHub shows it. */
export function commentView(comment: TrackerComment): CommentView {
  return {
    id: comment.id,
    author: comment.author ?? "ghost",
    createdAt: comment.createdAt,
    body: clip(stripControlCharacters(comment.body), COMMENT_BODY_MAX),
    fromTheLoop: isSelfAuthored(comment.body),
    url: /^https?:\/\//i.test(comment.url) ? comment.url : null,
  };
}

/** The response: the last COMMENTS_MAX comments, oldest first, whatever order they came in. */
export function commentsDocument(comments: readonly TrackerComment[]): { readonly comments: CommentView[] } {
  const ordered = [...comments].sort((a, b) => (Date.parse(a.createdAt) || 0) - (Date.parse(b.createdAt) || 0));
  return { comments: ordered.slice(-COMMENTS_MAX).map(commentView) };
}
