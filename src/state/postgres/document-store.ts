import type { PoolClient } from "pg";
import { redactKnownSecretsIn } from "../../secrets.js";
import type { DocumentStore } from "../document.js";
import type { PostgresDatabase } from "./database.js";
import { RECORDS_TABLE } from "./migrations.js";
import { recordLockKey, withAdvisoryLock } from "./record-store.js";

/**
 * A named document (state/document.ts) in the records table: kind `document`, the item its name
 * (`start-queue`, `poll-state`), the body its JSON. No work item is named `document`-kind, so no
 * record store lists these rows; the mirror holds them like any other row, for readSync.
 */

/** The records table's kind for documents. */
export const DOCUMENT_KIND = "document";

export class PostgresDocumentStore implements DocumentStore {
  readonly where: string;
  private readonly name: string;
  private readonly database: PostgresDatabase;

  constructor(options: { readonly name: string; readonly database: PostgresDatabase }) {
    this.name = options.name;
    this.database = options.database;
    this.where = `${RECORDS_TABLE}(${DOCUMENT_KIND}, ${options.name})`;
  }

  readSync(): unknown {
    const entry = this.database.mirrored(DOCUMENT_KIND, this.name);
    return entry === undefined || entry.body === null ? undefined : entry.body;
  }

  async read(): Promise<unknown> {
    return this.readWith(this.database.pool);
  }

  async transaction<T>(decide: (current: unknown) => Promise<{ readonly value?: unknown; readonly result: T }>): Promise<T> {
    return withAdvisoryLock(this.database, recordLockKey(DOCUMENT_KIND, this.name), this.where, async (client) => {
      const { value, result } = await decide(await this.readWith(client));
      if (value !== undefined) await this.writeWith(client, value);
      return result;
    });
  }

  async write(value: unknown): Promise<void> {
    await this.writeWith(this.database.pool, value);
  }

  private async readWith(client: Pick<PoolClient, "query">): Promise<unknown> {
    const { rows } = await client.query<{ body: unknown }>(`SELECT body FROM ${RECORDS_TABLE} WHERE kind = $1 AND item = $2 AND body IS NOT NULL`, [
      DOCUMENT_KIND,
      this.name,
    ]);
    return rows[0]?.body;
  }

  private async writeWith(client: Pick<PoolClient, "query">, value: unknown): Promise<void> {
    // No document keeps a secret this process knows, as no record does.
    const body = JSON.parse(JSON.stringify(redactKnownSecretsIn(value))) as unknown;
    const { rows } = await client.query<{ seq: string }>(
      `INSERT INTO ${RECORDS_TABLE} (kind, item, body) VALUES ($1, $2, $3::json)
       ON CONFLICT (kind, item) DO UPDATE SET body = EXCLUDED.body, seq = nextval('the_loop_record_seq'), updated_at = now()
       RETURNING seq::text AS seq`,
      [DOCUMENT_KIND, this.name, JSON.stringify(body)],
    );
    const seq = rows[0]?.seq;
    if (seq !== undefined) this.database.applyOwn(DOCUMENT_KIND, this.name, BigInt(seq), body);
  }
}
