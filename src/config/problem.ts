/** One problem (or warning) found in a config file, located where it stands. */
export interface ConfigProblem {
  /** Dotted key path (`state.root`, `hooks[0].url`); empty for the document as a whole. */
  readonly path: string;
  readonly message: string;
  readonly line?: number;
  readonly column?: number;
}

/** `file:line:col: key.path: message`, the form every config problem is reported in; control characters escaped. */
export function formatProblem(problem: ConfigProblem, file: string): string {
  const position = problem.line ? `:${problem.line}${problem.column ? `:${problem.column}` : ""}` : "";
  const key = problem.path ? `${problem.path}: ` : "";
  return escapeControlCharacters(`${file}${position}: ${key}${problem.message}`);
}

// C0 controls, DEL, C1 controls, and the two Unicode line separators.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const SHORT: Readonly<Record<string, string>> = { "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r" };

/**
 * `text` with every control character written as JSON.stringify writes it (`\n`, `\t`, `\u0007`,
 * `\u001b`, and DEL, C1 and U+2028/2029 as `\u…` too), everything else as it is: what a message
 * quotes from a file is input, and a raw BEL, ESC or line break would ring, drive the terminal,
 * or forge a line of its own (docs/config.md, "Problems"). A backslash is left alone, so text
 * already JSON-quoted is not escaped twice.
 */
export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL, (char) => SHORT[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
