import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import type { PoolClient } from "pg";
import type { z } from "zod";
import { LockCompromisedError, LockTimeoutError } from "../lock.js";
import { RecordCodec, canonicalItem } from "../record-codec.js";
import type { ListRecordsOptions, RecordKind, RecordListing, RecordProblem, RecordTransaction, SyncRecordStore } from "../record-kind.js";
import type { MirrorEntry, PostgresDatabase } from "./database.js";
import { ASIDE_TABLE, RECORDS_TABLE, RECORD_SEQ } from "./migrations.js";

/**
 * The PostgreSQL RecordStore: the rows of one kind in the records table, keyed by the kind's
 * storage key and the work item's canonical ref, the body stored as `json` (its text as written,
 * so a record reads back with its keys in order).
 *
 * A transaction is what the file store's is, on a connection of its own: it takes the item's
 * advisory lock (session-level, so each write inside it commits — is durable — when it resolves,
 * as an atomic rename is, while the lock is held across the whole read → decide → write), reads
 * the row, and follows its own writes. Every process sharing the database takes the same lock, and
 * the server releases a killed process's lock with its connection, so no stale-lock takeover is
 * needed. A removal leaves a row without a body (a tombstone), which the mirror needs (database.ts).
 *
 * The synchronous readers answer from the database's mirror (database.ts says how fresh it is).
 */

export interface PostgresRecordStoreOptions<S extends z.ZodType> {
  readonly kind: RecordKind<S>;
  /** The kind's name in the table (`sessions`, `control`): never changed once records are stored under it. */
  readonly key: string;
  readonly database: PostgresDatabase;
}

/** The items whose transaction the current async call chain is inside, as `<key>\0<item>`. */
const openTransactions = new AsyncLocalStorage<ReadonlySet<string>>();

/** The advisory lock of one record: 64 bits of a SHA-256, in the one-key form (migrations use the two-key one). */
export function recordLockKey(key: string, item: string): string {
  return createHash("sha256").update(`record\u0000${key}\u0000${item}`).digest().readBigInt64BE(0).toString();
}

/** A lock wait cut short by lock_timeout (SQLSTATE 55P03). */
const isLockTimeout = (error: unknown): boolean => typeof error === "object" && error !== null && (error as { code?: unknown }).code === "55P03";

/** What frees a database's advisory lock, for its timeout's message. */
export const ADVISORY_LOCK_REMEDY =
  "a lock of the state database, which the server frees when its holder's connection ends, a killed process's among them; " +
  "to see who holds it: SELECT pid, application_name, query FROM pg_locks JOIN pg_stat_activity USING (pid) WHERE locktype = 'advisory'";

/**
 * Runs `critical` on a pooled connection of its own holding the advisory lock `lockKey`. The
 * process's callers for one key take turns first (lock-turns.ts), so no more than one of them
 * holds a connection while it waits at the server; each wait, for its turn and then for the
 * server's lock, is bounded by the database's lock_timeout, then a LockTimeoutError names `where`.
 * A connection that failed while the lock was held is closed rather than reused, which releases
 * the lock with it.
 */
export async function withAdvisoryLock<R>(
  database: PostgresDatabase,
  lockKey: string,
  where: string,
  critical: (client: PoolClient) => Promise<R>,
): Promise<R> {
  const endTurn = await database.lockTurns.take(lockKey, database.lockTimeoutMs, () => lockTimeout(database, where));
  try {
    return await lockedOnConnection(database, lockKey, where, critical);
  } finally {
    endTurn();
  }
}

const lockTimeout = (database: PostgresDatabase, where: string): LockTimeoutError => new LockTimeoutError(where, database.lockTimeoutMs, ADVISORY_LOCK_REMEDY);

async function lockedOnConnection<R>(database: PostgresDatabase, lockKey: string, where: string, critical: (client: PoolClient) => Promise<R>): Promise<R> {
  const client = await database.connect();
  let broken: Error | undefined;
  const onError = (error: Error): void => {
    broken = error;
  };
  client.on("error", onError);
  try {
    try {
      await client.query("SELECT pg_advisory_lock($1::bigint)", [lockKey]);
    } catch (error) {
      if (isLockTimeout(error)) throw lockTimeout(database, where);
      throw error;
    }
    const result = await critical(client);
    if (broken !== undefined) {
      throw new LockCompromisedError(`the lock on ${where} was lost while held (${broken.message}); retry the operation`);
    }
    return result;
  } finally {
    client.off("error", onError);
    if (broken === undefined) {
      try {
        await client.query("SELECT pg_advisory_unlock($1::bigint)", [lockKey]);
      } catch (error) {
        broken = error instanceof Error ? error : new Error(String(error));
      }
    }
    // A connection that failed is closed, not reused: closing it releases its lock too.
    client.release(broken);
  }
}

