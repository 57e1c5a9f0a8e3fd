import type { z } from "zod";
import { EXIT_FAILURE, ExitError } from "../errors.js";
import type { RecordCheck } from "./record-shape.js";

/**
 * The record store's seam, apart from any backend: what a record kind is, what a store of one
 * kind offers (RecordStore, RecordTransaction), and the error a damaged record is. The file
 * backend (record-store.ts) and the PostgreSQL one (postgres/) implement it.
 */

/** What a DamagedRecordError says about the record it could not read. */
export interface RecordDamage {
  /** The kind's name: "session record". */
  readonly kind: string;
  /** The canonical ref of the work item whose record it is. */
  readonly item: string;
  /** Where the record is, as the backend names it (for files, the path). */
  readonly where: string;
  /** Why it is not a record of its item: `not valid JSON (…)`, `not a session record (…)`, `it holds …`. */
  readonly reason: string;
  /** Set when the record is a database row: the remedy then names the row and the SQL that mends it, not a file. */
  readonly row?: RecordRow;
}

/** A record's row in a database: its table and the kind's storage key (`sessions`), the item being `item`. */
export interface RecordRow {
  readonly table: string;
  readonly asideTable: string;
  readonly seqName: string;
  readonly key: string;
}

const sqlText = (value: string): string => `'${value.replace(/'/g, "''")}'`;

/**
 * What to do about a damaged row: look at it, and move it aside — its body kept in the aside table,
 * the row left without a body under a new seq, so every process's mirror forgets it too — in one
 * statement, run with psql on the state's URL. The kind's own remedy says what that means for the item.
 */
export function rowRemedy(damage: RecordDamage & { readonly row: RecordRow }, remedy: string): string {
  const { table, asideTable, seqName, key } = damage.row;
  const where = `kind = ${sqlText(key)} AND item = ${sqlText(damage.item)}`;
  return (
    `${remedy}. It is the row (kind ${key}, item ${damage.item}) of ${table} in the state database: ` +
    `see it with \`SELECT body FROM ${table} WHERE ${where};\`, and move it aside with ` +
    `\`WITH aside AS (INSERT INTO ${asideTable} (kind, item, reason, body) SELECT kind, item, 'damaged', body FROM ${table} WHERE ${where}) ` +
    `UPDATE ${table} SET body = NULL, seq = nextval(${sqlText(seqName)}), updated_at = now() WHERE ${where};\` ` +
    `(psql "$THE_LOOP_STATE_URL", or the variable state.urlEnv names); a plain DELETE is not seen by the other processes' mirrors`
  );
}

/** A stored record that does not hold its work item's record. Stopping beats guessing what it meant. */
export class DamagedRecordError extends ExitError implements RecordDamage {
  override readonly name: string = "DamagedRecordError";
  readonly kind: string;
  readonly item: string;
  readonly where: string;
  readonly reason: string;
  constructor(damage: RecordDamage, remedy: string) {
    const told = damage.row !== undefined ? rowRemedy({ ...damage, row: damage.row }, remedy) : remedy;
    super(`${damage.kind} ${damage.where} is damaged: ${damage.reason}; ${told}`, EXIT_FAILURE);
    this.kind = damage.kind;
    this.item = damage.item;
    this.where = damage.where;
    this.reason = damage.reason;
  }

  /** The record's file, for the file-backed store (the same as `where`; a row's place on a database). */
  get path(): string {
    return this.where;
  }
}

/** A kind of record kept per work item. */
export interface RecordKind<S extends z.ZodType = z.ZodType> {
  /** What one record is called in messages: "session record". */
  readonly name: string;
  /** The dotted field of a record holding its work item's canonical ref ("ref", "workItem.ref"). */
  readonly itemField: string;
  /**
   * The kind's one schema: every write is validated with it, and so is every read unless the
   * kind has a `check`. A loader when the schema library must not load until a write needs it:
   * a transaction loads it before taking its lock.
   */
  readonly schema: S | (() => Promise<S>);
  /**
   * A check of what is read that loads no schema library: the schema's generated shape compiled
   * (compileShape). Reads then return the record as stored, not a parse of it; writes are checked
   * with it too after the schema, so a stale shape cannot write what it would refuse to read.
   */
  readonly check?: RecordCheck;
  /** What a listing checks of each record, when less than a read does (default: as a read). */
  readonly listCheck?: RecordCheck;
  /** The order of a listing. */
  readonly order: (a: z.output<S>, b: z.output<S>) => number;
  /** What a DamagedRecordError tells the operator to do. */
  readonly remedy: string;
  /** The kind's own DamagedRecordError (a subclass callers catch by name). */
  readonly damaged?: (damage: RecordDamage) => DamagedRecordError;
  /** The message for a write of a record naming another work item (a caller's bug). */
  readonly misaddressed?: (named: string, item: string) => string;
}

/** The record type of a kind: inferred from its schema. */
export type RecordOf<K> = K extends RecordKind<infer S> ? z.output<S> : never;

/** A record a listing left out, and why. */
export interface RecordProblem {
  /** Where it is, as the backend names it (for files, the path). */
  readonly where: string;
  readonly message: string;
}

export interface RecordListing<T> {
  /** In the kind's order. */
  readonly records: T[];
  readonly problems: RecordProblem[];
}

export interface ListRecordsOptions<T> {
  /** Only the records this keeps (applied after any cache, so one cached listing serves every filter). */
  readonly keep?: (record: T) => boolean;
}

/** One work item's record, inside its transaction (see RecordStore.transaction). */
export interface RecordTransaction<T> {
  /** The record as it is now, under the lock; throws DamagedRecordError when it is damaged. */
  read(): T | undefined;
  /**
   * Replaces the record whole, atomically; answers what was stored (the schema's output). An
   * invalid record, or one naming another work item, is a bug: thrown before anything is written.
   */
  write(record: T): Promise<T>;
  /** Deletes the record durably (no error when there is none). */
  remove(): Promise<void>;
}

/** The records of one kind, one per work item. Work items are refs in any spelling. */
export interface RecordStore<T> {
  /** The item's record; undefined when it has none. Throws DamagedRecordError. */
  get(item: string): Promise<T | undefined>;
  /** Every record; one that is damaged goes in `problems` instead of failing the listing. */
  list(options?: ListRecordsOptions<T>): Promise<RecordListing<T>>;
  /**
   * Runs `work` holding the item's lock, which every process sharing the store respects: read →
   * decide → write without another writer in between. Not reentrant: a transaction on the item
   * inside its own throws at once rather than wait for itself. The transaction is dead once
   * `work` settles; a write it left running is waited for before the lock is released.
   */
  transaction<R>(item: string, work: (tx: RecordTransaction<T>) => Promise<R>): Promise<R>;
  /** Deletes the item's record, under its lock; whether there was one. */
  remove(item: string): Promise<boolean>;
  /**
   * Moves the item's record aside, under its lock: kept for an operator to inspect, no longer
   * the item's. Answers where it went; undefined when there was no record.
   */
  moveAside(item: string, reason: string): Promise<string | undefined>;
}

/**
 * A store whose reads can also be answered synchronously — the router's view, the start-up
 * budget of `sessions list`. The file store reads its files; a database-backed store answers from
 * an in-memory mirror kept fresh by the database's notifications, with a staleness bound of its own.
 */
export interface SyncRecordStore<T> extends RecordStore<T> {
  /** get(), synchronously. */
  readSync(item: string): T | undefined;
  /** list(), synchronously. */
  listSync(options?: ListRecordsOptions<T>): RecordListing<T>;
}
