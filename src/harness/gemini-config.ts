import { realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join, resolve, sep } from "node:path";
import { writeFileAtomic } from "../state/atomic.js";
import { withLock } from "../state/lock.js";
import { geminiMcpWanted, mergeGeminiMcp } from "./gemini-mcp.js";

/**
 * Gemini CLI asks a person several things before it works unattended: which way to sign in,
 * whether the folder is trusted ("Do you trust the files in this folder?", and in an untrusted
 * folder it ignores `--approval-mode=yolo` and asks before each command), whether to install
 * its IDE companion; and it checks for (and installs) updates and sends usage statistics.
 * Nobody is at a session's terminal, so the-loop answers ahead of each start, in Gemini CLI's
 * own files under its home (`$GEMINI_CLI_HOME`, else the home folder, then `.gemini/`):
 *
 * - `trustedFolders.json` (or `$GEMINI_CLI_TRUSTED_FOLDERS_PATH`): `"<real path>": "TRUST_FOLDER"`
 *   for the session's folders, unless a rule there already trusts them;
 * - `settings.json`: the keys in GEMINI_SETTINGS below, each only where the file leaves it unset.
 *
 * Every other key stays. A file that is not plain JSON (Gemini reads comments in both, and
 * keeps them when it writes settings) is never rewritten: the outcome says which keys to set by
 * hand. An explicit `DO_NOT_TRUST` for a folder is the operator's, and stays too.
 */

type Env = Readonly<Record<string, string | undefined>>;

/** The folder Gemini CLI keeps its user files in: `<GEMINI_CLI_HOME or home>/.gemini`. */
export function geminiDir(env: Env): string {
  return join(env.GEMINI_CLI_HOME || env.HOME || homedir(), ".gemini");
}

export function geminiSettingsFile(env: Env): string {
  return join(geminiDir(env), "settings.json");
}

export function geminiTrustedFoldersFile(env: Env): string {
  return env.GEMINI_CLI_TRUSTED_FOLDERS_PATH || join(geminiDir(env), "trustedFolders.json");
}

/** What an unattended start needs set, by dotted path; each is written only where unset. */
export const GEMINI_SETTINGS: readonly (readonly [path: string, value: string | boolean])[] = [
  // The sign-in choice: an API key in GEMINI_API_KEY (the pane's environment).
  ["security.auth.selectedType", "gemini-api-key"],
  // An update installed under a running session, and the prompt that offers it.
  ["general.enableAutoUpdate", false],
  ["general.enableAutoUpdateNotification", false],
  // The "install the IDE companion?" nudge.
  ["ide.enabled", false],
  ["ide.hasSeenNudge", true],
  ["privacy.usageStatisticsEnabled", false],
  ["telemetry.enabled", false],
];

export type GeminiMerge =
  | { readonly changed: false }
  | { readonly changed: true; readonly config: Record<string, unknown>; readonly set: readonly string[] }
  | { readonly refused: string };

/**
 * Fills the GEMINI_SETTINGS a parsed settings file leaves unset. Pure: the input is not
 * modified. A value the file holds, whatever it is, is the operator's and stays; a key on the
 * way that holds something other than an object cannot take one, and is refused.
 */
export function mergeGeminiSettings(config: Record<string, unknown>): GeminiMerge {
  const result: Record<string, unknown> = structuredClone(config);
  const set: string[] = [];
  for (const [path, value] of GEMINI_SETTINGS) {
    const keys = path.split(".");
    const leaf = keys.pop() ?? path;
    let node = result;
    for (const key of keys) {
      const next = node[key];
      if (next === undefined) node[key] = {};
      else if (!isPlainObject(next)) return { refused: `${key} holds ${JSON.stringify(next)}, not an object, so ${path} cannot be set` };
      node = node[key] as Record<string, unknown>;
    }
    if (node[leaf] !== undefined) continue;
    node[leaf] = value;
    set.push(path);
  }
  return set.length === 0 ? { changed: false } : { changed: true, config: result, set };
}

const TRUST_LEVELS = ["TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST"] as const;

/**
 * Gemini's own reading of its trusted folders for one folder: the longest rule whose folder
 * holds it decides (`TRUST_PARENT` speaks for the rule's parent). Undefined: no rule does.
 */
export function geminiTrusts(rules: Readonly<Record<string, unknown>>, dir: string): boolean | undefined {
  let longest = -1;
  let level: unknown;
  for (const [rule, value] of Object.entries(rules)) {
    const folder = value === "TRUST_PARENT" ? dirname(resolve(rule)) : resolve(rule);
    if (!within(folder, dir) || rule.length <= longest) continue;
    longest = rule.length;
    level = value;
  }
  if (level === "DO_NOT_TRUST") return false;
  return level === "TRUST_FOLDER" || level === "TRUST_PARENT" ? true : undefined;
}