export class PostgresRecordStore<S extends z.ZodType> implements SyncRecordStore<z.output<S>> {
  readonly key: string;
  private readonly kind: RecordKind<S>;
  private readonly codec: RecordCodec<S>;
  private readonly database: PostgresDatabase;

  constructor(options: PostgresRecordStoreOptions<S>) {
    this.kind = options.kind;
    this.key = options.key;
    this.database = options.database;
    this.codec = new RecordCodec(options.kind, { table: RECORDS_TABLE, asideTable: ASIDE_TABLE, seqName: RECORD_SEQ, key: options.key });
  }

  /** Where a record is, in messages: `the_loop_records(sessions, github:octo/repo#15)`. */
  locate(item: string): string {
    return `${RECORDS_TABLE}(${this.key}, ${canonicalItem(item)})`;
  }

  /** The newest seq of the kind in the mirror: any process's write or removal moves it. */
  changeStamp(): string | undefined {
    return this.database.kindStamp(this.key);
  }

  /** The work item a record names, by the kind's item field. */
  itemOf(record: z.output<S>): string | undefined {
    return this.codec.itemOf(record);
  }

  readSync(item: string): z.output<S> | undefined {
    const canonical = canonicalItem(item);
    const entry = this.database.mirrored(this.key, canonical);
    if (entry === undefined || entry.body === null) return undefined;
    return this.codec.recordOf(canonical, this.locate(canonical), entry.body);
  }

  async get(item: string): Promise<z.output<S> | undefined> {
    const canonical = canonicalItem(item);
    const { rows } = await this.database.pool.query<{ body: unknown }>(`SELECT body FROM ${RECORDS_TABLE} WHERE kind = $1 AND item = $2 AND body IS NOT NULL`, [
      this.key,
      canonical,
    ]);
    const row = rows[0];
    return row === undefined ? undefined : this.codec.recordOf(canonical, this.locate(canonical), row.body);
  }

  async list(options: ListRecordsOptions<z.output<S>> = {}): Promise<RecordListing<z.output<S>>> {
    const { rows } = await this.database.pool.query<{ item: string; body: unknown }>(
      `SELECT item, body FROM ${RECORDS_TABLE} WHERE kind = $1 AND body IS NOT NULL`,
      [this.key],
    );
    return this.listingOf(
      rows.map((row) => [row.item, row.body]),
      options.keep,
    );
  }

  listSync(options: ListRecordsOptions<z.output<S>> = {}): RecordListing<z.output<S>> {
    const rows: [string, unknown][] = [];
    for (const [item, entry] of this.database.mirroredOf(this.key) as Iterable<[string, MirrorEntry]>) {
      if (entry.body !== null) rows.push([item, entry.body]);
    }
    return this.listingOf(rows, options.keep);
  }

  async transaction<R>(item: string, work: (tx: RecordTransaction<z.output<S>>) => Promise<R>): Promise<R> {
    const canonical = canonicalItem(item);
    this.refuseReentry(canonical);
    // Loaded before locking, so the first write does not hold the lock while the schema loads.
    const schema = await this.codec.schema();
    return this.locked(canonical, async (client) => {
      const { rows } = await client.query<{ body: unknown }>(`SELECT body FROM ${RECORDS_TABLE} WHERE kind = $1 AND item = $2 AND body IS NOT NULL`, [
        this.key,
        canonical,
      ]);
      let current: { readonly body: unknown } | undefined = rows[0];
      let open = true;
      const pending = new Set<Promise<unknown>>();
      const ensureOpen = (what: string): void => {
        if (!open) throw new Error(`the ${this.kind.name} transaction on ${canonical} is over; a ${what} after it would not be locked`);
      };
      const track = async <V>(change: Promise<V>): Promise<V> => {
        pending.add(change);
        try {
          return await change;
        } finally {
          pending.delete(change);
        }
      };
      const tx: RecordTransaction<z.output<S>> = {
        read: () => {
          ensureOpen("read");
          return current === undefined ? undefined : this.codec.recordOf(canonical, this.locate(canonical), current.body);
        },
        write: async (record) => {
          ensureOpen("write");
          const valid = this.codec.validated(schema, canonical, record);
          await track(this.upsert(client, canonical, valid));
          current = { body: valid };
          return valid;
        },
        remove: async () => {
          ensureOpen("remove");
          await track(this.tombstone(client, canonical));
          current = undefined;
        },
      };
      try {
        return await work(tx);
      } finally {
        open = false;
        await Promise.allSettled([...pending]);
      }
    });
  }

