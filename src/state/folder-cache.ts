import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/**
 * What a listing keeps of a folder of records between runs (the session registry, the control
 * records), valid while the folder is unchanged: every write renames a file into the folder and
 * every removal unlinks one, either of which changes its mtime, so an unchanged stamp means
 * unchanged records and one file read replaces thousands.
 */
export interface FolderCache<T> {
  readonly dir: string;
  readonly stamp: string;
  readonly entries: T[];
}

/** A change this recent to the folder is not cached: another may still share its time. */
const RECENT_CHANGE_MS = 1_000;

/**
 * The folder as it is now. Undefined when it cannot be trusted to change with the next write: it
 * does not exist, or it changed too recently — a file's times come from a clock that ticks every
 * few milliseconds, so a write in the same tick as a listing would leave the stamp as it was, and
 * the listing cached without it. Take it before reading the folder, so a write during the read
 * makes the next listing read again.
 */
export function folderStamp(dir: string, now: number = Date.now()): string | undefined {
  try {
    const stat = statSync(dir, { bigint: true });
    if (now - Number(stat.mtimeMs) < RECENT_CHANGE_MS) return undefined;
    return `${stat.ino}:${stat.mtimeNs}:${stat.ctimeNs}`;
  } catch {
    return undefined;
  }
}

/** The entries of a parsed cache envelope, if it was written for `dir` at `stamp`. */
function entriesFor(cache: unknown, dir: string, stamp: string): unknown[] | undefined {
  if (typeof cache !== "object" || cache === null) return undefined;
  const { dir: cachedDir, stamp: cachedStamp, entries }: { dir?: unknown; stamp?: unknown; entries?: unknown } = cache;
  return cachedDir === dir && cachedStamp === stamp && Array.isArray(entries) ? entries : undefined;
}

/** The entries cached for `dir` at `stamp`; undefined when there are none (or the file is unreadable). */
export function readFolderCache<T>(path: string, dir: string, stamp: string): T[] | undefined {
  try {
    const entries = entriesFor(JSON.parse(readFileSync(path, "utf8")), dir, stamp);
    // boundary-cast: the envelope is checked by entriesFor; the entries are this listing's own,
    // written for this folder at this stamp, and reading them again is what the cache exists to skip.
    return entries as T[] | undefined;
  } catch {
    return undefined;
  }
}

/** A cache file only: written without fsync, and a failure to write it changes nothing (the next listing reads the folder). */
function writeCacheFile(path: string, data: string | Uint8Array): void {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(temporary, data, { mode: 0o600 });
    renameSync(temporary, path);
  } catch {
    // Left to the next listing.
  }
}

export function writeFolderCache<T>(path: string, cache: FolderCache<T>): void {
  writeCacheFile(path, JSON.stringify(cache));
}

/**
 * A folder cache whose entries each carry a blob of bytes (a listing's own rendering of a record),
 * kept as bytes so that a reader can write them out without decoding them into strings: a JSON
 * header line (the envelope, the entries and each blob's length), then the blobs back to back.
 */
export interface FolderBlobs<T> {
  readonly entries: T[];
  /** Each entry's blob, in the entries' order: views into one buffer, not copies. */
  readonly blobs: Buffer[];
}

/** The entries and blobs cached for `dir` at `stamp`; undefined when there are none, or the file is not whole. */
export function readFolderBlobs<T>(path: string, dir: string, stamp: string): FolderBlobs<T> | undefined {
  let bytes: Buffer;
  let header: unknown;
  let headerEnd: number;
  try {
    bytes = readFileSync(path);
    headerEnd = bytes.indexOf(0x0a);
    header = headerEnd < 0 ? undefined : JSON.parse(bytes.toString("utf8", 0, headerEnd));
  } catch {
    return undefined;
  }
  const entries = entriesFor(header, dir, stamp);
  if (entries === undefined || typeof header !== "object" || header === null) return undefined;
  const { lengths }: { lengths?: unknown } = header;
  if (!Array.isArray(lengths) || lengths.length !== entries.length) return undefined;
  const blobs: Buffer[] = [];
  let offset = headerEnd + 1;
  for (const length of lengths) {
    if (typeof length !== "number" || !Number.isSafeInteger(length) || length < 0 || offset + length > bytes.length) return undefined;
    blobs.push(bytes.subarray(offset, offset + length));
    offset += length;
  }
  // A file cut short or run on (a write interrupted) is no cache.
  if (offset !== bytes.length) return undefined;
  // boundary-cast: as readFolderCache's, the envelope and the blobs' lengths are checked above;
  // the entries are this listing's own, written for this folder at this stamp.
  return { entries: entries as T[], blobs };
}

/** As writeFolderCache, the entries with their blobs. */
export function writeFolderBlobs<T>(path: string, cache: FolderCache<T> & { readonly blobs: readonly Buffer[] }): void {
  const header = JSON.stringify({ dir: cache.dir, stamp: cache.stamp, entries: cache.entries, lengths: cache.blobs.map((blob) => blob.length) });
  writeCacheFile(path, Buffer.concat([Buffer.from(`${header}\n`, "utf8"), ...cache.blobs]));
}
