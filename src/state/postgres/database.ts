import type { Client, Notification, Pool, PoolClient } from "pg";
import { rememberSecret } from "../../secrets.js";
import { RECORDS_CHANNEL, RECORDS_TABLE, migrate } from "./migrations.js";
import type { MigrationReport } from "./migrations.js";
import { LockTurns } from "./lock-turns.js";

/**
 * One process's connection to a PostgreSQL state: a pool for reads, writes and transactions, and
 * one listening connection that keeps an in-memory mirror of every record, so that the stores'
 * synchronous readers (the router's view, `sessions list`) answer without a round trip.
 *
 * The mirror. At open, and again after each reconnection of the listener, every row is loaded
 * (LISTEN first, then the load, so no change falls between them). Every insert and update of a
 * record row is announced on RECORDS_CHANNEL by a trigger, with its kind, item and seq; the
 * listener fetches the rows announced since its last fetch in one query and keeps each one whose
 * seq is newer than what it holds (a removal is an update to a body-less row, so it has a seq too).
 * A write this process makes is applied to the mirror as soon as the database has it.
 *
 * Staleness bound: the notification of a commit reaches the listener when the commit is done
 * (PostgreSQL delivers notifications in commit order), and the mirror holds the row after one
 * more query — a few milliseconds on one network. `sync()` waits for exactly that: a notification
 * of its own, sent after the caller's point in time, and the fetch that follows everything before
 * it. While the listener is down, the mirror serves the last rows it had: `mirrorStatus()` says
 * since when, the listener reconnects within `reconnectMs` (then reloads everything), and a dead
 * connection that reports no error is found by a probe every `heartbeatMs`. So a read is at most
 * `heartbeatMs + reconnectMs` plus the reload old while the database is reachable at all.
 * Decisions never rest on the mirror: a transaction reads its row from the database, under the
 * row's lock.
 */

export interface PostgresDatabaseOptions {
  /** postgresql://… — a secret: remembered for redaction at once, never logged. */
  readonly url: string;
  /** Who this process is (the daemon's name): its connections' application_name, and who ran a migration. */
  readonly name: string;
  /** How long a transaction waits for a record's lock (default 15 s, as the file store's). */
  readonly lockTimeoutMs?: number;
  /** The listener's probe interval (default 5 s). */
  readonly heartbeatMs?: number;
  /** The wait before a lost listener reconnects (default 1 s). */
  readonly reconnectMs?: number;
  /** Connections of the pool (default 10). */
  readonly poolSize?: number;
}

export interface MirrorEntry {
  readonly seq: bigint;
  /** The stored JSON value; null for a removed record. */
  readonly body: unknown;
}

export interface MirrorStatus {
  readonly listening: boolean;
  /** When the listener was lost (ms since the epoch), while it is. */
  readonly lostAt?: number;
  /** Rows the mirror holds (removed records included). */
  readonly rows: number;
}

interface Row {
  readonly kind: string;
  readonly item: string;
  readonly body: unknown;
  readonly seq: string;
}

const entryKey = (kind: string, item: string): string => `${kind}\u0000${item}`;

/** Both spellings of the URL's password (as written and decoded), for the redactor. */
function rememberUrl(url: string): void {
  rememberSecret(url);
  try {
    const password = new URL(url).password;
    rememberSecret(password);
    rememberSecret(decodeURIComponent(password));
  } catch {
    // Not a URL the WHATWG parser reads (pg also takes `key=value` strings): the whole is remembered.
  }
}

export class PostgresDatabase {
  readonly pool: Pool;
  readonly lockTimeoutMs: number;
  readonly migration: MigrationReport;
  /** This process's callers of each advisory lock, in turn (lock-turns.ts). */
  readonly lockTurns = new LockTurns();
  private readonly options: PostgresDatabaseOptions;
  private readonly ListenerClient: typeof Client;
  private readonly mirror = new Map<string, MirrorEntry>();
  private readonly byKind = new Map<string, Set<string>>();
  private readonly newestOf = new Map<string, bigint>();
  private listener: Client | undefined;
  private lostAt: number | undefined;
  private pending = new Map<string, { kind: string; item: string }>();
  private chain: Promise<void> = Promise.resolve();
  private syncs = new Map<string, () => void>();
  private syncCount = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private reconnecting: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(listenerClient: typeof Client, pool: Pool, options: PostgresDatabaseOptions, migration: MigrationReport) {
    this.ListenerClient = listenerClient;
    this.pool = pool;
    this.options = options;
    this.migration = migration;
    this.lockTimeoutMs = options.lockTimeoutMs ?? 15_000;
  }

