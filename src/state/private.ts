import { chmodSync, lstatSync, mkdirSync, readdirSync } from "node:fs";
import type { Stats } from "node:fs";
import { join } from "node:path";
import { errnoOf } from "../errors.js";

/**
 * Folders only this OS user can use. The state root and what the-loop keeps in it are created
 * 0700 (folders) and 0600 (files) whatever the umask; a folder the-loop trusts to be private (the
 * daemon socket's) is checked to be one — a real folder, not a link, owned by this user, with no
 * permission for anyone else — or refused.
 */

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** This process's effective uid (undefined where the platform has none). */
export function ownUid(): number | undefined {
  return process.geteuid?.();
}

/** What `lstat` says of a folder, as far as trusting it goes. */
export interface FolderFacts {
  readonly isDirectory: boolean;
  readonly isSymbolicLink: boolean;
  readonly uid: number;
  readonly mode: number;
}

export function folderFacts(stats: Stats): FolderFacts {
  return { isDirectory: stats.isDirectory(), isSymbolicLink: stats.isSymbolicLink(), uid: stats.uid, mode: stats.mode & 0o7777 };
}

/**
 * Why `facts` is not a private folder of `uid`, or undefined when it is one. `allowedBits`: the
 * permission bits others may hold (0 for a private folder).
 */
export function folderProblem(facts: FolderFacts, uid: number | undefined, allowedBits = 0): string | undefined {
  if (facts.isSymbolicLink) return "is a symbolic link, not a folder";
  if (!facts.isDirectory) return "is not a folder";
  if (uid !== undefined && facts.uid !== uid) return `is owned by uid ${facts.uid}, not by this user (uid ${uid})`;
  const loose = facts.mode & 0o077 & ~allowedBits;
  if (loose !== 0) return `has mode ${(facts.mode & 0o777).toString(8).padStart(4, "0")}: others may use it`;
  return undefined;
}

/** `lstat` of `path`, or undefined when nothing is there. */
export function lstatIfPresent(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Makes `dir` (one level: its parent must exist) a private folder of this user, or says why it
 * cannot be trusted as one: undefined when it is private (made so now, or already), else the
 * problem. A folder someone else made, or made loose, is never adopted or changed.
 */
export function ensurePrivateFolder(dir: string, uid: number | undefined = ownUid()): string | undefined {
  if (lstatIfPresent(dir) === undefined) {
    try {
      mkdirSync(dir, { mode: PRIVATE_DIR_MODE });
      // Explicit, whatever the umask took away: ours, just made, in a parent checked by the caller.
      chmodSync(dir, PRIVATE_DIR_MODE);
    } catch (error) {
      // Made at this instant by another process: what it is is checked below like any other.
      if (errnoOf(error) !== "EEXIST") throw error;
    }
  }
  const stats = lstatIfPresent(dir);
  if (stats === undefined) return "vanished while it was being made";
  return folderProblem(folderFacts(stats), uid);
}

export interface Tightened {
  /** The root's mode before, when it was open to others. */
  readonly rootWas?: number;
  /** How many folders and files under it were tightened. */
  readonly entries: number;
}

/**
 * Closes a state root an older version made open to others (0755, files 0644): the root becomes
 * 0700, and every folder (0700) and file (0600) under `within` with a group or other bit loses
 * them. Links are not followed, and nothing outside `within` (a project's own config file beside
 * the state, the checkouts) is changed. Nothing is done when the root is private already.
 */
export function tightenStateRoot(root: string, within: readonly string[], uid: number | undefined = ownUid()): Tightened {
  const stats = lstatIfPresent(root);
  if (stats === undefined || !stats.isDirectory() || (uid !== undefined && stats.uid !== uid)) return { entries: 0 };
  const was = stats.mode & 0o777;
  if ((was & 0o077) === 0) return { entries: 0 };
  chmodSync(root, PRIVATE_DIR_MODE);
  let entries = 0;
  const tighten = (path: string, entry: Stats): void => {
    if (entry.isSymbolicLink() || (entry.mode & 0o077) === 0) return;
    // A file its owner may run (a script) keeps that bit.
    chmodSync(path, entry.isDirectory() || (entry.mode & 0o100) !== 0 ? PRIVATE_DIR_MODE : PRIVATE_FILE_MODE);
    entries++;
  };
  const walk = (path: string): void => {
    const entry = lstatIfPresent(path);
    if (entry === undefined) return;
    tighten(path, entry);
    if (!entry.isDirectory() || entry.isSymbolicLink()) return;
    for (const name of readdirSync(path)) walk(join(path, name));
  };
  for (const path of new Set(within)) walk(path);
  return { rootWas: was, entries };
}
