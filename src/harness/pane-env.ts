/**
 * How a tmux pane comes to hold exactly the environment the-loop gives it. tmux builds a new
 * pane's environment from the server's global environment (a copy of whatever environment the
 * server was started with), overlaid by the session's, then the `-e` variables of the command that
 * starts it; it sets a few of its own over all of them. Which server a pane lands on is not the
 * runner's choice — the operator's own, one an older the-loop started — so the runner reads what
 * the pane would inherit and corrects it: `-e` for what is missing or differs, `env -u` for what
 * is not wanted.
 */

const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * What tmux itself sets in every pane it starts, over anything passed: never passed (it would not
 * hold, or, for TERM, would tell the program it drives another terminal than tmux) and never
 * withheld. SHELL is the pane's shell (the server's `default-shell`); PATH is set from the tmux
 * client that starts the pane, so it travels as that client's environment instead.
 */
export const TMUX_PANE_VARIABLES: ReadonlySet<string> = new Set(["TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "TMUX", "TMUX_PANE", "PWD", "SHELL", "PATH"]);

/** Only variables a shell and `env -u` can name; anything else in an environment is skipped. */
export function isEnvName(name: string): boolean {
  return ENV_NAME_PATTERN.test(name);
}

/** The set variables of an environment (such as process.env), with names `env` can take. */
export function definedEnvironment(source: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const defined: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && isEnvName(name)) defined[name] = value;
  }
  return defined;
}

/**
 * Reads `tmux show-environment -s` output: `NAME="value"; export NAME;` (with `"`, `$`, `` ` ``
 * and `\` escaped by a backslash, so a value may span lines) and `unset NAME;` for a variable
 * the scope removes, which maps to null. Lines of neither form are skipped.
 */
export function parseShellEnvironment(text: string): Map<string, string | null> {
  const entries = new Map<string, string | null>();
  const entry = /^([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\[\s\S])*)"; export \1;$|^unset ([A-Za-z_][A-Za-z0-9_]*);$/gm;
  for (const match of text.matchAll(entry)) {
    const [, name, value, unset] = match;
    if (name !== undefined && value !== undefined) entries.set(name, value.replace(/\\([\s\S])/g, "$1"));
    else if (unset !== undefined) entries.set(unset, null);
  }
  return entries;
}

/** What a new pane inherits: the global environment, overlaid by the session's (null: removed). */
export function inheritedEnvironment(global: ReadonlyMap<string, string | null>, session: ReadonlyMap<string, string | null>): Map<string, string> {
  const inherited = new Map<string, string>();
  for (const scope of [global, session]) {
    for (const [name, value] of scope) {
      if (value === null) inherited.delete(name);
      else inherited.set(name, value);
    }
  }
  return inherited;
}

export interface PaneEnvPlan {
  /** Passed with `-e NAME=value`: wanted, and missing from what the pane inherits or different there. */
  readonly set: Record<string, string>;
  /** Withheld with `env -u NAME`: inherited and not wanted. */
  readonly unset: string[];
}

/**
 * What turns the environment a pane inherits into `wanted`, apart from TMUX_PANE_VARIABLES. A
 * variable the pane already inherits with the wanted value is not passed again, so on a server
 * started with the-loop's environment no value travels on a command line.
 */
export function paneEnvPlan(inherited: ReadonlyMap<string, string>, wanted: Readonly<Record<string, string>>): PaneEnvPlan {
  const set: Record<string, string> = {};
  for (const [name, value] of Object.entries(wanted)) {
    if (!TMUX_PANE_VARIABLES.has(name) && inherited.get(name) !== value) set[name] = value;
  }
  const unset = [...inherited.keys()].filter((name) => !TMUX_PANE_VARIABLES.has(name) && !Object.hasOwn(wanted, name)).sort();
  return { set, unset };
}
