import { existsSync, realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join, parse, resolve } from "node:path";
import { writeFileAtomic } from "../state/atomic.js";
import { withLock } from "../state/lock.js";
import type { HarnessTrustScope } from "../config/schema.js";

/**
 * Claude Code asks a person two things before it works in a folder it has never seen: whether
 * the folder is trusted, and (once) the project onboarding. Nobody is at an unattended session's
 * terminal, so the first thing pasted later would answer the dialog by accident. the-loop answers
 * both ahead of each start, in Claude Code's own user config, for the folders named here only.
 *
 * Only `projects[dir].hasTrustDialogAccepted` and `.hasCompletedProjectOnboarding` are written,
 * merged into what the file holds; a file that does not parse is never overwritten (it is the
 * operator's, with their credentials and settings in it).
 */

/** The two answers Claude Code would otherwise ask for at the terminal. */
const TRUST_KEYS = ["hasTrustDialogAccepted", "hasCompletedProjectOnboarding"] as const;

/**
 * The user config Claude Code reads: `<config dir>/.config.json` when that file exists, else
 * `<config dir>/.claude.json`, where the config dir is `$CLAUDE_CONFIG_DIR` or the home folder.
 */
export function claudeConfigFile(env: Readonly<Record<string, string | undefined>>): string {
  const configDir = env.CLAUDE_CONFIG_DIR || env.HOME || homedir();
  const legacy = join(configDir, ".config.json");
  return existsSync(legacy) ? legacy : join(configDir, ".claude.json");
}

export interface TrustScopeInput {
  readonly spawnDir: string;
  readonly scope: HarnessTrustScope;
  /** The folder every checkout lives under; only used by the `workspace-root` scope. */
  readonly workspaceRoot?: string;
  /** The home folder the harness runs with; never trusted as a whole. */
  readonly home: string;
}

export interface TrustScope {
  readonly dirs: readonly string[];
  /** Why a wider scope asked for was not taken; undefined when all of it was. */
  readonly narrowed?: string;
}

/**
 * The folders to mark trusted. Claude Code keys projects by the folder it runs in as the system
 * reports it (symlinks resolved), so the resolved path is trusted too when it differs. A trusted
 * folder covers every folder beneath it, which is why the root of the filesystem and the home
 * folder are never trusted: that would hand every repository on the machine the same grant.
 */
export function trustScope(input: TrustScopeInput): TrustScope {
  const dirs = new Set<string>(spellings(input.spawnDir));
  let narrowed: string | undefined;
  if (input.scope === "workspace-root") {
    if (input.workspaceRoot === undefined) {
      narrowed = "no workspace root is configured for this session, so only its own folder is trusted";
    } else if (tooWide(input.workspaceRoot, input.home)) {
      narrowed = `the workspace root ${input.workspaceRoot} is the filesystem root or the home folder, which is never trusted as a whole; only the session's folder is`;
    } else {
      for (const dir of spellings(input.workspaceRoot)) dirs.add(dir);
    }
  }
  return narrowed === undefined ? { dirs: [...dirs] } : { dirs: [...dirs], narrowed };
}

function spellings(dir: string): string[] {
  const absolute = resolve(dir);
  let real = absolute;
  try {
    real = realpathSync(absolute);
  } catch {
    // Not there (yet): the spelling given is the only one.
  }
  return real === absolute ? [absolute] : [absolute, real];
}

function tooWide(dir: string, home: string): boolean {
  const candidates = spellings(dir);
  const homes = new Set(spellings(home));
  return candidates.some((candidate) => candidate === parse(candidate).root || homes.has(candidate));
}

export type TrustMerge = { readonly changed: false } | { readonly changed: true; readonly config: Record<string, unknown> };

/**
 * Merges the trust answers for `dirs` into a parsed user config. Pure: the input is not
 * modified. Unchanged when every folder already carries both answers.
 */
export function mergeTrust(config: Record<string, unknown>, dirs: readonly string[]): TrustMerge {
  const projects = isPlainObject(config.projects) ? config.projects : {};
  let changed = !isPlainObject(config.projects) && dirs.length > 0;
  const merged: Record<string, unknown> = { ...projects };
  for (const dir of dirs) {
    const entry = isPlainObject(projects[dir]) ? projects[dir] : {};
    if (TRUST_KEYS.every((key) => entry[key] === true)) continue;
    changed = true;
    merged[dir] = { ...entry, ...Object.fromEntries(TRUST_KEYS.map((key) => [key, true])) };
  }
  return changed ? { changed: true, config: { ...config, projects: merged } } : { changed: false };
}

export type TrustOutcome =
  | { readonly kind: "unchanged"; readonly file: string; readonly dirs: readonly string[] }
  | { readonly kind: "written"; readonly file: string; readonly dirs: readonly string[] }
  | { readonly kind: "failed"; readonly file: string; readonly dirs: readonly string[]; readonly error: string };

export interface EnsureTrustInput {
  readonly file: string;
  readonly dirs: readonly string[];
}

/**
 * Writes the trust answers into Claude Code's user config when they are missing: atomically,
 * keeping the file's mode (a new file is private), and not at all when already right. Never
 * throws: a failure is the outcome `failed`, and the spawn goes on without it.
 */
export async function ensureClaudeTrust(input: EnsureTrustInput): Promise<TrustOutcome> {
  const { dirs } = input;
  // A user config kept as a symlink (dotfiles in a repository) is rewritten where it points.
  const file = realFile(input.file);
  try {
    // `<file>.lock` is the lock Claude Code itself takes (proper-lockfile) around its own
    // read-merge-write of this file, so neither a running session nor another the-loop process
    // can write a copy read before this change over it.
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
          return failed(`it does not parse as JSON (${(error as Error).message}); it was left as it is`);
        }
        if (!isPlainObject(parsed)) return failed("it does not hold a JSON object; it was left as it is");
        config = parsed;
      }
      const merge = mergeTrust(config, dirs);
      if (!merge.changed) return { kind: "unchanged", file, dirs } as const;
      // A new file is private: Claude Code keeps account details and API key answers in it.
      await writeFileAtomic(file, `${JSON.stringify(merge.config, null, 2)}\n`, text === undefined ? { mode: 0o600 } : {});
      return { kind: "written", file, dirs } as const;
    });
  } catch (error) {
    return failed((error as Error).message);
  }

  function failed(error: string): TrustOutcome {
    return { kind: "failed", file, dirs, error };
  }
}

function realFile(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
