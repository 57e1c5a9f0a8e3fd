import type { ControlRecord } from "../../../control/types.js";
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
 * The fields the listing adds to a record change without it: each item's control record is kept
 * rendered the same way, from the control folder; its graph, usage and, on a database, its
 * daemon are rendered on every listing. Each record is spliced into that rendering.
 */

/** What the listing decides on of a session record: which item, its status, and what its usage needs. */
export interface ListedSession {
  readonly ref: string;
  readonly status: SessionStatus;
  readonly createdAt: string;
  readonly harness: string;
}

/** Records as the listing renders them: each one's rendering (`blobs`) and what the listing decides on of it (`entries`), in the same order. */
export interface RenderedListing<E> {
  readonly entries: E[];
  readonly blobs: Buffer[];
  readonly problems: RegistryProblem[];
}

/** A ListedSession as the cache keeps it. */
type SessionRow = [ref: string, status: SessionStatus, createdAt: string, harness: string];

/** The fields the listing adds to every record. A record that has one of its own (written by hand) shows the listing's. */
const ADDED_FIELDS = ["control", "graph", "usage", "daemon", "host"] as const;

/** Where the listing nests a record: in the `sessions` array of the document, two levels of two spaces in. */
const RECORD_INDENT = "    ";

/** A record as the listing shows it of its own: without fields of the names the listing adds. */
function ownFields(record: SessionRecord): object {
  if (!ADDED_FIELDS.some((field) => Object.hasOwn(record, field))) return record;
  const copy: Record<string, unknown> = { ...record };
  for (const field of ADDED_FIELDS) delete copy[field];
  return copy;
}

/** Where each session of the document starts: on a line of its own, two levels in (deeper lines have more spaces; strings hold no newline). */
const SESSION_START = Buffer.from(`\n${RECORD_INDENT}{\n`);
/** And where it ends, the same way. */
const SESSION_END = Buffer.from(`\n${RECORD_INDENT}}`);

/**
 * Each record as `JSON.stringify(record, null, 2)` puts it in the document's `sessions` array,
 * without its closing brace (the added fields follow). Rendered in one call as that array, then
 * cut at each record's braces: a record always has fields (a listing checks its ref, status and
 * times), so each brace is on a line of its own.
 */
function headsOf(records: readonly SessionRecord[]): Buffer[] {
  const text = Buffer.from(jsonText({ sessions: records.map(ownFields) }));
  const heads: Buffer[] = [];
  let offset = 0;
  for (let index = 0; index < records.length; index++) {
    const start = text.indexOf(SESSION_START, offset);
    const end = start < 0 ? -1 : text.indexOf(SESSION_END, start + 1);
    if (end < 0) throw new Error("a session record of the listing has no braces of its own: each has fields");
    heads.push(text.subarray(start + 1, end));
    offset = end;
  }
  return heads;
}

/** A folder of records and the file its renderings are kept in while it is unchanged. */
export interface RenderedFolder {
  readonly dir: string;
  readonly cacheFile: string;
}

/**
 * The records `read` gives, rendered. With `folder`, from its cache file while the folder is
 * unchanged (the stamp is taken before the read, as cachedListing's is; a listing with a problem
 * is not kept); without (a database's mirror, in memory), rendered now. A process that knows a
 * secret renders afresh and keeps nothing: its rendering is redacted.
 */
function renderedListing<R, E>(
  folder: RenderedFolder | undefined,
  read: () => { records: R[]; problems: RegistryProblem[] },
  entryOf: (record: R) => E,
  render: (records: R[]) => Buffer[],
): RenderedListing<E> {
  const renderAll = (): RenderedListing<E> => {
    const { records, problems } = read();
    return { entries: records.map(entryOf), blobs: render(records), problems };
  };
  if (folder === undefined || anySecretKnown()) return renderAll();
  const stamp = folderStamp(folder.dir);
  const cached = stamp === undefined ? undefined : readFolderBlobs<E>(folder.cacheFile, folder.dir, stamp);
  if (cached !== undefined) return { entries: cached.entries, blobs: cached.blobs, problems: [] };
  const fresh = renderAll();
  if (stamp !== undefined && fresh.problems.length === 0)
    writeFolderBlobs(folder.cacheFile, { dir: folder.dir, stamp, entries: fresh.entries, blobs: fresh.blobs });
  return fresh;
}

