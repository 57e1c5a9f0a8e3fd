import { createHash } from "node:crypto";
import type { PostgresDatabase } from "./database.js";
import { withAdvisoryLock } from "./record-store.js";

/**
 * A lock that is one file under the state root on one host, taken as a database advisory lock when
 * the state is on PostgreSQL, so that every process sharing the database — daemons on other hosts
 * among them — takes the same one. Its key is 64 bits of a SHA-256 of the lock's name, in a space
 * apart from the records' (whose keys hash `record\0…`). The server releases it with the
 * connection of a process that dies holding it.
 */

/** The one-key advisory lock of a named lock. */
export function namedLockKey(name: string): string {
  return createHash("sha256").update(`named-lock\u0000${name}`).digest().readBigInt64BE(0).toString();
}

/** Runs `work` holding the named lock (waiting at most the database's lock_timeout, then a LockTimeoutError naming the lock). */
export function withNamedLock<T>(database: PostgresDatabase, name: string, work: () => Promise<T>): Promise<T> {
  return withAdvisoryLock(database, namedLockKey(name), `the database lock "${name}"`, () => work());
}
