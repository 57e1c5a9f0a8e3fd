import { existsSync, mkdirSync, readlinkSync, renameSync, symlinkSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The CLI entry point of this installation: what `the-loop` inside a session must run. */
export const CLI_ENTRY = fileURLToPath(new URL("../../bin/the-loop.js", import.meta.url));

/**
 * Makes `the-loop` resolvable inside every session: `<binDir>/the-loop` links to this very
 * installation, and the session's PATH starts with binDir. An agent then talks back with the same
 * version (and the same config) as the daemon that started it, whether or not the-loop is
 * installed globally.
 */
export function ensureSessionBin(binDir: string, entry: string = CLI_ENTRY): string {
  const link = join(binDir, "the-loop");
  mkdirSync(binDir, { recursive: true, mode: 0o700 });
  let current: string | undefined;
  try {
    current = readlinkSync(link);
  } catch {
    current = undefined;
  }
  if (current !== entry) {
    // Replaced by rename so a session starting right now never sees the link missing.
    const temporary = `${link}.${process.pid}.tmp`;
    symlinkSync(entry, temporary);
    renameSync(temporary, link);
  }
  return binDir;
}

/** The variable that tells the CLI inside a session where the session's own socket is (docs/sessions.md, "The session's socket"). */
export const SESSION_SOCKET_ENV = "THE_LOOP_SESSION_SOCKET";

export interface SessionEnvInput {
  readonly workItem: string;
  readonly binDir: string;
  /** The config file the daemon runs with, so `the-loop ask` inside the session finds the same state. */
  readonly configFile?: string;
  /** Where the daemon serves this work item's session (sessionSocketPath); absent where it has no place. */
  readonly sessionSocket?: string | undefined;
  readonly basePath?: string;
}

export function sessionEnvironment(input: SessionEnvInput): Record<string, string> {
  const env: Record<string, string> = {
    THE_LOOP_WORK_ITEM: input.workItem,
    PATH: [input.binDir, input.basePath ?? process.env.PATH ?? ""].filter(Boolean).join(delimiter),
  };
  if (input.configFile && existsSync(input.configFile)) env.THE_LOOP_CLI_CONFIG = input.configFile;
  if (input.sessionSocket !== undefined) env[SESSION_SOCKET_ENV] = input.sessionSocket;
  return env;
}

/**
 * The variables of the daemon's environment every session is given (`*` ends a prefix): what any
 * program expects to find, what reaching a network through a proxy takes, and the credentials
 * and settings of the built-in harnesses. Nothing else of the daemon's — its tokens and the
 * webhook secret above all — reaches a session unless `routing.tmux.passEnv` names it. TERM is
 * not here: tmux sets every pane's own.
 */
export const PASSED_ENV: readonly string[] = [
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "PATH",
  "LANG",
  "LANGUAGE",
  "LC_*",
  "TZ",
  "TMPDIR",
  "XDG_CONFIG_HOME",
  "XDG_CACHE_HOME",
  "XDG_DATA_HOME",
  "XDG_STATE_HOME",
  "XDG_RUNTIME_DIR",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "ALL_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "all_proxy",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  // Claude Code: its key or token, API endpoint and models (ANTHROPIC_*), its own settings.
  "ANTHROPIC_*",
  "CLAUDE_CONFIG_DIR",
  "CLAUDE_CODE_*",
  "DISABLE_AUTOUPDATER",
  "DISABLE_TELEMETRY",
  "DISABLE_ERROR_REPORTING",
  // Cursor's agent CLI.
  "CURSOR_API_KEY",
  // Codex: its home (config, sessions) and the OpenAI key it signs in with. A custom model
  // provider's key, named by its `env_key`, is the operator's to add to routing.tmux.passEnv.
  "CODEX_HOME",
  "OPENAI_API_KEY",
  // Gemini CLI: its API key, model, home and files (GEMINI_*), and its API endpoint.
  "GEMINI_*",
  "GOOGLE_GEMINI_BASE_URL",
];

/** The-loop's own variables are set for a session (THE_LOOP_WORK_ITEM, THE_LOOP_CLI_CONFIG), never passed on from the daemon. */
const OWN_PREFIX = "THE_LOOP_";

/** Whether a `passEnv` entry (a name, or a prefix ending in `*`) names `name`. */
export function envPatternMatches(pattern: string, name: string): boolean {
  return pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

export interface PassedEnvOptions {
  /** Names (or prefixes ending in `*`) passed besides PASSED_ENV: `routing.tmux.passEnv`. */
  readonly pass?: readonly string[];
  /** Never passed, whatever `pass` says: the webhook secret. */
  readonly never?: readonly string[];
}

/**
 * The part of `source` (the daemon's environment) a session is given: PASSED_ENV and `pass`,
 * minus `never` and the-loop's own variables, which the session gets from sessionEnvironment.
 */
export function passedEnvironment(source: Readonly<Record<string, string | undefined>>, options: PassedEnvOptions = {}): Record<string, string> {
  const patterns = [...PASSED_ENV, ...(options.pass ?? [])];
  const never = new Set(options.never ?? []);
  const passed: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || never.has(name) || name.startsWith(OWN_PREFIX)) continue;
    if (patterns.some((pattern) => envPatternMatches(pattern, name))) passed[name] = value;
  }
  return passed;
}
