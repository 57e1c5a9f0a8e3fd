import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { forgetKnownSecrets, redactKnownSecrets } from "../../src/secrets.js";
import { LockTimeoutError } from "../../src/state/lock.js";
import { PostgresDatabase } from "../../src/state/postgres/database.js";
import type { PostgresDatabaseOptions } from "../../src/state/postgres/database.js";
import { SCHEMA_VERSION } from "../../src/state/postgres/migrations.js";
import { PostgresRecordStore, recordLockKey } from "../../src/state/postgres/record-store.js";
import { postgresServer } from "../support/postgres.js";
import { waitFor } from "../support/wait.js";
import { OTHER, REF, noteKind, noteOf } from "./record-store-contract.js";

/** The PostgreSQL state beyond the record contract: migrations at start, the mirror, locks, the URL as a secret. */

const cluster = postgresServer();
const opened: PostgresDatabase[] = [];
const clients: pg.Client[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((database) => database.close()));
  await Promise.all(clients.splice(0).map((client) => client.end()));
  forgetKnownSecrets();
});

async function open(url: string, options: Partial<PostgresDatabaseOptions> = {}): Promise<PostgresDatabase> {
  const database = await PostgresDatabase.open({ url, name: "test", lockTimeoutMs: 2_000, ...options });
  opened.push(database);
  return database;
}

async function sql(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  clients.push(client);
  return client;
}

describe("migrations at start", () => {
  it("run once when daemons start together on a new database, each version recorded by the one that ran it", async () => {
    const url = await cluster.freshDatabase();
    const databases = await Promise.all(Array.from({ length: 5 }, (_, index) => open(url, { name: `host-${index}` })));
    const ran = databases.map((database) => database.migration.ran);
    expect(ran.filter((versions) => versions.length > 0)).toEqual([Array.from({ length: SCHEMA_VERSION }, (_, index) => index + 1)]);
    expect(databases.every((database) => database.migration.version === SCHEMA_VERSION)).toBe(true);
    const { rows } = await (
      await sql(url)
    ).query<{ version: number; applied_by: string }>("SELECT version, applied_by FROM the_loop_migrations ORDER BY version");
    expect(rows.map((row) => row.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, index) => index + 1));
    expect(rows[0]?.applied_by).toMatch(/^host-\d$/);
    // A later start finds nothing to do.
    expect((await open(url)).migration).toEqual({ version: SCHEMA_VERSION, ran: [] });
  });

  it("refuse a database a newer the-loop migrated, saying what to do, and leave it as it was", async () => {
    const url = await cluster.freshDatabase();
    await open(url);
    const client = await sql(url);
    await client.query("INSERT INTO the_loop_migrations (version, name, applied_by) VALUES ($1, 'from the future', 'newer')", [SCHEMA_VERSION + 1]);
    await expect(open(url)).rejects.toThrow(
      new RegExp(
        `schema is at version ${SCHEMA_VERSION + 1}, newer than this the-loop knows \\(${SCHEMA_VERSION}\\): a newer the-loop migrated it; upgrade the-loop`,
      ),
    );
    const { rows } = await client.query("SELECT count(*)::int AS count FROM the_loop_migrations");
    expect(rows[0]).toEqual({ count: SCHEMA_VERSION + 1 });
  });
});

describe("the mirror behind the synchronous readers", () => {
  it("shows another process's writes and removals once sync() returns, and this process's own at once", async () => {
    const url = await cluster.freshDatabase();
    const [a, b] = [await open(url, { name: "a" }), await open(url, { name: "b" })];
    const onA = new PostgresRecordStore({ kind: noteKind, key: "notes", database: a });
    const onB = new PostgresRecordStore({ kind: noteKind, key: "notes", database: b });
    await onA.transaction(REF, (tx) => tx.write(noteOf(REF, { text: "from a" })));
    expect(onA.readSync(REF)?.text).toBe("from a");
    await b.sync();
    expect(onB.readSync(REF)?.text).toBe("from a");
    await onB.transaction(REF, (tx) => tx.write(noteOf(REF, { text: "from b" })));
    await onB.transaction(OTHER, (tx) => tx.write(noteOf(OTHER)));
    await onB.remove(OTHER);
    await a.sync();
    expect(onA.readSync(REF)?.text).toBe("from b");
    expect(onA.readSync(OTHER)).toBeUndefined();
    expect(onA.listSync().records.map((note) => note.text)).toEqual(["from b"]);
    expect(a.mirrorStatus()).toMatchObject({ listening: true, rows: 2 });
  });

  it("loads every record at open, and keeps each kind's records apart", async () => {
    const url = await cluster.freshDatabase();
    const writer = await open(url, { name: "writer" });
    await new PostgresRecordStore({ kind: noteKind, key: "notes", database: writer }).transaction(REF, (tx) => tx.write(noteOf(REF)));
    await new PostgresRecordStore({ kind: noteKind, key: "memos", database: writer }).transaction(OTHER, (tx) => tx.write(noteOf(OTHER)));
    const later = await open(url, { name: "later" });
    const notes = new PostgresRecordStore({ kind: noteKind, key: "notes", database: later });
    const memos = new PostgresRecordStore({ kind: noteKind, key: "memos", database: later });
    expect(notes.listSync().records).toEqual([noteOf(REF)]);
    expect(memos.listSync().records).toEqual([noteOf(OTHER)]);
    expect(notes.readSync(OTHER)).toBeUndefined();
    expect((await memos.list()).records).toEqual([noteOf(OTHER)]);
  });

  it("reconnects a listener the server dropped and catches up on what it missed", async () => {
    const url = await cluster.freshDatabase();
    const reader = await open(url, { name: "reader", reconnectMs: 50, heartbeatMs: 200 });
    const writer = await open(url, { name: "writer" });
    const onReader = new PostgresRecordStore({ kind: noteKind, key: "notes", database: reader });
    const onWriter = new PostgresRecordStore({ kind: noteKind, key: "notes", database: writer });
    await onWriter.transaction(REF, (tx) => tx.write(noteOf(REF, { text: "before" })));
    await reader.sync();
    const admin = await sql(url);
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'the-loop reader mirror'");
    await waitFor("the reader to see its listener gone", () => !reader.mirrorStatus().listening);
    expect(reader.mirrorStatus().lostAt).toBeTypeOf("number");
    await onWriter.transaction(REF, (tx) => tx.write(noteOf(REF, { text: "while it was gone" })));
    await onWriter.transaction(OTHER, (tx) => tx.write(noteOf(OTHER)));
    await waitFor("the reader's listener back", () => reader.mirrorStatus().listening);
    await reader.sync();
    expect(onReader.readSync(REF)?.text).toBe("while it was gone");
    expect(onReader.listSync().records).toHaveLength(2);
  });
});

