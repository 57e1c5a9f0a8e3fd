/**
 * The inbox of daemons that share one database (docs/scale.md, "Many daemons, one database"): an
 * event or a CLI command that reached a daemon which does not own its work item is written here,
 * addressed to the item's owner, and announced on INBOX_CHANNEL. One row per delivery or command,
 * under its key, so an event that reaches several daemons — or one daemon twice — is recorded once.
 * The owner takes the rows addressed to it in id order, runs them through its normal dispatch and
 * marks each done (with its answer, for a command); a row addressed to a daemon that is gone goes to
 * the item's next owner. What a row says, and who takes it, is decided in src/forwarding/.
 */

export const INBOX_TABLE = "the_loop_inbox";
/** The channel every new, readdressed or answered row is announced on: its id, addressee and whether it is done. */
export const INBOX_CHANNEL = "the_loop_inbox";

/** Migration 5 (migrations.ts lists it in order). This module imports nothing, so the list imports it without a cycle. */
export const INBOX_MIGRATION = {
  version: 5,
  name: "the inbox of forwarded events and commands, announced",
  sql: `
    CREATE TABLE ${INBOX_TABLE} (
      id bigserial PRIMARY KEY,
      -- The delivery's dedupe id (event:…) or a command's own id (command:…): recorded once.
      key text NOT NULL UNIQUE,
      kind text NOT NULL,
      item text NOT NULL,
      addressee text NOT NULL,
      sender text NOT NULL,
      body json NOT NULL,
      -- How often it was readdressed (a lapsed owner, an owner that found the item owned elsewhere).
      hops integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      -- A command's row is taken before it runs: a caller that gave up waiting withdraws only an untaken one.
      taken_at timestamptz,
      taken_by text,
      done_at timestamptz,
      done_by text,
      answer json
    );
    CREATE INDEX ${INBOX_TABLE}_pending ON ${INBOX_TABLE} (addressee, id) WHERE done_at IS NULL;
    CREATE FUNCTION ${INBOX_TABLE}_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('${INBOX_CHANNEL}', json_build_object('id', NEW.id, 'addressee', NEW.addressee, 'done', NEW.done_at IS NOT NULL)::text);
      RETURN NULL;
    END
    $$;
    CREATE TRIGGER ${INBOX_TABLE}_changed AFTER INSERT OR UPDATE ON ${INBOX_TABLE}
      FOR EACH ROW EXECUTE FUNCTION ${INBOX_TABLE}_notify();
  `,
} as const;

export type InboxKind = "event" | "command";

/** A row to post: addressed to `addressee`, from `sender`. */
export interface InboxPost {
  readonly key: string;
  readonly kind: InboxKind;
  readonly item: string;
  readonly addressee: string;
  readonly sender: string;
  readonly body: unknown;
}

/** A row as the table holds it. */
export interface InboxRow extends InboxPost {
  readonly id: string;
  readonly hops: number;
  readonly createdAt: Date;
  readonly takenBy: string | null;
  readonly doneAt: Date | null;
  readonly doneBy: string | null;
  readonly answer: unknown;
}

/** What a post did: a new row, a pending one readdressed, or nothing (the key was pending to that addressee, or done already). */
export interface Posted {
  readonly id: string;
  readonly outcome: "recorded" | "readdressed" | "pending" | "done-already";
}

interface RawRow {
  id: string;
  key: string;
  kind: InboxKind;
  item: string;
  addressee: string;
  sender: string;
  body: unknown;
  hops: number;
  created_at: Date;
  taken_by: string | null;
  done_at: Date | null;
  done_by: string | null;
  answer: unknown;
}

const rowOf = (raw: RawRow): InboxRow => ({
  id: raw.id,
  key: raw.key,
  kind: raw.kind,
  item: raw.item,
  addressee: raw.addressee,
  sender: raw.sender,
  body: raw.body,
  hops: raw.hops,
  createdAt: raw.created_at,
  takenBy: raw.taken_by,
  doneAt: raw.done_at,
  doneBy: raw.done_by,
  answer: raw.answer,
});

const COLUMNS = "id::text AS id, key, kind, item, addressee, sender, body, hops, created_at, taken_by, done_at, done_by, answer";

/** The queries this module sends: a pg pool or client. */
export interface InboxSql {
  query<R extends object = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<{ rows: R[] }>;
}

export class PostgresInbox {
  constructor(private readonly sql: InboxSql) {}

