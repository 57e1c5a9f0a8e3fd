export {
  CorruptFileError,
  createFileExclusive,
  fsyncDirectory,
  isTemporaryName,
  readJsonFile,
  readJsonFileSync,
  readTextIfPresent,
  toJsonText,
  writeFileAtomic,
  writeJsonAtomic,
} from "./atomic.js";
export type { WriteOptions } from "./atomic.js";
export { LockCompromisedError, LockTimeoutError, withLock } from "./lock.js";
export { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, ensurePrivateFolder, folderFacts, folderProblem, lstatIfPresent, ownUid, tightenStateRoot } from "./private.js";
export type { FolderFacts, Tightened } from "./private.js";
export type { LockOptions } from "./lock.js";
export { deriveStatePaths, resolveConfiguredPath } from "./layout.js";
export type { StatePaths } from "./layout.js";
export { folderStamp, readFolderBlobs, readFolderCache, writeFolderBlobs, writeFolderCache } from "./folder-cache.js";
export type { FolderBlobs, FolderCache } from "./folder-cache.js";
export type { StoreCopyCount } from "./copy-count.js";
export { FileRecordStore, RECORD_LOCK } from "./record-store.js";
export { DamagedRecordError } from "./record-kind.js";
export type { FileRecordStoreOptions } from "./record-store.js";
export type {
  ListRecordsOptions,
  RecordDamage,
  RecordKind,
  RecordRow,
  RecordListing,
  RecordOf,
  RecordProblem,
  RecordStore,
  RecordTransaction,
  SyncRecordStore,
} from "./record-kind.js";
export { FILE_BACKEND, openRecordBackend } from "./backend.js";
export type { BackendChoice, DocumentPlacement, LocatedRecordStore, RecordBackend, RecordPlacement, StoreName } from "./backend.js";
export { FileDocumentStore } from "./document.js";
export type { DocumentStore } from "./document.js";
export { compileShape, keysGoTogether } from "./record-shape.js";
export { recordShapeModuleText } from "./shape-module.js";
export type { RecordCheck, RecordShape } from "./record-shape.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { sweepStaleTemporaries } from "./atomic.js";
export { resolvePollStateFile } from "./poll-state-file.js";
export type { ResolvedPollStateFile } from "./poll-state-file.js";
export { isProcessAlive, processStartTicks } from "./process.js";
export { scratchFileName, sweepScratchFiles } from "./scratch.js";
// The PostgreSQL record store (docs/scale.md); the driver itself loads only when a database opens.
export { PostgresDatabase } from "./postgres/database.js";
export type { MirrorStatus, PostgresDatabaseOptions } from "./postgres/database.js";
export {
  MIGRATIONS,
  SCHEMA_VERSION,
  SchemaVersionError,
  TRACKER_CHANNEL,
  TRACKER_ITEMS_TABLE,
  TRACKER_JOURNAL_TABLE,
  TRACKER_PROJECTS_TABLE,
  planMigrations,
} from "./postgres/migrations.js";
export type { Migration, MigrationPlan, MigrationReport } from "./postgres/migrations.js";
export { PostgresRecordStore, withAdvisoryLock } from "./postgres/record-store.js";
export type { PostgresRecordStoreOptions } from "./postgres/record-store.js";
export { PostgresDocumentStore } from "./postgres/document-store.js";
export { namedLockKey, withNamedLock } from "./postgres/named-lock.js";
export { PostgresSourceLocks, holderName, pollSourceLockKey } from "./postgres/source-locks.js";
// The daemons sharing a database and the leases of their work items (src/fleet/ decides, this keeps the rows).
export { DAEMONS_TABLE, LEASES_TABLE, PostgresLeases, capacityOf } from "./postgres/leases.js";
export type { DaemonCapacity, DaemonRow, DaemonWrite, LeasePool, LeaseRow, Locked, Written } from "./postgres/leases.js";
export { PostgresTranscriptTails, TRANSCRIPT_TAILS_TABLE } from "./postgres/transcript-tails.js";
export type { TranscriptTail } from "./postgres/transcript-tails.js";
export { FLEET_STATE_KEYS } from "./fleet-keys.js";
export { insertEventLines, PostgresEventTable } from "./postgres/event-table.js";
export type { EventRow, EventRowFilter, PostgresEventTableOptions } from "./postgres/event-table.js";
export { followEventRows, GAP_WAIT_MS } from "./postgres/event-follow.js";
export type { FollowRowsOptions } from "./postgres/event-follow.js";
export { EVENTS_CHANNEL, EVENTS_MIGRATION, EVENTS_TABLE } from "./postgres/event-migration.js";
export { INBOX_CHANNEL, INBOX_MIGRATION, INBOX_TABLE, PostgresInbox } from "./postgres/inbox.js";
export type { InboxKind, InboxPost, InboxRow, Posted } from "./postgres/inbox.js";
