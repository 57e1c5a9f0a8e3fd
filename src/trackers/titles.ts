import { join } from "node:path";
import { readJsonFileSync, writeJsonAtomic } from "../state/index.js";
import { parseWorkItemRef } from "../workitem/index.js";
import { projectFiles, readSnapshotSync } from "./local/files.js";

/**
 * What the-loop knows of each work item's title without asking its tracker: a local item's is
 * read off its snapshot on disk; a GitHub item's is the one its last event carried (every event
 * the webhook and the poller read names its item's title), kept in `<state.root>/item-titles.json`
 * so that a restart keeps them. The dashboard's board reads them for every row: no network call
 * per listing, and null for an item the daemon never saw an event of.
 */

/** How many titles are kept: the most recently seen; an older one is forgotten (the board shows none). */
export const TITLES_MAX = 5_000;
/** A title is cut to this many characters (GitHub allows 256; a longer one is not a title). */
export const TITLE_MAX = 512;

export function itemTitlesFile(root: string): string {
  return join(root, "item-titles.json");
}

interface Entry {
  readonly title: string;
  readonly seenAt: string;
}

/** The file's entries, newest first, at most TITLES_MAX: what can be read of it, nothing else (a damaged file starts afresh). */
export function titleEntriesOf(value: unknown): [string, Entry][] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [];
  const titles = (value as { titles?: unknown }).titles;
  if (typeof titles !== "object" || titles === null || Array.isArray(titles)) return [];
  const entries: [string, Entry][] = [];
  for (const [ref, entry] of Object.entries(titles as Record<string, unknown>)) {
    if (typeof entry !== "object" || entry === null) continue;
    const { title, seenAt } = entry as { title?: unknown; seenAt?: unknown };
    if (typeof title !== "string" || typeof seenAt !== "string") continue;
    entries.push([ref, { title: title.slice(0, TITLE_MAX), seenAt }]);
  }
  entries.sort((a, b) => b[1].seenAt.localeCompare(a[1].seenAt));
  return entries.slice(0, TITLES_MAX);
}

export interface ItemTitlesOptions {
  /** `<state.root>`: the file lives there. */
  readonly root: string;
  /** `<state.root>/tracker`: where local items' titles are read from. */
  readonly trackerDir?: string;
  /**
   * With the local tracker in the state database: every local item's title, by ref, read there
   * (`refresh`); without it a local item's title is read off its snapshot file under `trackerDir`.
   */
  readonly localTitles?: () => Promise<ReadonlyMap<string, string>>;
  /** Told when the file cannot be written (the titles stay in memory). */
  readonly warn?: (message: string) => void;
  readonly now?: () => Date;
}

/** The daemon's book of titles: noted as events arrive, written behind (one write at a time), read without I/O for GitHub items. */
export class ItemTitles {
  private readonly entries = new Map<string, Entry>();
  private writing: Promise<void> | undefined;
  private dirty = false;
  private warned = false;
  private local: ReadonlyMap<string, string> = new Map();

  constructor(private readonly options: ItemTitlesOptions) {
    let value: unknown;
    try {
      value = readJsonFileSync(itemTitlesFile(options.root));
    } catch {
      // A damaged file is a cache lost, not a fault: titles come back with the items' next events.
      value = undefined;
    }
    // Oldest first into the map, so its order is the order seen (the oldest is dropped first).
    for (const [ref, entry] of titleEntriesOf(value).reverse()) this.entries.set(ref, entry);
  }

  /** The item's title: a local item's from its snapshot, another's as last seen; null when unknown. */
  titleOf(ref: string): string | null {
    if (ref.startsWith("local:")) {
      if (this.options.localTitles !== undefined) return this.local.get(ref) ?? null;
      return this.options.trackerDir !== undefined ? (localTitle(this.options.trackerDir, ref) ?? null) : null;
    }
    return this.entries.get(ref)?.title ?? null;
  }

  /** Reads the local items' titles again from the database (before a board is listed); on files, nothing to do. */
  async refresh(): Promise<void> {
    const read = this.options.localTitles;
    if (read === undefined) return;
    try {
      this.local = await read();
    } catch (error) {
      // The board keeps the titles of the last read: a title is a label, not a decision.
      this.options.warn?.(`could not read the local items' titles from the state database: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Records the title an event or a read carried for `ref` (canonical); written to the file when it changed. */
  note(ref: string, title: string): void {
    const cut = title.slice(0, TITLE_MAX);
    if (cut.trim() === "" || ref.startsWith("local:")) return;
    const known = this.entries.get(ref);
    const seenAt = (this.options.now?.() ?? new Date()).toISOString();
    this.entries.delete(ref);
    this.entries.set(ref, { title: cut, seenAt });
    while (this.entries.size > TITLES_MAX) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    if (known?.title !== cut) this.save();
  }

  /** Resolves once what was noted so far is on disk (or failed to be). */
  async flushed(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
  }

  private save(): void {
    this.dirty = true;
    if (this.writing !== undefined) return;
    this.writing = (async () => {
      while (this.dirty) {
        this.dirty = false;
        const titles = Object.fromEntries([...this.entries].reverse());
        try {
          await writeJsonAtomic(itemTitlesFile(this.options.root), { titles });
        } catch (error) {
          if (!this.warned) {
            this.warned = true;
            this.options.warn?.(
              `could not record item titles in ${itemTitlesFile(this.options.root)} (${error instanceof Error ? error.message : String(error)}); the dashboard shows them until the daemon restarts`,
            );
          }
        }
      }
    })().finally(() => {
      this.writing = undefined;
    });
  }
}

/**
 * A local item's title as its snapshot on disk holds it, read synchronously and without the
 * project's lock (a board lists many): undefined for a ref that is not a local item, one with no
 * snapshot, or one whose snapshot does not parse (reported where the item is read in full).
 */
export function localTitle(trackerDir: string, ref: string): string | undefined {
  try {
    const parsed = parseWorkItemRef(ref);
    if (parsed.tracker !== "local") return undefined;
    return readSnapshotSync(projectFiles(trackerDir, parsed.project), parsed.number)?.title;
  } catch {
    // Not a local item, or its snapshot unreadable: the board shows no title, `item show` the problem.
    return undefined;
  }
}
