import type { z } from "zod";
import type { DocumentStore } from "./document.js";
import { FileDocumentStore } from "./document.js";
import type { LockOptions } from "./lock.js";
import type { PostgresDatabase } from "./postgres/database.js";
import type { PostgresDocumentStore } from "./postgres/document-store.js";
import type { PostgresRecordStore } from "./postgres/record-store.js";
import type { FileRecordStoreOptions } from "./record-store.js";
import { FileRecordStore } from "./record-store.js";
import type { RecordKind, SyncRecordStore } from "./record-kind.js";

/**
 * Where a process keeps its records: the one choice behind every store the daemon and the CLI open
 * (`state.store`, docs/scale.md). A store's owner (the registry, the control store, …) names its
 * kind, its storage key and the file placement it has always had; the backend answers the store —
 * files under the state root, or rows of one PostgreSQL database that several processes share.
 */

/** A record store whose records can be named in messages, and whose changes can be noticed cheaply. */
export interface LocatedRecordStore<T> extends SyncRecordStore<T> {
  /** Where the item's record is, as the backend names it (a file, or a row). */
  locate(item: string): string;
  /**
   * Changes whenever a record of the kind is written or removed (by any process sharing the
   * store); undefined when there is nothing yet. Compared, never interpreted.
   */
  changeStamp(): string | undefined;
  /** The work item a record names (the kind's item field), as stored. */
  itemOf(record: T): string | undefined;
}

export interface RecordPlacement<S extends z.ZodType> {
  /** The kind's storage key in a database (`sessions`, `control`): never changed once records are stored under it. */
  readonly key: string;
  /** Where the kind's files are, for the file backend. */
  readonly file: Omit<FileRecordStoreOptions<S>, "kind">;
}

export interface DocumentPlacement {
  /** The document's name in a database (`start-queue`). */
  readonly name: string;
  /** Its file, for the file backend. */
  readonly file: string;
  readonly lock?: LockOptions;
}

export type StoreName = "file" | "postgres";

export interface RecordBackend {
  readonly store: StoreName;
  /** The database, when the records are in one. */
  readonly database?: PostgresDatabase;
  records<S extends z.ZodType>(kind: RecordKind<S>, placement: RecordPlacement<S>): LocatedRecordStore<z.output<S>>;
  document(placement: DocumentPlacement): DocumentStore;
  /** Ends the backend's connections (nothing to do for files). */
  close(): Promise<void>;
}

/** Records as files under the state root: the default, embedded choice. */
export const FILE_BACKEND: RecordBackend = {
  store: "file",
  records: (kind, placement) => new FileRecordStore({ ...placement.file, kind }),
  document: (placement) => new FileDocumentStore({ file: placement.file, ...(placement.lock ? { lock: placement.lock } : {}) }),
  close: async () => undefined,
};

export type BackendChoice =
  | { readonly store: "file" }
  | {
      readonly store: "postgres";
      /** postgresql://… — a secret, remembered for redaction when the database opens. */
      readonly url: string;
      /** Who this process is: its connections' application_name, who ran a migration. */
      readonly name: string;
      readonly lockTimeoutMs?: number;
    };

/** The backend of a choice. PostgreSQL connects, migrates the schema (or refuses a newer one) and loads its mirror first. */
export async function openRecordBackend(choice: BackendChoice): Promise<RecordBackend> {
  if (choice.store === "file") return FILE_BACKEND;
  // Loaded here: a process on files never loads the database's modules, nor the driver.
  const [{ PostgresDatabase }, records, documents] = await Promise.all([
    import("./postgres/database.js"),
    import("./postgres/record-store.js"),
    import("./postgres/document-store.js"),
  ]);
  const database = await PostgresDatabase.open({
    url: choice.url,
    name: choice.name,
    ...(choice.lockTimeoutMs !== undefined ? { lockTimeoutMs: choice.lockTimeoutMs } : {}),
  });
  return postgresBackend(database, records.PostgresRecordStore, documents.PostgresDocumentStore);
}

function postgresBackend(database: PostgresDatabase, Records: typeof PostgresRecordStore, Documents: typeof PostgresDocumentStore): RecordBackend {
  let closing: Promise<void> | undefined;
  return {
    store: "postgres",
    database,
    records: (kind, placement) => new Records({ kind, key: placement.key, database }),
    document: (placement) => new Documents({ name: placement.name, database }),
    close: () => (closing ??= database.close()),
  };
}
