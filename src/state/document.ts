import { readJsonFileSync, writeJsonAtomic } from "./atomic.js";
import { withLock } from "./lock.js";
import type { LockOptions } from "./lock.js";

/**
 * One named JSON document of the state, beside the per-item records: what has one value for the
 * whole state rather than one per work item (the start queue, the poller's cursors). A document is
 * read whole, and changed by read → decide → write under its own lock, which every process sharing
 * the state respects. The file backend keeps it in one file written atomically; the PostgreSQL one
 * in a row of the records table (postgres/document-store.ts).
 */
export interface DocumentStore {
  /** Where the document is, in messages: its file, or its row. */
  readonly where: string;
  /**
   * The document as stored, synchronously (for PostgreSQL, from the mirror: docs/scale.md says how
   * fresh); undefined when there is none. A file that is not JSON throws CorruptFileError.
   */
  readSync(): unknown;
  /** The document as stored now (for PostgreSQL, a query); undefined when there is none. */
  read(): Promise<unknown>;
  /**
   * Read → decide → write under the document's lock. `decide` sees the document as it is now and
   * returns the new value (undefined: no change) and its result.
   */
  transaction<T>(decide: (current: unknown) => Promise<{ readonly value?: unknown; readonly result: T }>): Promise<T>;
  /** Replaces the document whole, without a lock: for a single writer (the poller, under its pidfile). */
  write(value: unknown): Promise<void>;
}

/** A document kept in one JSON file, written atomically, changed under `<file>.lock`. */
export class FileDocumentStore implements DocumentStore {
  readonly where: string;
  private readonly lock: LockOptions;

  constructor(options: { readonly file: string; readonly lock?: LockOptions }) {
    this.where = options.file;
    this.lock = options.lock ?? {};
  }

  readSync(): unknown {
    return readJsonFileSync(this.where);
  }

  async read(): Promise<unknown> {
    return readJsonFileSync(this.where);
  }

  async transaction<T>(decide: (current: unknown) => Promise<{ readonly value?: unknown; readonly result: T }>): Promise<T> {
    return withLock(
      this.where,
      async () => {
        const { value, result } = await decide(this.readSync());
        if (value !== undefined) await writeJsonAtomic(this.where, value);
        return result;
      },
      this.lock,
    );
  }

  async write(value: unknown): Promise<void> {
    await writeJsonAtomic(this.where, value);
  }
}
