import { EXIT_FAILURE, ExitError } from "../../errors.js";
import { DAEMON_CAPACITY_MIGRATION, LEASES_MIGRATION } from "./leases.js";
import { EVENTS_MIGRATION } from "./event-migration.js";
import { INBOX_MIGRATION } from "./inbox.js";
import { TRANSCRIPT_TAILS_MIGRATION } from "./transcript-tails.js";

/**
 * The database's schema, as numbered migrations run in order at start. Each runs once, in its own
 * transaction with the row that records it, so one that fails leaves nothing half done and is run
 * again at the next start. All of them run under one advisory lock held for the whole start-up
 * migration, so daemons starting together on a new database wait for each other instead of racing:
 * the first migrates, the others find it done.
 *
 * A daemon newer than the schema migrates it; an older one — a database some daemon already
 * migrated further than this daemon knows — refuses to start, since it would read and write records
 * in a shape it does not know. A migration, once landed, is never edited: the next change is the
 * next number.
 */

export interface Migration {
  readonly version: number;
  /** What it does, in a few words (kept in the migrations table). */
  readonly name: string;
  readonly sql: string;
}

/** Every table the-loop keeps starts with this, so a database shared with other software stays legible. */
export const TABLE_PREFIX = "the_loop_";
export const MIGRATIONS_TABLE = `${TABLE_PREFIX}migrations`;
export const RECORDS_TABLE = `${TABLE_PREFIX}records`;
export const ASIDE_TABLE = `${TABLE_PREFIX}records_aside`;
/** The sequence every record row's seq comes from (migration 1). */
export const RECORD_SEQ = `${TABLE_PREFIX}record_seq`;
/** The local tracker's change journal and item snapshots, one set per project (migration 2). */
export const TRACKER_JOURNAL_TABLE = `${TABLE_PREFIX}tracker_journal`;
export const TRACKER_ITEMS_TABLE = `${TABLE_PREFIX}tracker_items`;
/**
 * The seqs and item numbers a local project keeps used beyond its journal rows (migration 7): a
 * file project's `meta.json` after `the-loop item repair` moved its last lines aside, carried by
 * `state migrate`. One row per such project; the database tracker reads it when it numbers a
 * change and when it reads a cursor past the journal's end.
 */
export const TRACKER_PROJECTS_TABLE = `${TABLE_PREFIX}tracker_projects`;
/** The channel every local tracker change is announced on (the trigger of migration 2), with its project and seq. */
export const TRACKER_CHANNEL = `${TABLE_PREFIX}tracker`;
/** The channel every record change is announced on (the trigger of migration 1). */
export const RECORDS_CHANNEL = `${TABLE_PREFIX}records`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "records of every kind, their changes announced",
    sql: `
      CREATE SEQUENCE ${TABLE_PREFIX}record_seq;
      -- One row per kind and work item. A removed record stays as a row without a body (a
      -- tombstone) with a new seq, so a reader that mirrors the table can tell a removal that
      -- came after what it holds from one before it.
      CREATE TABLE ${RECORDS_TABLE} (
        kind text NOT NULL,
        item text NOT NULL,
        body json,
        seq bigint NOT NULL DEFAULT nextval('${TABLE_PREFIX}record_seq'),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (kind, item)
      );
      CREATE TABLE ${ASIDE_TABLE} (
        id bigserial PRIMARY KEY,
        kind text NOT NULL,
        item text NOT NULL,
        reason text NOT NULL,
        body json,
        moved_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE FUNCTION ${TABLE_PREFIX}records_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('${RECORDS_CHANNEL}', json_build_object('kind', NEW.kind, 'item', NEW.item, 'seq', NEW.seq)::text);
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER ${TABLE_PREFIX}records_changed AFTER INSERT OR UPDATE ON ${RECORDS_TABLE}
        FOR EACH ROW EXECUTE FUNCTION ${TABLE_PREFIX}records_notify();
    `,
  },
  {
    version: 2,
    name: "the local tracker's journal and items, their changes announced",
    sql: `
      -- One row per change of a local project, in seq order within the project: the change feed.
      CREATE TABLE ${TRACKER_JOURNAL_TABLE} (
        project text NOT NULL,
        seq integer NOT NULL,
        number integer NOT NULL,
        line json NOT NULL,
        PRIMARY KEY (project, seq)
      );
      -- Each item after the journal up to its seq, written in the transaction of that change.
      CREATE TABLE ${TRACKER_ITEMS_TABLE} (
        project text NOT NULL,
        number integer NOT NULL,
        body json NOT NULL,
        PRIMARY KEY (project, number)
      );
      CREATE FUNCTION ${TABLE_PREFIX}tracker_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('${TRACKER_CHANNEL}', json_build_object('project', NEW.project, 'seq', NEW.seq)::text);
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER ${TABLE_PREFIX}tracker_changed AFTER INSERT ON ${TRACKER_JOURNAL_TABLE}
        FOR EACH ROW EXECUTE FUNCTION ${TABLE_PREFIX}tracker_notify();
    `,
  },
  LEASES_MIGRATION,
  EVENTS_MIGRATION,
  INBOX_MIGRATION,
  TRANSCRIPT_TAILS_MIGRATION,
  {
    version: 7,
    name: "the seqs and numbers a local project keeps used beyond its journal",
    sql: `
      -- Every seq up to seq_floor and every number up to number_floor was handed out (the change ids
      -- and refs of journal lines a repair moved aside may have been delivered): never again.
      CREATE TABLE ${TRACKER_PROJECTS_TABLE} (
        project text PRIMARY KEY,
        seq_floor integer NOT NULL,
        number_floor integer NOT NULL
      );
    `,
  },
  DAEMON_CAPACITY_MIGRATION,
];

