import { scrubSecrets } from "../events/log.js";

/**
 * The transcript tail of a session (docs/scale.md, "The transcript tail"): the last lines of its
 * tmux pane, scrollback included, capped and scrubbed of secrets as the event log is — what an
 * adopting daemon hands the new agent — and the notes an adoption writes.
 */

/** At most this many lines, and this many characters, of a pane are kept. */
export const TAIL_MAX_LINES = 200;
export const TAIL_MAX_CHARS = 16_000;
/** How often a daemon reads its sessions' panes and keeps what changed: one capture and at most one write per session each time. */
export const TAIL_EVERY_MS = 10_000;

/** The kept tail of a pane's text: its last lines (trailing blank ones dropped), within both caps, redacted. */
export function transcriptTail(text: string, maxLines: number = TAIL_MAX_LINES, maxChars: number = TAIL_MAX_CHARS): string {
  const lines = text.replace(/\s+$/u, "").split("\n").slice(-maxLines);
  let kept = scrubSecrets(lines.join("\n"));
  if (kept.length > maxChars) {
    const cut = kept.slice(-maxChars);
    const newline = cut.indexOf("\n");
    kept = newline >= 0 && newline < cut.length - 1 ? cut.slice(newline + 1) : cut;
  }
  return kept;
}

const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? "" : "s"}`;

/** How many lines a tail holds (0 for none). */
export function tailLines(tail: string | undefined): number {
  return tail === undefined || tail === "" ? 0 : tail.split("\n").length;
}

/** What the boot prompt of an adopted session ends with: that it was adopted, from whom, and the tail. */
export function adoptionBootNote(input: { readonly from: string; readonly self: string; readonly tail?: string; readonly branch?: string }): string {
  const branch =
    input.branch === undefined
      ? ""
      : `Your checkout is made on the branch \`${input.branch}\`, where the previous agent's pushed work is (on the default branch instead when that branch cannot be fetched). `;
  const head =
    `This session was adopted: the daemon "${input.from}" that ran this work item stopped renewing its lease (its host was lost or the daemon was killed), ` +
    `and the daemon "${input.self}" took the item over. The previous agent's session was ended; you start in a fresh workspace, without its uncommitted changes. ` +
    branch +
    "Read the work item, its comments and its pull requests to see how far the work got, then go on with it.";
  if (input.tail === undefined || input.tail === "") return `${head}\n\nThe-loop kept no transcript of the previous session.`;
  return `${head}\n\nThe last ${plural(tailLines(input.tail), "line")} of the previous session's terminal, as the-loop kept them (secrets redacted):\n-----\n${input.tail}\n-----`;
}

/** The marked comment an adoption posts on the item (the marker is added where it is posted). */
export function adoptionComment(input: {
  readonly from: string;
  readonly self: string;
  readonly started: boolean;
  readonly queued?: boolean;
  readonly lines: number;
}): string {
  const told = `told it was adopted${input.lines > 0 ? ` and given the last ${plural(input.lines, "line")} of the previous session's terminal` : ""}`;
  const what = input.started
    ? `a new session in a fresh workspace, ${told}`
    : input.queued === true
      ? `its new session waits in the start queue for a free slot (routing.limits), and will be ${told}`
      : "no new session yet: its start failed (see `the-loop why` for this item)";
  return `🔁 **the-loop**: the daemon \`${input.from}\` that ran this item stopped renewing its lease, so \`${input.self}\` adopted it: ${what}.`;
}
