/** One problem (or warning) found in a config file, located where it stands. */
export interface ConfigProblem {
  /** Dotted key path (`state.root`, `hooks[0].url`); empty for the document as a whole. */
  readonly path: string;
  readonly message: string;
  readonly line?: number;
  readonly column?: number;
}

/** `file:line:col: key.path: message`, the form every config problem is reported in. */
export function formatProblem(problem: ConfigProblem, file: string): string {
  const position = problem.line ? `:${problem.line}${problem.column ? `:${problem.column}` : ""}` : "";
  const key = problem.path ? `${problem.path}: ` : "";
  return `${file}${position}: ${key}${problem.message}`;
}