function within(folder: string, dir: string): boolean {
  return dir === folder || dir.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);
}

/**
 * Adds `"<dir>": "TRUST_FOLDER"` for each folder the rules do not trust yet. Pure. A folder the
 * operator distrusted by name (`DO_NOT_TRUST` on that very folder) is refused, not overridden.
 */
export function mergeGeminiTrust(rules: Record<string, unknown>, dirs: readonly string[]): GeminiMerge {
  const invalid = Object.entries(rules).find(([, value]) => !(TRUST_LEVELS as readonly unknown[]).includes(value));
  if (invalid !== undefined) return { refused: `its rule for ${invalid[0]} is ${JSON.stringify(invalid[1])}, not one of ${TRUST_LEVELS.join(", ")}` };
  const added: Record<string, unknown> = {};
  for (const dir of dirs) {
    if (rules[dir] === "DO_NOT_TRUST") return { refused: `it marks ${dir} DO_NOT_TRUST, which the-loop does not override` };
    if (geminiTrusts({ ...rules, ...added }, dir) === true) continue;
    added[dir] = "TRUST_FOLDER";
  }
  const set = Object.keys(added);
  return set.length === 0 ? { changed: false } : { changed: true, config: { ...rules, ...added }, set };
}

export type GeminiFileOutcome =
  | { readonly kind: "unchanged"; readonly file: string }
  | { readonly kind: "written"; readonly file: string; readonly set: readonly string[] }
  | { readonly kind: "failed"; readonly file: string; readonly error: string };

export interface GeminiPreparation {
  readonly trust: GeminiFileOutcome;
  readonly settings: GeminiFileOutcome;
  /** the-loop's MCP server in `settings.json` (src/harness/gemini-mcp.ts): registered, or removed. */
  readonly mcp: GeminiFileOutcome;
  /** The folders trusted (or found trusted): each one's real path. */
  readonly dirs: readonly string[];
}

export interface EnsureGeminiInput {
  readonly trustFile: string;
  readonly settingsFile: string;
  readonly dirs: readonly string[];
  /** routing.mcp.enabled: register the-loop's MCP server (true) or take the-loop's entry out (false). */
  readonly mcp: boolean;
}

/**
 * Writes what is missing into Gemini CLI's two files, atomically, each under the lock Gemini
 * itself takes on it (`<file>.lock`, proper-lockfile). Never throws: a failure is that file's
 * outcome `failed`, and the spawn goes on without it.
 */
export async function ensureGeminiConfig(input: EnsureGeminiInput): Promise<GeminiPreparation> {
  // Gemini compares real paths; a folder reached through a symlink is trusted where it is.
  const dirs = [...new Set(input.dirs.map(realPath))];
  const settings = await updateJson(
    input.settingsFile,
    mergeGeminiSettings,
    GEMINI_SETTINGS.map(([path, value]) => `${path}: ${JSON.stringify(value)}`),
  );
  const mcp = await updateJson(
    input.settingsFile,
    (config) => mergeGeminiMcp(config, input.mcp),
    input.mcp ? geminiMcpWanted() : ["no mcpServers.the-loop entry"],
  );
  const trust = await updateJson(
    input.trustFile,
    (rules) => mergeGeminiTrust(rules, dirs),
    dirs.map((dir) => `${JSON.stringify(dir)}: "TRUST_FOLDER"`),
  );
  return { trust, settings, mcp, dirs };
}

async function updateJson(path: string, merge: (config: Record<string, unknown>) => GeminiMerge, wanted: readonly string[]): Promise<GeminiFileOutcome> {
  // A file kept as a symlink (dotfiles in a repository) is rewritten where it points.
  const file = realPath(path);
  const failed = (why: string): GeminiFileOutcome => ({
    kind: "failed",
    file,
    error: `${why}; it was left as it is (set ${wanted.join(", ")} there by hand)`,
  });
  try {
    return await withLock(file, async () => {
      let text: string | undefined;
      try {
        text = await readFile(file, "utf8");
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
      let config: Record<string, unknown> = {};
      if (text !== undefined && text.trim() !== "") {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch (error) {
          return failed(`it is not plain JSON (${(error as Error).message}; comments would be lost in a rewrite)`);
        }
        if (!isPlainObject(parsed)) return failed("it does not hold a JSON object");
        config = parsed;
      }
      const merged = merge(config);
      if ("refused" in merged) return failed(merged.refused);
      if (!merged.changed) return { kind: "unchanged", file } as const;
      // A new file is private, as Gemini makes its own.
      await writeFileAtomic(file, `${JSON.stringify(merged.config, null, 2)}\n`, text === undefined ? { mode: 0o600 } : {});
      return { kind: "written", file, set: merged.set } as const;
    });
  } catch (error) {
    return failed((error as Error).message);
  }
}

function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    // Not there (yet): the spelling given is the only one.
    return resolve(path);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
