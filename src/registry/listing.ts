import { FILE_BACKEND } from "../state/backend.js";
import { folderStamp, readFolderCache, writeFolderCache } from "../state/folder-cache.js";
import type { LocatedRecordStore, RecordBackend } from "../state/backend.js";
import type { LockOptions } from "../state/lock.js";
import type { RecordKind, RecordListing } from "../state/record-kind.js";
import { isLive, sessionRecordKind } from "./record.js";
import type { SessionRecord, SessionStatus } from "./record.js";
import type { sessionRecordSchema } from "./record-schema.js";

/**
 * Listing the session registry: what `the-loop sessions list` runs. It goes through the record
 * store like every other read, and loads no schema library and takes no lock: a listing checks
 * what it shows of each record (sessionRecordKind's listCheck), where a read of one record
 * parses it in full.
 */

/** The poller keeps its cursors beside the records by default; it is not a session. */
const POLL_STATE_FILE = "poll-state.json";

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

/** The session records' storage key in a database (state/backend.ts). */
export const SESSIONS_KEY = "sessions";

/** The session records as a record store (the registry's, and a listing's): files in `dir` unless `backend` says otherwise. */
export function sessionRecordFiles(
  dir: string,
  options: {
    readonly kind?: RecordKind<typeof sessionRecordSchema>;
    readonly lock?: LockOptions;
    readonly cache?: string;
    readonly backend?: RecordBackend;
  } = {},
): LocatedRecordStore<SessionRecord> {
  return (options.backend ?? FILE_BACKEND).records(options.kind ?? sessionRecordKind, {
    key: SESSIONS_KEY,
    file: {
      dir,
      ...(options.lock ? { lock: options.lock } : {}),
      ...(options.cache !== undefined ? { listingCache: options.cache } : {}),
      foreignFiles: [POLL_STATE_FILE],
      // The listing trusts a file's name (a SHA-256 slug); get() checks what it reads.
      trustPlacement: true,
    },
  });
}

/** The problems of a listing as the registry has always reported them: by file. */
export function registryListing(listing: RecordListing<SessionRecord>): RegistryListing {
  return {
    records: listing.records,
    problems: listing.problems.length === 0 ? [] : listing.problems.map(({ where, message }) => ({ file: where, message })),
  };
}

/**
 * Every record in `dir`, oldest first; a file that is not a record goes in `problems`. With a
 * cache, one file read replaces the scan while the folder is unchanged (FileRecordStore.listSync).
 */
export function listSessionRecords(dir: string, options: ListOptions = {}): RegistryListing {
  const wanted = options.status;
  const keep = (record: SessionRecord): boolean => (wanted === "live" ? isLive(record) : wanted === undefined || record.status === wanted);
  return registryListing(sessionRecordFiles(dir, { cache: options.cache }).listSync({ keep }));
}

/** What the `sessions list` table shows of a record. */
export interface SessionSummary {
  readonly ref: string;
  readonly status: SessionStatus;
  readonly harness: string;
  readonly tmuxTarget: string;
  readonly lastEventAt: string;
  /** When the session began: what its budget record is kept for. */
  readonly createdAt: string;
}

type SummaryRow = [string, SessionStatus, string, string, string, string];

/**
 * The table's view of the registry, for a listing that prints no whole records. With a cache, its
 * compact rows are kept beside the full listing (`<cache>.summaries`), a fraction of its size, so a
 * large registry's table costs one small read.
 */
export function listSessionSummaries(dir: string, options: ListOptions = {}): { summaries: SessionSummary[]; problems: RegistryProblem[] } {
  const wanted = options.status;
  const keep = (status: SessionStatus): boolean => (wanted === "live" ? isLive({ status }) : wanted === undefined || status === wanted);
  const rowsCache = options.cache === undefined ? undefined : `${options.cache}.summaries`;
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
    record.createdAt,
  ]);
  if (rowsCache !== undefined && stamp !== undefined && listing.problems.length === 0) {
    writeFolderCache(rowsCache, { dir, stamp, entries: rows });
  }
  return { summaries: rows.filter((row) => keep(row[1])).map(summaryOf), problems: listing.problems };
}

function summaryOf([ref, status, harness, tmuxTarget, lastEventAt, createdAt]: SummaryRow): SessionSummary {
  return { ref, status, harness, tmuxTarget, lastEventAt, createdAt };
}
