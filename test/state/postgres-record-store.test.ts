import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { DamagedRecordError } from "../../src/state/index.js";
import { rowRemedy } from "../../src/state/record-kind.js";
import { PostgresDatabase } from "../../src/state/postgres/database.js";
import { PostgresRecordStore } from "../../src/state/postgres/record-store.js";
import { postgresServer } from "../support/postgres.js";
import { REF, noteKind, noteOf, recordStoreContract } from "./record-store-contract.js";
import type { ContractStore } from "./record-store-contract.js";

/** The record store's contract (record-store-contract.ts) against the PostgreSQL store, on a real server. */

const cluster = postgresServer();
const opened: PostgresDatabase[] = [];
const urlOf = new WeakMap<ContractStore, string>();
const databaseOf = new WeakMap<ContractStore, PostgresDatabase>();

afterEach(async () => {
  await Promise.all(opened.splice(0).map((database) => database.close()));
});

async function open(url: string): Promise<PostgresDatabase> {
  const database = await PostgresDatabase.open({ url, name: "contract", lockTimeoutMs: 2_000 });
  opened.push(database);
  return database;
}

function storeOn(url: string, database: PostgresDatabase, kind: ConstructorParameters<typeof PostgresRecordStore>[0]["kind"]): ContractStore {
  const store = new PostgresRecordStore({ kind, key: "notes", database }) as unknown as ContractStore;
  urlOf.set(store, url);
  databaseOf.set(store, database);
  return store;
}

const located = (store: ContractStore, ref: string): string => (store as unknown as PostgresRecordStore<never>).locate(ref);

recordStoreContract({
  name: "PostgresRecordStore",
  async make(kind) {
    const url = await cluster.freshDatabase();
    return storeOn(url, await open(url), kind);
  },
  async twin(store, kind) {
    const url = urlOf.get(store) as string;
    return storeOn(url, await open(url), kind);
  },
  async putRaw(store, ref, value) {
    const client = new pg.Client({ connectionString: urlOf.get(store) });
    await client.connect();
    try {
      await client.query(
        "INSERT INTO the_loop_records (kind, item, body) VALUES ('notes', $1, $2::json) ON CONFLICT (kind, item) DO UPDATE SET body = EXCLUDED.body, seq = nextval('the_loop_record_seq')",
        [ref, JSON.stringify(value)],
      );
    } finally {
      await client.end();
    }
    await databaseOf.get(store)?.sync();
  },
  where: located,
  home: located,
  remedy: (ref, remedy) =>
    rowRemedy(
      {
        kind: "note",
        item: ref,
        where: "",
        reason: "",
        row: { table: "the_loop_records", asideTable: "the_loop_records_aside", seqName: "the_loop_record_seq", key: "notes" },
      },
      remedy,
    ),
  asideOf: (aside) => /^the_loop_records_aside#\d+$/.test(aside),
});

describe("a damaged row's remedy", () => {
  it("names the row, and the statement it gives moves the row aside so that every process's mirror forgets it", async () => {
    const url = await cluster.freshDatabase();
    const store = storeOn(url, await open(url), noteKind);
    const other = storeOn(url, await open(url), noteKind);
    await store.transaction(REF, async (tx) => tx.write(noteOf(REF)));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(
        "UPDATE the_loop_records SET body = '{\"version\": 2}'::json, seq = nextval('the_loop_record_seq') WHERE kind = 'notes' AND item = $1",
        [REF],
      );
      await databaseOf.get(other)?.sync();
      let message = "";
      try {
        other.readSync(REF);
      } catch (error) {
        expect(error).toBeInstanceOf(DamagedRecordError);
        message = (error as Error).message;
      }
      expect(message).toContain(`It is the row (kind notes, item ${REF}) of the_loop_records in the state database`);
      expect(message).not.toMatch(/\bfile\b/);
      const statement = /move it aside with `([^`]+)`/.exec(message)?.[1];
      expect(statement).toBeDefined();
      await client.query(statement as string);
      const { rows } = await client.query<{ body: unknown }>("SELECT body FROM the_loop_records_aside WHERE kind = 'notes' AND item = $1", [REF]);
      expect(rows).toEqual([{ body: { version: 2 } }]);
    } finally {
      await client.end();
    }
    await databaseOf.get(other)?.sync();
    await databaseOf.get(store)?.sync();
    expect(other.readSync(REF)).toBeUndefined();
    expect(store.readSync(REF)).toBeUndefined();
  });
});
