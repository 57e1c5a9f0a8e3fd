import { listSessionRecords } from "../../../registry/listing.js";
import type { RegistryListing, RegistryProblem } from "../../../registry/listing.js";
import type { SessionRecord, SessionStatus } from "../../../registry/record.js";
import { anySecretKnown } from "../../../secrets.js";
import { folderStamp, readFolderBlobs, writeFolderBlobs } from "../../../state/folder-cache.js";
import { jsonText, stdout } from "../../output.js";

/**
 * `sessions list --json`'s document, written as `stdout.json` would write it, but built from each
 * record's own rendering: over a state root of files that rendering is kept as bytes in
 * `<state.root>/cache/` while the registry folder is unchanged, so a listing of 10,000 sessions
 * neither parses nor re-serializes their records (two thirds of the command's time when it did).
 * The fields the listing adds to a record (its control, graph, usage and, on a database, its
 * daemon) change without the record, so they are rendered on every listing and spliced in.
 */

/** What the listing decides on of a session record: which item, its status, and what its usage needs. */
export interface ListedSession {
  readonly ref: string;
  readonly status: SessionStatus;
  readonly createdAt: string;
  readonly harness: string;
}

/** Each session's record as rendered (`heads`), with what the listing decides on of it (`sessions`), in the same order. */
export interface RenderedSessions {
  readonly sessions: ListedSession[];
  readonly heads: Buffer[];
  readonly problems: RegistryProblem[];
}

/** A ListedSession as the cache keeps it. */
type SessionRow = [ref: string, status: SessionStatus, createdAt: string, harness: string];

/** The fields the listing adds to every record. A record that has one of its own (written by hand) shows the listing's. */
const ADDED_FIELDS = ["control", "graph", "usage", "daemon", "host"] as const;

/** Where the listing nests a record: in the `sessions` array of the document, two levels of two spaces in. */
const RECORD_INDENT = "    ";

/**
 * `JSON.stringify(record, null, 2)` as it sits in the document's `sessions` array, without its
 * closing brace (the added fields follow). A record always has fields (a listing checks its
 * ref, status and times), so the brace closes at least one.
 */
function headOf(record: SessionRecord): Buffer {
  let shown: object = record;
  if (ADDED_FIELDS.some((field) => Object.hasOwn(record, field))) {
    const copy: Record<string, unknown> = { ...record };
    for (const field of ADDED_FIELDS) delete copy[field];
    shown = copy;
  }
  const text = jsonText(shown);
  return Buffer.from(`${RECORD_INDENT}${text.slice(0, -"\n}".length).replaceAll("\n", `\n${RECORD_INDENT}`)}`);
}

function listedOf(record: SessionRecord): ListedSession {
  return { ref: record.workItem.ref, status: record.status, createdAt: record.createdAt, harness: record.harness };
}

/** Records read whole (from a database's mirror, or with a secret known): rendered now, nothing kept. */
export function renderedFromRecords(listing: RegistryListing): RenderedSessions {
  return { sessions: listing.records.map(listedOf), heads: listing.records.map(headOf), problems: listing.problems };
}

/**
 * The registry folder's records, rendered, from `cacheFile` while the folder is unchanged. The
 * stamp is taken before the read, as cachedListing's is; a listing with a problem is not kept. A
 * process that knows a secret renders afresh and keeps nothing: its rendering is redacted.
 */
export function renderedFromFolder(dir: string, cacheFile: string): RenderedSessions {
  if (anySecretKnown()) return renderedFromRecords(listSessionRecords(dir));
  const stamp = folderStamp(dir);
  const cached = stamp === undefined ? undefined : readFolderBlobs<SessionRow>(cacheFile, dir, stamp);
  if (cached !== undefined) {
    const sessions = cached.entries.map(([ref, status, createdAt, harness]): ListedSession => ({ ref, status, createdAt, harness }));
    return { sessions, heads: cached.blobs, problems: [] };
  }
  const fresh = renderedFromRecords(listSessionRecords(dir));
  if (stamp !== undefined && fresh.problems.length === 0) {
    const entries = fresh.sessions.map(({ ref, status, createdAt, harness }): SessionRow => [ref, status, createdAt, harness]);
    writeFolderBlobs(cacheFile, { dir, stamp, entries, blobs: fresh.heads });
  }
  return fresh;
}

/** Where each session of the document starts: on a line of its own, two levels in (deeper lines have more spaces; strings hold no newline). */
const SESSION_START = Buffer.from(`\n${RECORD_INDENT}{\n`);
const AFTER_HEAD = Buffer.from(",\n");

/**
 * Writes the document `stdout.json({ sessions, ...rest })` would, where each of `sessions` is a
 * record of `listed` that `keep` keeps with `addedTo`'s fields after its own (at least one: a
 * session's start is found by its opening brace on a line of its own). The document is rendered
 * once with each session's added fields alone; each record's head is then spliced in at the
 * session's opening brace.
 */
export function printSessionsDocument(
  listed: RenderedSessions,
  keep: (session: ListedSession) => boolean,
  addedTo: (session: ListedSession) => object,
  rest: Record<string, unknown>,
): void {
  const heads: Buffer[] = [];
  const added: object[] = [];
  listed.sessions.forEach((session, index) => {
    const head = listed.heads[index];
    if (head === undefined || !keep(session)) return;
    heads.push(head);
    added.push(addedTo(session));
  });
  const document = Buffer.from(jsonText({ sessions: added, ...rest }));
  const parts: Buffer[] = [];
  let offset = 0;
  for (const head of heads) {
    const start = document.indexOf(SESSION_START, offset);
    if (start < 0) throw new Error("a session of the listing has no opening brace of its own: each has fields added");
    // Up to the newline before the session's brace, then the head (which opens it) and the added fields.
    parts.push(document.subarray(offset, start + 1), head, AFTER_HEAD);
    offset = start + SESSION_START.length;
  }
  parts.push(document.subarray(offset));
  stdout.jsonDocument(parts);
}