describe("record locks", () => {
  it("time out with a LockTimeoutError naming the record while another connection holds the lock", async () => {
    const url = await cluster.freshDatabase();
    const database = await open(url, { lockTimeoutMs: 300 });
    const store = new PostgresRecordStore({ kind: noteKind, key: "notes", database });
    const holder = await sql(url);
    await holder.query("SELECT pg_advisory_lock($1::bigint)", [recordLockKey("notes", REF)]);
    const error = await store.transaction(REF, async () => 1).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as Error).message).toMatch(/waiting for the lock on the_loop_records\(notes, github:octo\/repo#15\)/);
    // What frees it is the server, not a lock file to remove.
    expect((error as Error).message).toMatch(/frees when its holder's connection ends.*pg_locks/);
    expect((error as Error).message).not.toMatch(/\.lock\b/);
    // Another item is not held up.
    expect(await store.transaction(OTHER, async () => "free")).toBe("free");
  });

  it("taken by more callers of one process than its pool has connections, each querying under the lock, all commit: the callers take turns in the process", async () => {
    const url = await cluster.freshDatabase();
    // Two connections, twelve callers: a caller waiting at the server holds a connection, so
    // without turns the waiters hold both and the holder's own query under the lock never gets one.
    const database = await open(url, { poolSize: 2, lockTimeoutMs: 1_000 });
    const store = new PostgresRecordStore({ kind: noteKind, key: "notes", database });
    const writes = Array.from({ length: 12 }, (_, n) =>
      store.transaction(REF, async (tx) => {
        const { rows } = await database.pool.query<{ n: number }>("SELECT $1::int AS n", [n]);
        return tx.write(noteOf(REF, { text: `write ${rows[0]?.n}` }));
      }),
    );
    const settled = await Promise.allSettled(writes);
    expect(settled.filter((outcome) => outcome.status === "rejected").map((outcome) => String((outcome as PromiseRejectedResult).reason))).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(database.lockTurns.size).toBe(0);
  });

  it("time out waiting for their turn in the process as they do at the server, and the turns after go on", async () => {
    const url = await cluster.freshDatabase();
    const database = await open(url, { lockTimeoutMs: 300 });
    const store = new PostgresRecordStore({ kind: noteKind, key: "notes", database });
    let finish!: () => void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    let entered = false;
    const holding = store.transaction(REF, async (tx) => {
      entered = true;
      await held;
      return tx.write(noteOf(REF, { text: "first" }));
    });
    await waitFor("the first transaction inside the lock", () => entered);
    const error = await store.transaction(REF, async () => 1).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as Error).message).toMatch(/the_loop_records\(notes, github:octo\/repo#15\)/);
    finish();
    await holding;
    expect(await store.transaction(REF, async (tx) => tx.read())).toEqual(noteOf(REF, { text: "first" }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(database.lockTurns.size).toBe(0);
  });

  it("are released by the server when their holder's connection dies, as a killed daemon's would be", async () => {
    const url = await cluster.freshDatabase();
    const database = await open(url);
    const store = new PostgresRecordStore({ kind: noteKind, key: "notes", database });
    const holder = await sql(url);
    clients.splice(clients.indexOf(holder), 1);
    holder.on("error", () => undefined); // Terminated below, on purpose.
    const { rows } = await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    await holder.query("SELECT pg_advisory_lock($1::bigint)", [recordLockKey("notes", REF)]);
    const waiting = store.transaction(REF, (tx) => tx.write(noteOf(REF)));
    const admin = await sql(url);
    await waitFor("the transaction to wait for the lock", async () => {
      const { rows: waiters } = await admin.query<{ count: number }>("SELECT count(*)::int AS count FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
      return waiters[0]?.count === 1;
    });
    await admin.query("SELECT pg_terminate_backend($1)", [rows[0]?.pid]);
    await expect(waiting).resolves.toEqual(noteOf(REF));
  });
});

describe("the URL", () => {
  it("is a secret from the moment the state is opened: it and its password are redacted wherever text quotes them", async () => {
    const url = await cluster.freshDatabase();
    const withPassword = url.replace("loop@", "loop:s3cret-passw0rd@");
    await open(withPassword);
    expect(redactKnownSecrets(`connecting to ${withPassword}`)).toBe("connecting to [redacted]");
    expect(redactKnownSecrets("password s3cret-passw0rd refused")).toBe("password [redacted] refused");
  });
});
