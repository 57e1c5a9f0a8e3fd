import { closeSync, openSync, readdirSync, readFileSync, readSync } from "node:fs";
import type { Dirent } from "node:fs";
import { join, sep } from "node:path";
import { errnoOf, messageOf } from "../errors.js";
import { isTemporaryName } from "../state/atomic.js";
import { folderStamp, readFolderCache, writeFolderCache } from "../state/folder-cache.js";
import { SESSION_STATUSES, isLive } from "./record.js";
import type { SessionRecord, SessionStatus } from "./record.js";

/**
 * Listing the session registry: what `the-loop sessions list` runs. Kept apart from the
 * registry's writers so that a listing loads no schema library and takes no lock.
 */

/** The poller keeps its cursors beside the records by default; it is not a session. */
const POLL_STATE_FILE = "poll-state.json";

const STATUS_SET: ReadonlySet<string> = new Set(SESSION_STATUSES);

export interface RegistryProblem {
  /** The record file's path. */
  readonly file: string;
  /** Why it was left out of the listing. */
  readonly message: string;
}

export interface RegistryListing {
  readonly records: SessionRecord[];
  readonly problems: RegistryProblem[];
}

export interface ListOptions {
  readonly status?: SessionStatus | "live";
  /** A file (outside the registry folder) where the listing is kept while the folder is unchanged. */
  readonly cache?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The fields a listing shows, checked by hand: `sessions list` over ten thousand records has a
 * budget of 300 ms with process start, the file reads alone take most of it on a small machine,
 * and a full schema parse would add about 5% more (bench/sessions-list.ts prints both). Whatever
 * acts on one record reads it through get(), which parses in full.
 */
function listingProblem(value: unknown): string | undefined {
  if (!isObject(value)) return "not a JSON object";
  if (value.version !== 1) return `unknown version ${JSON.stringify(value.version)}`;
  const workItem = value.workItem;
  if (!isObject(workItem) || typeof workItem.ref !== "string" || workItem.ref === "") return "workItem.ref: missing";
  if (typeof value.status !== "string" || !STATUS_SET.has(value.status)) return `status: unknown ${JSON.stringify(value.status)}`;
  for (const key of ["createdAt", "lastEventAt", "harness", "harnessSessionId", "tmuxTarget", "cwd", "url"] as const) {
    if (typeof value[key] !== "string") return `${key}: missing`;
  }
  if (!Array.isArray(value.recentDeliveries)) return "recentDeliveries: missing";
  return undefined;
}

/** Session records are about a kilobyte; one bigger than this is read the ordinary way. */
const LISTING_BUFFER_BYTES = 64 * 1024;

/**
 * readFileSync, minus what ten thousand small files make expensive: it fstat()s each file and
 * allocates a buffer per file, where one reused buffer does (about a third faster at 10,000).
 */
function readSmallFileSync(path: string, buffer: Buffer): string {
  const fd = openSync(path, "r");
  let length: number;
  try {
    length = readSync(fd, buffer, 0, buffer.length, 0);
  } finally {
    closeSync(fd);
  }
  return length < buffer.length ? buffer.toString("utf8", 0, length) : readFileSync(path, "utf8");
}

function compareRecords(a: SessionRecord, b: SessionRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  if (a.workItem.ref !== b.workItem.ref) return a.workItem.ref < b.workItem.ref ? -1 : 1;
  return 0;
}


/**
 * Every record in `dir`, oldest first; a file that is not a record goes in `problems`. With a
 * cache: every record write renames a file into the directory, which changes its mtime, so an
 * unchanged stamp means an unchanged registry and one file read replaces thousands. The stamp is
 * taken before the scan, so a write during the scan makes the next listing scan again.
 */
export function listSessionRecords(dir: string, options: ListOptions = {}): RegistryListing {
  const wanted = options.status;
  const keep = (record: SessionRecord): boolean =>
    wanted === "live" ? isLive(record) : wanted === undefined || record.status === wanted;
  if (options.cache === undefined) return scan(dir, keep);
  const stamp = folderStamp(dir);
  const cached = stamp === undefined ? undefined : readFolderCache<SessionRecord>(options.cache, dir, stamp);
  if (cached) return { records: cached.filter(keep), problems: [] };
  const everything = scan(dir, () => true);
  if (stamp !== undefined && everything.problems.length === 0) {
    writeFolderCache(options.cache, { dir, stamp, entries: everything.records });
  }
  return { records: everything.records.filter(keep), problems: everything.problems };
}

function scan(dir: string, keep: (record: SessionRecord) => boolean): RegistryListing {
  const records: SessionRecord[] = [];
  const problems: RegistryProblem[] = [];
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return { records, problems };
    throw error;
  }
  const prefix = join(dir, sep);
  const buffer = Buffer.allocUnsafe(LISTING_BUFFER_BYTES);
  for (const entry of entries) {
    const name = entry.name;
    if (!name.endsWith(".json") || isTemporaryName(name) || name === POLL_STATE_FILE || entry.isDirectory()) continue;
    const file = prefix + name;
    let value: unknown;
    try {
      value = JSON.parse(readSmallFileSync(file, buffer)) as unknown;
    } catch (error) {
      // Closed records may be moved aside while we list; that is not a problem with the registry.
      if (errnoOf(error) === "ENOENT") continue;
      problems.push({ file, message: error instanceof SyntaxError ? `not valid JSON (${error.message})` : messageOf(error) });
      continue;
    }
    const problem = listingProblem(value);
    if (problem !== undefined) {
      problems.push({ file, message: problem });
      continue;
    }
    const record = value as SessionRecord;
    if (keep(record)) records.push(record);
  }
  records.sort(compareRecords);
  return { records, problems };
}
/** What the `sessions list` table shows of a record. */
export interface SessionSummary {
  readonly ref: string;
  readonly status: SessionStatus;
  readonly harness: string;
  readonly tmuxTarget: string;
  readonly lastEventAt: string;
}

type SummaryRow = [string, SessionStatus, string, string, string];

/**
 * The table's view of the registry, for a listing that prints no whole records. With a cache, its
 * compact rows are kept beside the full listing (`<cache>.rows`), a fraction of its size, so a
 * large registry's table costs one small read.
 */
export function listSessionSummaries(dir: string, options: ListOptions = {}): { summaries: SessionSummary[]; problems: RegistryProblem[] } {
  const wanted = options.status;
  const keep = (status: SessionStatus): boolean =>
    wanted === "live" ? isLive({ status }) : wanted === undefined || status === wanted;
  const rowsCache = options.cache === undefined ? undefined : `${options.cache}.rows`;
  const stamp = rowsCache === undefined ? undefined : folderStamp(dir);
  if (rowsCache !== undefined && stamp !== undefined) {
    const rows = readFolderCache<SummaryRow>(rowsCache, dir, stamp);
    if (rows) return { summaries: rows.filter((row) => keep(row[1])).map(summaryOf), problems: [] };
  }
  const listing = listSessionRecords(dir, { cache: options.cache });
  const rows = listing.records.map((record): SummaryRow => [
    record.workItem.ref,
    record.status,
    record.harness,
    record.tmuxTarget,
    record.lastEventAt,
  ]);
  if (rowsCache !== undefined && stamp !== undefined && listing.problems.length === 0) {
    writeFolderCache(rowsCache, { dir, stamp, entries: rows });
  }
  return { summaries: rows.filter((row) => keep(row[1])).map(summaryOf), problems: listing.problems };
}

function summaryOf([ref, status, harness, tmuxTarget, lastEventAt]: SummaryRow): SessionSummary {
  return { ref, status, harness, tmuxTarget, lastEventAt };
}
