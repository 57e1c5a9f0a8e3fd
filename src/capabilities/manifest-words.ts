/**
 * The words a capability manifest is written in: the patterns its names and commands match, the
 * limits of what it declares, the gsd-core version it is read against, and the agent roles each
 * loop point publishes. manifest.ts builds its schema from them and re-exports what others use.
 */

/** The gsd-core version whose capability contract the-loop implements (open-gsd/gsd-core 636ec9210720, package 1.10.0). */
export const GSD_VERSION = "1.10.0";

/** A command's words: what `ref.command` and `check.query` must be to run, and what `the-loop <words> …` runs. */
export const COMMAND_PATTERN = "^[a-z][a-z0-9-]*( [a-z][a-z0-9-]*)*$";
export const COMMAND_RE = new RegExp(COMMAND_PATTERN);
export const COMMAND_HINT = "lowercase words of a-z, 0-9 and '-', one space between words (never a shell string), such as `intel api-surface`";

/** An id, a tracker prefix, a skill, an agent, a role: gsd-core's kebab word. */
export const KEBAB_PATTERN = "^[a-z][a-z0-9-]*$";
export const KEBAB_RE = new RegExp(KEBAB_PATTERN);

/** A config key a capability's slice declares: dotted words. */
export const CONFIG_KEY_PATTERN = "^[a-z][a-zA-Z0-9_-]*(\\.[a-z][a-zA-Z0-9_-]*)*$";
export const CONFIG_KEY_RE = new RegExp(CONFIG_KEY_PATTERN);

/** The exact argv element a resolver's `{{id}}` is: replaced as a whole, never inside a string. */
export const TASK_ID_PLACEHOLDER = "{{id}}";
export const MAX_RESOLVER_TIMEOUT_MS = 120_000;
/** How long `the-loop <words> …` lets a declared command run unless it declares its own `timeoutMs`. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 600_000;
export const MAX_COMMAND_TIMEOUT_MS = 3_600_000;

export const MANIFEST_FILES = ["capability.yaml", "capability.json"] as const;
export const CAPABILITY_SCHEMA_FILE = ".the-loop/capability.schema.json";

/** Ids gsd-core keeps for its own first-party capabilities; a third party's bundle may not take one. */
export const RESERVED_ID_PREFIXES = ["gsd-", "gsd-core-", "anthropic-"] as const;

/**
 * The agent roles each loop point publishes in gsd-core's host contract: a gsd-core manifest's
 * `contributions[].into` is one of them. (The-loop runs one session, which gets every role's text.)
 */
export const AGENT_ROLES: Readonly<Record<string, readonly string[]>> = {
  discuss: ["orchestrator"],
  plan: ["researcher", "planner", "checker"],
  execute: ["executor", "verifier"],
  verify: ["orchestrator"],
  ship: ["orchestrator"],
};
export const rolesAt = (point: string): readonly string[] => AGENT_ROLES[point.split(":")[0] ?? ""] ?? [];

export function isCommandWords(value: unknown): value is string {
  return typeof value === "string" && COMMAND_RE.test(value);
}