/** The session records, rendered: the registry folder's (`folder`), or a database mirror's listing. */
export function renderedSessions(read: () => RegistryListing, folder?: RenderedFolder): RenderedListing<ListedSession> {
  const listing = renderedListing(
    folder,
    read,
    (record: SessionRecord): SessionRow => [record.workItem.ref, record.status, record.createdAt, record.harness],
    headsOf,
  );
  const entries = listing.entries.map(([ref, status, createdAt, harness]): ListedSession => ({ ref, status, createdAt, harness }));
  return { ...listing, entries };
}

/** Where the listing nests a record's field: one level deeper than the record. */
const FIELD_INDENT = `${RECORD_INDENT}  `;

/** The control records, rendered as the `control` field of a session, by ref: the control folder's (`folder`), or a database mirror's. */
export function renderedControls(read: () => { records: ControlRecord[]; problems: RegistryProblem[] }, folder?: RenderedFolder): RenderedListing<string> {
  return renderedListing(
    folder,
    read,
    (record) => record.ref,
    (records) => records.map((record) => Buffer.from(jsonText(record).replaceAll("\n", `\n${FIELD_INDENT}`))),
  );
}

const CONTROL_FIELD = Buffer.from(`,\n${FIELD_INDENT}"control": `);
const NO_CONTROL = Buffer.from("null");
const AFTER_CONTROL = Buffer.from(",\n");

/**
 * Writes the document `stdout.json({ sessions, ...rest })` would, where each of `sessions` is a
 * record of `sessions` that `keep` keeps with its `control` (its item's rendered control record,
 * or null) and then `addedTo`'s fields (at least one: a session's start is found by its opening
 * brace on a line of its own). The document is rendered once with each session's added fields
 * alone; each record's head and control are then spliced in at the session's opening brace.
 */
export function printSessionsDocument(
  sessions: RenderedListing<ListedSession>,
  controls: RenderedListing<string>,
  keep: (session: ListedSession) => boolean,
  addedTo: (session: ListedSession) => object,
  rest: Record<string, unknown>,
): void {
  const controlOf = new Map<string, Buffer>();
  controls.entries.forEach((ref, index) => {
    const blob = controls.blobs[index];
    if (blob !== undefined) controlOf.set(ref, blob);
  });
  const kept: { head: Buffer; control: Buffer }[] = [];
  const added: object[] = [];
  sessions.entries.forEach((session, index) => {
    const head = sessions.blobs[index];
    if (head === undefined || !keep(session)) return;
    kept.push({ head, control: controlOf.get(session.ref) ?? NO_CONTROL });
    added.push(addedTo(session));
  });
  const document = Buffer.from(jsonText({ sessions: added, ...rest }));
  const parts: Buffer[] = [];
  let offset = 0;
  for (const { head, control } of kept) {
    const start = document.indexOf(SESSION_START, offset);
    if (start < 0) throw new Error("a session of the listing has no opening brace of its own: each has fields added");
    // Up to the newline before the session's brace, then the head (which opens it), the control and the added fields.
    parts.push(document.subarray(offset, start + 1), head, CONTROL_FIELD, control, AFTER_CONTROL);
    offset = start + SESSION_START.length;
  }
  parts.push(document.subarray(offset));
  stdout.jsonDocument(parts);
}

/** The control records of items without a session among `sessions`, as the listing's `controls` shows them. */
export function controlsWithoutSession(controls: RenderedListing<string>, sessions: RenderedListing<ListedSession>): unknown[] {
  const withSession = new Set(sessions.entries.map((session) => session.ref));
  const shown: unknown[] = [];
  controls.entries.forEach((ref, index) => {
    const blob = controls.blobs[index];
    // The listing's own rendering of a record it read: JSON, at whatever indent.
    if (!withSession.has(ref) && blob !== undefined) shown.push(JSON.parse(blob.toString("utf8")));
  });
  return shown;
}
