import { markSelfAuthored } from "../routing/marker.js";

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

export function questionText(ref: string, question: string): string {
  return markSelfAuthored(
    [
      `❓ **The agent working on \`${ref}\` asks:**`,
      "",
      question.trim(),
      "",
      "_Reply with a comment on this work item; the next comment from an authorized person reaches the session as the answer._",
    ].join("\n"),
  );
}