/** The newest schema this build knows. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((migration) => migration.version));

/** A database whose schema this daemon cannot use. */
export class SchemaVersionError extends ExitError {
  override readonly name: string = "SchemaVersionError";
}

export type MigrationPlan = { readonly run: readonly Migration[] } | { readonly refuse: string };

/**
 * What a start must do, from the versions the database has recorded and the migrations this build
 * knows: the ones not yet run, in order; or why it must not touch the database.
 */
export function planMigrations(applied: readonly number[], known: readonly Migration[] = MIGRATIONS): MigrationPlan {
  const knownVersions = new Set(known.map((migration) => migration.version));
  const newest = Math.max(0, ...known.map((migration) => migration.version));
  const unknown = applied.filter((version) => !knownVersions.has(version)).sort((a, b) => a - b);
  const ahead = unknown.filter((version) => version > newest);
  if (ahead.length > 0) {
    return {
      refuse:
        `the database's schema is at version ${Math.max(...ahead)}, newer than this the-loop knows (${newest}): ` +
        "a newer the-loop migrated it; upgrade the-loop on this host to the version the other daemons run",
    };
  }
  if (unknown.length > 0) {
    return {
      refuse: `the database records schema migration(s) ${unknown.join(", ")}, which this the-loop does not have: it was migrated by another build; run the same the-loop as the other daemons`,
    };
  }
  const done = new Set(applied);
  return { run: [...known].filter((migration) => !done.has(migration.version)).sort((a, b) => a.version - b.version) };
}

/** The queries migrate() sends: a pg client, or a test's recording one. */
export interface SqlClient {
  query<R extends object = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<{ rows: R[] }>;
}

/** The advisory lock every start-up migration holds (the two-key form: apart from the records' one-key locks). */
export const MIGRATION_LOCK: readonly [number, number] = [0x7e_10_0b, 1];

export interface MigrationReport {
  /** The schema version after the start. */
  readonly version: number;
  /** The versions this start ran (none when another daemon, or an earlier start, had). */
  readonly ran: readonly number[];
}

/**
 * Brings the database's schema to this build's, under the migration lock (waiting for a daemon
 * that holds it). `by` names who ran each migration, kept in its row.
 */
export async function migrate(client: SqlClient, by: string, known: readonly Migration[] = MIGRATIONS): Promise<MigrationReport> {
  try {
    await client.query("SELECT pg_advisory_lock($1, $2)", MIGRATION_LOCK);
  } catch (error) {
    // lock_timeout (SQLSTATE 55P03): another process has held the migration lock all that while.
    if (typeof error === "object" && error !== null && (error as { code?: unknown }).code === "55P03") {
      throw new SchemaVersionError(
        "another the-loop has been migrating the database's schema for longer than the lock wait: let it finish (or end its session in pg_stat_activity if it hangs), then start again",
        EXIT_FAILURE,
        "lock-timeout",
      );
    }
    throw error;
  }
  try {
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), applied_by text NOT NULL)`,
    );
    const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${MIGRATIONS_TABLE} ORDER BY version`);
    const plan = planMigrations(
      rows.map((row) => row.version),
      known,
    );
    if ("refuse" in plan) throw new SchemaVersionError(plan.refuse, EXIT_FAILURE, "conflict");
    for (const migration of plan.run) {
      await client.query("BEGIN");
      try {
        await client.query(migration.sql);
        await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (version, name, applied_by) VALUES ($1, $2, $3)`, [migration.version, migration.name, by]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      }
    }
    const version = Math.max(0, ...rows.map((row) => row.version), ...plan.run.map((migration) => migration.version));
    return { version, ran: plan.run.map((migration) => migration.version) };
  } finally {
    await client.query("SELECT pg_advisory_unlock($1, $2)", MIGRATION_LOCK);
  }
}
