import { readdirSync, statSync, watch } from "node:fs";
import type { FSWatcher } from "node:fs";
import { basename, dirname, join } from "node:path";
import { errnoOf, messageOf } from "../../errors.js";
import { isProjectName, projectFiles } from "./files.js";

/**
 * Tells a reader of the change feed, soon after, that a project's journal changed, so the
 * daemon reads a local change at once rather than at its next poll. Only a hint: the feed stays
 * the truth, a reader that is told twice reads nothing new the second time, and where watching
 * does not work (no inotify watches left, a file system without events) the poll interval still
 * reads every change, only later.
 *
 * Three levels, each watched once it exists: the tracker folder's parent (until the tracker
 * folder appears: a fresh project has none), the tracker folder (projects appear in it) and each
 * project folder (its journal). `fs.watch` with `recursive` is not used: on Linux it is a
 * userland walk in Node 20 that misses folders made right after it starts.
 */

export interface JournalWatchOptions {
  /** A burst of writes (a journal line, then its snapshot and meta.json) is told once, this long after it began. */
  readonly debounceMs?: number;
  /** Told once, the first time a folder cannot be watched: changes are then seen at the poll interval. */
  readonly onUnwatchable?: (problem: string) => void;
}

export const JOURNAL_WATCH_DEBOUNCE_MS = 50;

/**
 * Watches the journals of `projects` (every project when undefined) under `trackerDir`;
 * returns the function that stops it. Never throws.
 */
export function watchJournals(
  trackerDir: string,
  projects: readonly string[] | undefined,
  onChange: () => void,
  options: JournalWatchOptions = {},
): () => void {
  const debounceMs = options.debounceMs ?? JOURNAL_WATCH_DEBOUNCE_MS;
  const journalName = basename(projectFiles(trackerDir, "p").journal);
  const wanted = projects === undefined ? undefined : new Set(projects);
  const watchers = new Map<string, FSWatcher>();
  let stopped = false;
  let reported = false;
  let timer: NodeJS.Timeout | undefined;

  const changed = (): void => {
    if (stopped || timer !== undefined) return;
    // Not pushed back by later events: a journal written without pause is still told every debounceMs.
    timer = setTimeout(() => {
      timer = undefined;
      if (!stopped) onChange();
    }, debounceMs);
    timer.unref();
  };

  const unwatchable = (dir: string, error: unknown): void => {
    if (reported) return;
    reported = true;
    try {
      options.onUnwatchable?.(`cannot watch ${dir} for changes: ${messageOf(error)}`);
    } catch {
      // A reporter that fails has nobody left to tell.
    }
  };

  const unwatch = (dir: string): void => {
    watchers.get(dir)?.close();
    watchers.delete(dir);
  };

  /** False when `dir` is not there (yet): not a problem, its parent's watcher sees it appear. */
  const watchDir = (dir: string, listener: (name: string | null) => void): boolean => {
    if (stopped) return false;
    if (watchers.has(dir)) return true;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, { persistent: false }, (_event, name) => listener(name === null ? null : String(name)));
    } catch (error) {
      if (errnoOf(error) !== "ENOENT" && errnoOf(error) !== "ENOTDIR") unwatchable(dir, error);
      return false;
    }
    watcher.on("error", (error) => {
      unwatch(dir);
      // A folder removed while watched ends its watcher; that is no failure to watch.
      if (errnoOf(error) !== "ENOENT" && errnoOf(error) !== "EPERM") unwatchable(dir, error);
    });
    watchers.set(dir, watcher);
    return true;
  };

  const isWatchedProject = (name: string): boolean => isProjectName(name) && (wanted === undefined || wanted.has(name));

  const watchProject = (project: string): void => {
    const dir = join(trackerDir, project);
    if (!isDirectory(dir)) {
      // Gone (or never a folder): its watcher, if any, has nothing left to see.
      unwatch(dir);
      return;
    }
    if (watchers.has(dir)) return;
    const watching = watchDir(dir, (name) => {
      // Lock files, temporaries, snapshots and meta.json follow from a journal line; only the journal is news.
      if (name === null || name === journalName) changed();
    });
    // Written before the watcher was in place: told now.
    if (watching) changed();
  };

  const watchTracker = (): boolean => {
    const watching = watchDir(trackerDir, (name) => {
      if (name === null) {
        for (const project of projectNames(trackerDir)) if (isWatchedProject(project)) watchProject(project);
      } else if (isWatchedProject(name)) watchProject(name);
    });
    if (!watching) return false;
    for (const project of projectNames(trackerDir)) if (isWatchedProject(project)) watchProject(project);
    return true;
  };

  if (!watchTracker()) {
    const parent = dirname(trackerDir);
    const name = basename(trackerDir);
    const watchingParent = watchDir(parent, (entry) => {
      if ((entry === null || entry === name) && watchTracker()) unwatch(parent);
    });
    // Made between the first look and the parent's watcher.
    if (watchingParent && watchTracker()) unwatch(parent);
    else if (!watchingParent && !reported) unwatchable(parent, new Error("the folder does not exist"));
  }

  return () => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    for (const watcher of watchers.values()) watcher.close();
    watchers.clear();
  };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function projectNames(trackerDir: string): string[] {
  try {
    return readdirSync(trackerDir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return [];
  }
}
