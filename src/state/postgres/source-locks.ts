import { createHash } from "node:crypto";
import type { Client } from "pg";
import type { PostgresDatabase } from "./database.js";

/**
 * The poll sources' locks on PostgreSQL (docs/scale.md, "One poller per source"): a session-level
 * advisory lock per source key, all held on one connection of this process's own, so that the
 * server frees every one of them when the process dies or its connection is lost. Taken with
 * `pg_try_advisory_lock`, never waited for: a source another daemon holds is simply not read here.
 * The keys are 64 bits of a SHA-256 of `poll-source\0<key>`, in a space apart from the records'
 * and the named locks' (which hash other prefixes).
 */

/** The purpose ending the lock connection's application_name (`the-loop <daemon> poller`): how another daemon tells the holder. */
const PURPOSE = "poller";
/** A query on the lock connection that takes longer means the connection is lost. */
const QUERY_TIMEOUT_MS = 5_000;

/** The one-key advisory lock of a poll source. */
export function pollSourceLockKey(key: string): bigint {
  return createHash("sha256").update(`poll-source\u0000${key}`).digest().readBigInt64BE(0);
}

/** The holder's daemon name in its lock connection's application_name; the name as it is otherwise. */
export function holderName(applicationName: string): string {
  const match = /^the-loop (.+) poller$/.exec(applicationName);
  return match?.[1] ?? applicationName;
}

export class PostgresSourceLocks {
  readonly name: string;
  private readonly database: PostgresDatabase;
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private readonly held = new Set<string>();
  private closed = false;

  /** `name`: this daemon's (state.daemonName), which its lock connection carries for the others to read. */
  constructor(database: PostgresDatabase, name: string) {
    this.database = database;
    this.name = name;
  }

  async claim(key: string): Promise<boolean> {
    if (this.closed) return false;
    const holding = this.client;
    if (this.held.has(key) && holding !== undefined) {
      try {
        // The lock is this connection's: asking it something proves both still stand.
        await holding.query("SELECT 1");
        return this.held.has(key);
      } catch {
        // The connection is gone, and every lock with it: try again on a new one, below.
        this.lost(holding);
      }
    }
    const client = await this.connection();
    try {
      const { rows } = await client.query<{ taken: boolean }>("SELECT pg_try_advisory_lock($1::bigint) AS taken", [pollSourceLockKey(key).toString()]);
      if (rows[0]?.taken === true && this.client === client) this.held.add(key);
      return this.held.has(key);
    } catch (error) {
      this.lost(client);
      throw error;
    }
  }

  holds(key: string): boolean {
    return this.held.has(key);
  }

  async holderOf(key: string): Promise<string | undefined> {
    const lock = pollSourceLockKey(key);
    const unsigned = BigInt.asUintN(64, lock);
    // An advisory lock of one bigint key is shown as classid (its high 32 bits), objid (its low ones), objsubid 1.
    const { rows } = await this.database.pool.query<{ name: string | null }>(
      `SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.classid = $1::oid AND l.objid = $2::oid
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [(unsigned >> 32n).toString(), (unsigned & 0xffffffffn).toString()],
    );
    const name = rows[0]?.name;
    return name === null || name === undefined || name === "" ? undefined : holderName(name);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.held.clear();
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    if (client === undefined) return;
    try {
      await client.end();
    } catch {
      // Ending a connection that is already broken: the server has freed its locks with it.
    }
  }

  /** The lock connection, connected once and again after it is lost. */
  private connection(): Promise<Client> {
    if (this.client !== undefined) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const client = this.database.client(PURPOSE, { query_timeout: QUERY_TIMEOUT_MS });
      // A lost connection frees every lock it held: none is held here any more.
      client.on("error", () => this.lost(client));
      client.on("end", () => this.lost(client));
      try {
        await client.connect();
      } catch (error) {
        // Ending a connection that failed while it was set up: its error is the one thrown.
        await client.end().catch(() => undefined);
        throw error;
      }
      this.client = client;
      return client;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private lost(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.held.clear();
    // The connection is given up: an error ending it says nothing more.
    client.end().catch(() => undefined);
  }
}
