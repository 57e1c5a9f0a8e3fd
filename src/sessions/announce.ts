import { redactKnownSecrets } from "../secrets.js";
import { markSelfAuthored } from "../workitem/index.js";

/**
 * The texts the-loop posts on a work item about its sessions. Every one is marked, so no ingress
 * ever reads it back as input.
 */

export interface AnnouncementInput {
  readonly ref: string;
  readonly tmuxTarget: string;
  readonly harness: string;
  /** `-L <socket>` when sessions run on their own tmux server. */
  readonly socketName?: string;
}

export function announcementText(input: AnnouncementInput): string {
  const tmux = input.socketName ? `tmux -L ${input.socketName}` : "tmux";
  return markSelfAuthored(
    [
      `🖥️ **the-loop** started an interactive session for \`${input.ref}\`.`,
      "",
      "| | |",
      "|---|---|",
      `| tmux session | \`${input.tmuxTarget}\` |`,
      `| harness | \`${input.harness}\` |`,
      "",
      "Attach from the machine running the-loop:",
      "",
      "```sh",
      `${tmux} attach -t ${input.tmuxTarget}`,
      "# or, without a keyboard:",
      `the-loop sessions attach --work-item ${input.ref} --read-only`,
      "```",
      "",
      "The session is kept after the work completes, so this transcript stays readable. A respawn reuses this same tmux session name, so these commands keep working.",
    ].join("\n"),
  );
}

/** `summary`: a one-line summary a lifecycle hook put above the question (none by default). */
export function questionText(ref: string, question: string, summary = ""): string {
  const headline = summary.trim().replace(/\s+/g, " ");
  return markSelfAuthored(
    [
      `❓ **The agent working on \`${ref}\` asks:**`,
      ...(headline ? ["", `**${headline}**`] : []),
      "",
      question.trim(),
      "",
      "_Reply with a comment on this work item; the next comment from an authorized person reaches the session as the answer._",
    ].join("\n"),
  );
}

export interface RefusalInput {
  readonly ref: string;
  /** `work_item_start` (the start was refused) or `session_spawn` (the launch was). */
  readonly point: string;
  readonly hook: string;
  readonly reason: string;
  /** The keyword that starts the item again. */
  readonly startKeyword: string;
  /**
   * Whether the refusal disarmed the item (the default). Not when a command given while the hook
   * decided stands: that command governs the item, and the comment must not say otherwise.
   */
  readonly disarmed?: boolean;
}

/**
 * How much of a refusal's reason the comment quotes. A reason is a hook's words, or a failing
 * hook's error — which can be a server's reply at length, quoting what it was sent: a work item
 * is read by more people than the event log, so it gets a sentence's worth; hooks.failed,
 * hooks.refused and the control record keep more of it.
 */
export const REFUSAL_COMMENT_REASON_MAX = 300;

/**
 * The one comment a lifecycle hook's refusal leaves on the work item. Of what the hook gave it
 * quotes the hook's name and its reason only: on one line, without any secret this process
 * knows (src/secrets.ts, redacted before the cut, so no part of one is left at the cut), and
 * bounded.
 */
export function refusalText(input: RefusalInput): string {
  const what = input.point === "session_spawn" ? "did not launch a session for" : "did not start";
  const reason = commentReason(input.reason);
  return markSelfAuthored(
    [
      `🛑 **the-loop ${what} \`${input.ref}\`**: the lifecycle hook \`${redactKnownSecrets(input.hook)}\` refused (\`${input.point}\`).`,
      "",
      `> ${reason || "no reason given"}`,
      "",
      `${input.disarmed === false ? "The work item is left as the command given meanwhile left it." : "The work item is disarmed."} An authorized person can comment \`${input.startKeyword}\` to try again, or run \`the-loop sessions start --work-item ${input.ref}\`.`,
    ].join("\n"),
  );
}

/** A hook's reason as a comment quotes it: one line, redacted, bounded, never half a character. */
export function commentReason(reason: string): string {
  const line = redactKnownSecrets(reason).trim().replace(/\s+/g, " ");
  if (line.length <= REFUSAL_COMMENT_REASON_MAX) return line;
  let cut = line.slice(0, REFUSAL_COMMENT_REASON_MAX - 1);
  // Not half a character: a surrogate pair cut in two is not text.
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}…`;
}