  /** Connects, migrates the schema (or refuses a newer one), and loads the mirror. */
  static async open(options: PostgresDatabaseOptions): Promise<PostgresDatabase> {
    rememberUrl(options.url);
    // Loaded here: a file-store process never loads the driver.
    const pgModule = (await import("pg")).default;
    const pool = new pgModule.Pool({
      connectionString: options.url,
      application_name: `the-loop ${options.name}`.slice(0, 63),
      max: options.poolSize ?? 10,
      lock_timeout: options.lockTimeoutMs ?? 15_000,
    });
    // An idle connection the server or the network dropped: the pool discards it and connects anew
    // for the next query, whose own error (if the database is really gone) is the one reported.
    pool.on("error", () => undefined);
    let migration: MigrationReport;
    try {
      const client = await pool.connect();
      try {
        migration = await migrate(client, options.name);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end();
      throw error;
    }
    const database = new PostgresDatabase(pgModule.Client, pool, options, migration);
    try {
      await database.listen();
    } catch (error) {
      await database.close();
      throw error;
    }
    return database;
  }

  /** The mirror's row of a record; undefined when the table has none. */
  mirrored(kind: string, item: string): MirrorEntry | undefined {
    return this.mirror.get(entryKey(kind, item));
  }

  /** Every mirrored row of a kind, with its item. */
  *mirroredOf(kind: string): Iterable<[string, MirrorEntry]> {
    for (const item of this.byKind.get(kind) ?? []) {
      const entry = this.mirror.get(entryKey(kind, item));
      if (entry !== undefined) yield [item, entry];
    }
  }

  /**
   * The newest seq the mirror holds of a kind: it moves with every write and removal of one of the
   * kind's records, by any process, so an unchanged stamp means unchanged records (undefined: none yet).
   */
  kindStamp(kind: string): string | undefined {
    return this.newestOf.get(kind)?.toString();
  }

  /** A row this process wrote (or removed), applied at once. */
  applyOwn(kind: string, item: string, seq: bigint, body: unknown): void {
    this.apply(kind, item, seq, body);
  }

  /** Resolves once the mirror holds every change committed before the call. */
  async sync(): Promise<void> {
    const token = `${process.pid}.${++this.syncCount}.${Date.now()}`;
    const reached = new Promise<void>((resolve) => this.syncs.set(token, resolve));
    await this.pool.query("SELECT pg_notify($1, $2)", [RECORDS_CHANNEL, JSON.stringify({ sync: token })]);
    await reached;
  }

  mirrorStatus(): MirrorStatus {
    return { listening: this.listener !== undefined, ...(this.lostAt !== undefined ? { lostAt: this.lostAt } : {}), rows: this.mirror.size };
  }

  /** A connection of its own, not yet connected (a listener on another channel): `purpose` ends its application_name. */
  client(purpose: string, settings: { readonly query_timeout?: number } = {}): Client {
    return new this.ListenerClient({
      connectionString: this.options.url,
      application_name: `the-loop ${this.options.name} ${purpose}`.slice(0, 63),
      ...settings,
    });
  }

  /** A pooled connection, for a transaction. */
  connect(): Promise<PoolClient> {
    return this.pool.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    clearTimeout(this.reconnecting);
    const listener = this.listener;
    this.listener = undefined;
    for (const resolve of this.syncs.values()) resolve();
    this.syncs.clear();
    // Ending a connection that is already broken: nothing is left to end.
    await listener?.end().catch(() => undefined);
    await this.chain;
    await this.pool.end();
  }

  private apply(kind: string, item: string, seq: bigint, body: unknown): void {
    const key = entryKey(kind, item);
    const held = this.mirror.get(key);
    if (held !== undefined && held.seq >= seq) return;
    this.mirror.set(key, { seq, body });
    if ((this.newestOf.get(kind) ?? -1n) < seq) this.newestOf.set(kind, seq);
    let items = this.byKind.get(kind);
    if (items === undefined) this.byKind.set(kind, (items = new Set()));
    items.add(item);
  }

  private applyRows(rows: readonly Row[]): void {
    for (const row of rows) this.apply(row.kind, row.item, BigInt(row.seq), row.body);
  }

  /** LISTEN, then load every row: a change committed meanwhile is both loaded and announced, and kept once. */
  private async listen(): Promise<void> {
    const client = new this.ListenerClient({ connectionString: this.options.url, application_name: `the-loop ${this.options.name} mirror`.slice(0, 63) });
    client.on("error", () => this.lose(client));
    client.on("end", () => this.lose(client));
    client.on("notification", (message) => this.notified(message));
    await client.connect();
    try {
      await client.query(`LISTEN ${RECORDS_CHANNEL}`);
      const { rows } = await client.query<Row>(`SELECT kind, item, body, seq::text AS seq FROM ${RECORDS_TABLE}`);
      this.applyRows(rows);
    } catch (error) {
      // Ending a connection that failed while it was set up: its error is the one thrown.
      await client.end().catch(() => undefined);
      throw error;
    }
    this.listener = client;
    this.lostAt = undefined;
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => this.probe(client), this.options.heartbeatMs ?? 5_000);
    this.heartbeat.unref();
  }

