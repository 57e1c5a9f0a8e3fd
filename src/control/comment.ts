import { markSelfAuthored } from "../workitem/index.js";
import type { ControlCommand } from "./types.js";

/**
 * The comment `the-loop sessions <command>` leaves on the work item, so the thread stays the full
 * record of every control action (docs/control.md#from-the-cli). It carries the keyword an authorized person would have
 * typed, on its own line, and the loop-prevention marker (docs/control.md#from-the-cli): the command is already applied,
 * and neither ingress path may read it back as a new one.
 */
export interface ControlCommentInput {
  /** The configured keyword of the command (routing.control.keywords). */
  readonly keyword: string;
  readonly command: ControlCommand;
  /** Who ran the command: the local OS user. */
  readonly actor: string;
  /** The graph a start chose (`--graph`), written after the keyword as a person would. */
  readonly graph?: string | undefined;
  /** Where it was given: the CLI (the default) or the dashboard (whose operator is the actor). */
  readonly via?: "cli" | "dashboard";
}

/**
 * The actor as it may stand in a code span on one line: a login never holds a backtick or a line
 * break, but a name from the environment could, and it must not break out of its span.
 */
function codeSpanText(text: string): string {
  const flat = text.replace(/[`\s]+/g, " ").trim();
  return flat === "" ? "unknown" : flat;
}

export function controlCommentText({ keyword, command, actor, graph, via }: ControlCommentInput): string {
  // A graph name is kebab words (the CLI checked it): nothing in it can break the line or the span.
  const [argument, option] = graph === undefined ? ["", ""] : [` graph=${graph}`, ` --graph ${graph}`];
  if (via === "dashboard") {
    return markSelfAuthored(
      `${keyword}${argument}\n\n` +
        `_Issued from the-loop's dashboard by \`${codeSpanText(actor)}\` and already applied; ` +
        `posted so this thread keeps the record of every control action._`,
    );
  }
  return markSelfAuthored(
    `${keyword}${argument}\n\n` +
      `_Issued from the-loop CLI by \`${codeSpanText(actor)}\` (\`the-loop sessions ${command}${option}\`) and already applied locally; ` +
      `posted so this thread keeps the record of every control action._`,
  );
}
