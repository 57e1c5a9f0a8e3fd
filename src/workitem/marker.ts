/**
 * Loop prevention. Everything the-loop writes on a work item ends with a visible attribution
 * line and a hidden marker; any text carrying the marker is never read back as input, whoever
 * appears as its author. The strings are a contract with existing threads: never change them.
 */
export const SELF_COMMENT_MARKER = "<!-- the-loop:agent-comment -->";
export const SELF_COMMENT_ATTRIBUTION = "🤖 _the-loop, autonomous comment_";

export function isSelfAuthored(body: string | null | undefined): boolean {
  return typeof body === "string" && body.includes(SELF_COMMENT_MARKER);
}

/** Appends the attribution and the marker; marking marked text again changes nothing. */
export function markSelfAuthored(body: string): string {
  if (isSelfAuthored(body)) return body;
  return `${body.trimEnd()}\n\n${SELF_COMMENT_ATTRIBUTION}\n${SELF_COMMENT_MARKER}\n`;
}