  private probe(client: Client): void {
    const timeout = this.options.heartbeatMs ?? 5_000;
    let answered = false;
    const timer = setTimeout(() => {
      if (!answered) this.lose(client);
    }, timeout);
    timer.unref();
    client.query("SELECT 1").then(
      () => {
        answered = true;
        clearTimeout(timer);
      },
      () => this.lose(client),
    );
  }

  private lose(client: Client): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    this.lostAt = Date.now();
    clearInterval(this.heartbeat);
    // The connection is being given up: an error ending it says nothing more.
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    this.reconnecting = setTimeout(() => {
      this.listen().catch(() => this.scheduleReconnect());
    }, this.options.reconnectMs ?? 1_000);
    this.reconnecting.unref();
  }

  private notified(message: Notification): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(message.payload ?? "");
    } catch {
      // Not a notification of ours (another program on the channel): nothing to fetch.
      return;
    }
    // Not an object: not a notification of ours either.
    if (typeof parsed !== "object" || parsed === null) return;
    const payload: { kind?: unknown; item?: unknown; seq?: unknown; sync?: unknown } = parsed;
    if (typeof payload.sync === "string") {
      const resolve = this.syncs.get(payload.sync);
      if (resolve === undefined) return;
      this.syncs.delete(payload.sync);
      this.chain = this.chain.then(() => this.flush()).then(resolve, resolve);
      return;
    }
    if (typeof payload.kind !== "string" || typeof payload.item !== "string") return;
    const seq = typeof payload.seq === "number" || typeof payload.seq === "string" ? BigInt(payload.seq) : undefined;
    const held = this.mirror.get(entryKey(payload.kind, payload.item));
    // This process's own write, already applied.
    if (seq !== undefined && held !== undefined && held.seq >= seq) return;
    this.pending.set(entryKey(payload.kind, payload.item), { kind: payload.kind, item: payload.item });
    this.chain = this.chain.then(() => this.flush());
  }

  /** Fetches every announced row not fetched yet, in one query. */
  private async flush(): Promise<void> {
    if (this.pending.size === 0 || this.closed) return;
    const wanted = [...this.pending.values()];
    this.pending = new Map();
    try {
      const { rows } = await this.pool.query<Row>(
        `SELECT r.kind, r.item, r.body, r.seq::text AS seq FROM ${RECORDS_TABLE} r JOIN unnest($1::text[], $2::text[]) AS w(kind, item) ON r.kind = w.kind AND r.item = w.item`,
        [wanted.map((entry) => entry.kind), wanted.map((entry) => entry.item)],
      );
      this.applyRows(rows);
    } catch {
      // The fetch failed (the database is going away): the listener's reconnection reloads every
      // row, which covers these; until then the mirror keeps what it had.
      if (this.listener !== undefined && !this.closed) this.lose(this.listener);
    }
  }
}
