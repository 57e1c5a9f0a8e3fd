/**
 * What a missing work item ref most often is: the shell took an unquoted `#1` for the start of a
 * comment and dropped it, with everything after it. The CLI cannot see what was dropped, so
 * every "which work item?" message says it.
 */
export const SHELL_HASH_HINT = "an unquoted #1 is a comment to the shell, which drops it and the rest of the line: quote it ('#1') or write 1";

/** How a `<ref>` is described in the help of every command that takes one. */
export const REF_HELP = "the work item: 7 or '#7' (quoted) in the default local project, local:project#7, owner/repo#7 or a URL";

/** Commander's own wording when a ref argument or a `--work-item <ref>` value is missing. */
const MISSING_REF = /^error: (missing required argument '[^']*ref'|option '[^']*<ref>' argument missing|required option '[^']*<ref>' not specified)/;

/** A commander error message, with the hint added when what is missing is a ref. */
export function withRefHint(message: string): string {
  return MISSING_REF.test(message) ? `${message.trimEnd()}\nhint: ${SHELL_HASH_HINT}\n` : message;
}