  async remove(item: string): Promise<boolean> {
    const canonical = canonicalItem(item);
    this.refuseReentry(canonical);
    return this.locked(canonical, (client) => this.tombstone(client, canonical));
  }

  /** Moves the row's body into the aside table and leaves a tombstone, in one transaction; answers the aside row. */
  async moveAside(item: string, reason: string): Promise<string | undefined> {
    const canonical = canonicalItem(item);
    this.refuseReentry(canonical);
    const label =
      reason
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, "-")
        .replace(/^-+|-+$/g, "") || "aside";
    return this.locked(canonical, async (client) => {
      await client.query("BEGIN");
      try {
        const { rows } = await client.query<{ id: string }>(
          `INSERT INTO ${ASIDE_TABLE} (kind, item, reason, body) SELECT kind, item, $3, body FROM ${RECORDS_TABLE} WHERE kind = $1 AND item = $2 AND body IS NOT NULL RETURNING id::text AS id`,
          [this.key, canonical, label],
        );
        const id = rows[0]?.id;
        if (id !== undefined) await this.tombstone(client, canonical);
        await client.query("COMMIT");
        return id === undefined ? undefined : `${ASIDE_TABLE}#${id}`;
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      }
    });
  }

  private async upsert(client: PoolClient, item: string, body: unknown): Promise<void> {
    const { rows } = await client.query<{ seq: string }>(
      `INSERT INTO ${RECORDS_TABLE} (kind, item, body) VALUES ($1, $2, $3::json)
       ON CONFLICT (kind, item) DO UPDATE SET body = EXCLUDED.body, seq = nextval('${RECORD_SEQ}'), updated_at = now()
       RETURNING seq::text AS seq`,
      [this.key, item, JSON.stringify(body)],
    );
    const seq = rows[0]?.seq;
    if (seq !== undefined) this.database.applyOwn(this.key, item, BigInt(seq), body);
  }

  /** Whether there was a record to remove. */
  private async tombstone(client: PoolClient, item: string): Promise<boolean> {
    const { rows } = await client.query<{ seq: string }>(
      `UPDATE ${RECORDS_TABLE} SET body = NULL, seq = nextval('${RECORD_SEQ}'), updated_at = now()
       WHERE kind = $1 AND item = $2 AND body IS NOT NULL RETURNING seq::text AS seq`,
      [this.key, item],
    );
    const seq = rows[0]?.seq;
    if (seq === undefined) return false;
    this.database.applyOwn(this.key, item, BigInt(seq), null);
    return true;
  }

  private refuseReentry(canonical: string): void {
    if (openTransactions.getStore()?.has(`${this.key}\u0000${canonical}`)) {
      throw new Error(`a ${this.kind.name} transaction on ${canonical} is already open in this call chain; transactions are not reentrant`);
    }
  }

  /** Runs `critical` on a connection of its own holding the item's advisory lock. */
  private async locked<R>(canonical: string, critical: (client: PoolClient) => Promise<R>): Promise<R> {
    const outer = openTransactions.getStore();
    return withAdvisoryLock(this.database, recordLockKey(this.key, canonical), this.locate(canonical), (client) =>
      openTransactions.run(new Set([...(outer ?? []), `${this.key}\u0000${canonical}`]), () => critical(client)),
    );
  }

  private listingOf(rows: readonly (readonly [string, unknown])[], keep: ((record: z.output<S>) => boolean) | undefined): RecordListing<z.output<S>> {
    const records: z.output<S>[] = [];
    const problems: RecordProblem[] = [];
    for (const [item, body] of rows) {
      const where = `${RECORDS_TABLE}(${this.key}, ${item})`;
      const checked = this.codec.listed(body);
      if (checked.problem !== undefined) {
        problems.push({ where, message: checked.problem });
        continue;
      }
      const misplaced = this.placementProblem(item, checked.record);
      if (misplaced !== undefined) {
        problems.push({ where, message: misplaced });
        continue;
      }
      if (keep === undefined || keep(checked.record)) records.push(checked.record);
    }
    records.sort(this.kind.order);
    return { records, problems };
  }

  /** Why a valid record does not belong in the row of `item`. */
  private placementProblem(item: string, record: unknown): string | undefined {
    const named = this.codec.namedItem(record);
    if ("problem" in named) return named.problem;
    return named.item === item ? undefined : `it holds ${named.named}, whose record is ${RECORDS_TABLE}(${this.key}, ${named.item})`;
  }
}
