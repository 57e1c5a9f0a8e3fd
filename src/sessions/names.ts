import { clip, stripControlCharacters } from "../subprocess/index.js";

/**
 * A name or a reason a caller gave, made fit to be written where people read it (an event, a
 * history entry, a comment on the work item): one line, no control character or escape
 * sequence (a newline in an actor would forge a line of its own), and bounded.
 */

/** Longest actor id written: a login, an OS user, an agent's name. */
export const NAME_MAX = 100;
/** Longest reason written (a force's `--reason`). */
export const REASON_MAX = 1_000;

export function boundedName(text: string, maxChars: number = NAME_MAX): string {
  return clip(stripControlCharacters(text).replace(/\s+/g, " ").trim(), maxChars);
}