  /**
   * Records the row once under its key. A key already pending is readdressed to `addressee` (its
   * hops counted) rather than recorded again; a key already done is left alone.
   */
  async post(row: InboxPost): Promise<Posted> {
    const { rows } = await this.sql.query<{ id: string; inserted: boolean; done: boolean }>(
      `INSERT INTO ${INBOX_TABLE} (key, kind, item, addressee, sender, body) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (key) DO UPDATE SET addressee = EXCLUDED.addressee, hops = ${INBOX_TABLE}.hops + 1, taken_at = NULL, taken_by = NULL
         WHERE ${INBOX_TABLE}.done_at IS NULL AND ${INBOX_TABLE}.addressee <> EXCLUDED.addressee
       RETURNING id::text AS id, (xmax = 0) AS inserted, done_at IS NOT NULL AS done`,
      [row.key, row.kind, row.item, row.addressee, row.sender, JSON.stringify(row.body)],
    );
    const first = rows[0];
    if (first !== undefined) return { id: first.id, outcome: first.inserted ? "recorded" : "readdressed" };
    // The conflict's WHERE held back the update: done, or pending to the same addressee already.
    const held = await this.byKey(row.key);
    return { id: held?.id ?? "", outcome: held === undefined || held.doneAt !== null ? "done-already" : "pending" };
  }

  /** Every row not done yet, in id order (the table holds what is in flight between daemons: a few rows). */
  async pending(): Promise<InboxRow[]> {
    const { rows } = await this.sql.query<RawRow>(`SELECT ${COLUMNS} FROM ${INBOX_TABLE} WHERE done_at IS NULL ORDER BY id`);
    return rows.map(rowOf);
  }

  /** Moves a pending row from `from` to `to`; whether it moved (another daemon may have moved it first). */
  async readdress(id: string, from: string, to: string): Promise<boolean> {
    const { rows } = await this.sql.query(
      `UPDATE ${INBOX_TABLE} SET addressee = $3, hops = hops + 1, taken_at = NULL, taken_by = NULL WHERE id = $1 AND addressee = $2 AND done_at IS NULL RETURNING id`,
      [id, from, to],
    );
    return rows.length > 0;
  }

  /** Takes a pending row addressed to `by` before it runs; whether it was still there to take. */
  async take(id: string, by: string): Promise<boolean> {
    const { rows } = await this.sql.query(
      `UPDATE ${INBOX_TABLE} SET taken_at = now(), taken_by = $2 WHERE id = $1 AND addressee = $2 AND done_at IS NULL AND (taken_by IS NULL OR taken_by = $2) RETURNING id`,
      [id, by],
    );
    return rows.length > 0;
  }

  /** Withdraws a row nobody has taken yet (its caller stopped waiting): it is done, and never runs; whether it was withdrawn. */
  async withdraw(id: string, by: string, answer: unknown): Promise<boolean> {
    const { rows } = await this.sql.query(
      `UPDATE ${INBOX_TABLE} SET done_at = now(), done_by = $2, answer = $3 WHERE id = $1 AND done_at IS NULL AND taken_by IS NULL RETURNING id`,
      [id, by, JSON.stringify(answer)],
    );
    return rows.length > 0;
  }

  /** Marks a row done by `by`, with its answer, if it is still addressed to `by`; whether it was. */
  async done(id: string, by: string, answer?: unknown): Promise<boolean> {
    const { rows } = await this.sql.query(
      `UPDATE ${INBOX_TABLE} SET done_at = now(), done_by = $2, answer = $3 WHERE id = $1 AND addressee = $2 AND done_at IS NULL RETURNING id`,
      [id, by, answer === undefined ? null : JSON.stringify(answer)],
    );
    return rows.length > 0;
  }

  async byId(id: string): Promise<InboxRow | undefined> {
    const { rows } = await this.sql.query<RawRow>(`SELECT ${COLUMNS} FROM ${INBOX_TABLE} WHERE id = $1`, [id]);
    const first = rows[0];
    return first === undefined ? undefined : rowOf(first);
  }

  async byKey(key: string): Promise<InboxRow | undefined> {
    const { rows } = await this.sql.query<RawRow>(`SELECT ${COLUMNS} FROM ${INBOX_TABLE} WHERE key = $1`, [key]);
    const first = rows[0];
    return first === undefined ? undefined : rowOf(first);
  }

  /** Forgets done rows older than `olderThanMs` (their keys then no longer hold a redelivery back); how many. */
  async trim(olderThanMs: number): Promise<number> {
    const { rows } = await this.sql.query(
      `DELETE FROM ${INBOX_TABLE} WHERE done_at IS NOT NULL AND done_at < now() - $1 * interval '1 millisecond' RETURNING id`,
      [olderThanMs],
    );
    return rows.length;
  }
}
