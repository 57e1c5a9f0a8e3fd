import { createHash } from "node:crypto";
import type { PoolClient } from "pg";
import { TRACKER_CHANNEL, TRACKER_ITEMS_TABLE, TRACKER_JOURNAL_TABLE, TRACKER_PROJECTS_TABLE, withAdvisoryLock } from "../../state/index.js";
import type { PostgresDatabase } from "../../state/index.js";
import { formatWorkItemRef } from "../../workitem/index.js";
import type { LocalRef } from "../../workitem/index.js";
import { WorkItemNotFoundError } from "../tracker.js";
import type { ChangeBatch, TrackerScope } from "../tracker.js";
import { decodeCursor, encodeCursor, feedPosition } from "./cursor.js";
import { CorruptTrackerFileError } from "./errors.js";
import type { ProjectFiles } from "./files.js";
import { itemSnapshotSchema, journalLineSchema, schemaProblem } from "./records.js";
import type { ItemSnapshot, JournalLine } from "./records.js";
import { changeOf } from "./shapes.js";
import { LocalTracker } from "./tracker.js";
import type { Head, LocalTrackerOptions, RepairReport } from "./tracker.js";
import { watchAnnouncements } from "./database-watch.js";

/**
 * The local tracker on PostgreSQL (`state.store: postgres`): every daemon and CLI on one database
 * shares its local projects. The same operations as on files (tracker.ts), over two tables:
 * `the_loop_tracker_journal`, one row per change (the change feed, seq in order within a project),
 * and `the_loop_tracker_items`, each item after the journal up to its seq. A writer holds the
 * project's advisory lock (64 bits of a SHA-256 of `tracker\0<project>`, apart from the records'
 * keys) across read → decide → write, as the file tracker holds the project's lock file; each change
 * is one transaction writing its line and its item together, so there is no journal to repair and
 * nothing a crash leaves half applied. A trigger announces each change on TRACKER_CHANNEL, which
 * is how a daemon sees a change made from another host (watchChanges). A project copied from files
 * that `the-loop item repair` mended has a row in `the_loop_tracker_projects`: the seqs and numbers
 * it keeps used beyond its rows, which writes number above and the feed reads a cursor up to.
 */

export interface DatabaseTrackerOptions extends LocalTrackerOptions {
  readonly database: PostgresDatabase;
}

/** What to do about a row that does not read: a row of the database, not a file. */
export const TRACKER_ROW_REMEDY =
  `it is a row of the state database, not a file: see it with \`SELECT * FROM ${TRACKER_ITEMS_TABLE} WHERE project = '…' AND number = …\` ` +
  `(or ${TRACKER_JOURNAL_TABLE} for a change) and put its body right by hand from the project's journal rows before using this project again`;

/** The project's advisory lock, in the one-key form. */
export function trackerLockKey(project: string): string {
  return createHash("sha256").update(`tracker\u0000${project}`).digest().readBigInt64BE(0).toString();
}

/** An item's URL on the database: it names the item, not a file on some host. */
export const databaseItemsUrl = (project: string): string => `the-loop://local/${project}/items`;

/** What a project keeps used beyond its rows: every seq and item number up to these. */
interface TrackerFloor {
  readonly seq: number;
  readonly number: number;
}

export class DatabaseLocalTracker extends LocalTracker {
  private readonly database: PostgresDatabase;
  /** The connection holding each open write's lock, by the write's head. */
  private readonly clients = new WeakMap<Head, PoolClient>();

  constructor(options: DatabaseTrackerOptions) {
    super(options);
    this.database = options.database;
  }

  override async changesSince(scope: TrackerScope, cursor: string | undefined): Promise<ChangeBatch> {
    const projects = await this.inScope(scope);
    const lastSeqs = await this.lastSeqs(projects);
    if (cursor === undefined) return { changes: [], cursor: encodeCursor(lastSeqs) };
    const positions = decodeCursor(cursor);
    // Only a cursor past a journal's end needs the project's floor (the copy of a repaired project's).
    const pastEnd = projects.filter((project) => (positions.get(project) ?? 0) > (lastSeqs.get(project) ?? 0));
    const floors = pastEnd.length === 0 ? new Map<string, TrackerFloor>() : await this.floors(pastEnd);
    const after = projects.map((project) => feedPosition(positions.get(project) ?? 0, lastSeqs.get(project) ?? 0, floors.get(project)?.seq ?? 0));
    const { rows } = await this.database.pool.query<{ project: string; line: unknown }>(
      `SELECT j.project, j.line FROM ${TRACKER_JOURNAL_TABLE} j JOIN unnest($1::text[], $2::int[]) AS c(project, after) ON j.project = c.project AND j.seq > c.after
       ORDER BY j.line->>'ts', j.project, j.seq`,
      [projects, after],
    );
    const next = new Map(positions);
    for (const project of projects) {
      const last = lastSeqs.get(project);
      if (last !== undefined) next.set(project, last);
      else next.delete(project);
    }
    const changes = rows.map((row) => changeOf(this.files(row.project), this.lineOf(row.project, row.line)));
    return { changes, cursor: encodeCursor(next) };
  }

  override watchChanges(scope: TrackerScope, onChange: () => void, onUnwatchable: (problem: string) => void): () => void {
    const wanted = scope.repositories === undefined ? undefined : new Set(scope.repositories);
    return watchAnnouncements(
      this.database,
      TRACKER_CHANNEL,
      (payload) => {
        const project = (payload as { project?: unknown }).project;
        if (wanted === undefined || (typeof project === "string" && wanted.has(project))) onChange();
      },
      onUnwatchable,
    );
  }

  override async listProjects(): Promise<string[]> {
    const { rows } = await this.database.pool.query<{ project: string }>(`SELECT DISTINCT project FROM ${TRACKER_JOURNAL_TABLE} ORDER BY project`);
    return rows.map((row) => row.project);
  }

  /** Nothing to repair: each change is one transaction, and a row that does not read names itself. */
  override async repair(projectName: string): Promise<RepairReport> {
    const project = this.checkProject(projectName);
    const { rows } = await this.database.pool.query<{ count: string }>(`SELECT count(*)::text AS count FROM ${TRACKER_JOURNAL_TABLE} WHERE project = $1`, [
      project,
    ]);
    return { project, journal: this.journalOf(project), kept: Number(rows[0]?.count ?? 0), moved: [], torn: false, aside: undefined };
  }

  protected override files(project: string): ProjectFiles {
    const url = databaseItemsUrl(project);
    return { project, dir: url, journal: this.journalOf(project), itemsDir: url, meta: url, itemsUrl: url };
  }

  protected override async mutate<T>(project: string, operation: (files: ProjectFiles, head: Head) => Promise<T>): Promise<T> {
    return withAdvisoryLock(this.database, trackerLockKey(project), `the local project "${project}" in the state database`, async (client) => {
      const { rows } = await client.query<{
        seq: number | null;
        ts: string | null;
        number: number | null;
        seq_floor: number | null;
        number_floor: number | null;
      }>(
        `SELECT (SELECT max(seq) FROM ${TRACKER_JOURNAL_TABLE} WHERE project = $1) AS seq,
                (SELECT line->>'ts' FROM ${TRACKER_JOURNAL_TABLE} WHERE project = $1 ORDER BY seq DESC LIMIT 1) AS ts,
                (SELECT max(number) FROM ${TRACKER_ITEMS_TABLE} WHERE project = $1) AS number,
                (SELECT seq_floor FROM ${TRACKER_PROJECTS_TABLE} WHERE project = $1) AS seq_floor,
                (SELECT number_floor FROM ${TRACKER_PROJECTS_TABLE} WHERE project = $1) AS number_floor`,
        [project],
      );
      const row = rows[0];
      // Seqs and numbers up to the project's floor were handed out before it was copied here.
      const head: Head = {
        lastSeq: Math.max(row?.seq ?? 0, row?.seq_floor ?? 0),
        lastNumber: Math.max(row?.number ?? 0, row?.number_floor ?? 0),
        lastTs: row?.ts ?? undefined,
      };
      this.clients.set(head, client);
      return operation(this.files(project), head);
    });
  }

  /** The change and the item it leaves, in one transaction on the connection holding the project's lock. */
  protected override async store(project: string, head: Head, line: JournalLine, next: ItemSnapshot): Promise<void> {
    const client = this.clients.get(head);
    if (client === undefined) throw new Error(`a change of the local project "${project}" is stored outside its lock`);
    await client.query("BEGIN");
    try {
      await client.query(`INSERT INTO ${TRACKER_JOURNAL_TABLE} (project, seq, number, line) VALUES ($1, $2, $3, $4::json)`, [
        project,
        line.seq,
        line.number,
        JSON.stringify(line),
      ]);
      await client.query(
        `INSERT INTO ${TRACKER_ITEMS_TABLE} (project, number, body) VALUES ($1, $2, $3::json) ON CONFLICT (project, number) DO UPDATE SET body = EXCLUDED.body`,
        [project, line.number, JSON.stringify(next)],
      );
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK");
      throw error;
    }
  }

  /**
   * Read on the connection holding the project's lock: a write takes one connection, not two, and
   * never waits in the pool for a second while it holds the lock others wait for.
   */
  protected override async storedSnapshot(head: Head, project: string, number: number): Promise<ItemSnapshot | undefined> {
    const client = this.clients.get(head);
    if (client === undefined) throw new Error(`an item of the local project "${project}" is read for a change outside its lock`);
    return this.snapshotWith(client, project, number);
  }

  private async snapshotWith(client: Pick<PoolClient, "query">, project: string, number: number): Promise<ItemSnapshot | undefined> {
    const { rows } = await client.query<{ body: unknown }>(`SELECT body FROM ${TRACKER_ITEMS_TABLE} WHERE project = $1 AND number = $2`, [project, number]);
    const row = rows[0];
    return row === undefined ? undefined : this.snapshotOf(project, number, row.body);
  }

  protected override async readCurrentItem(local: LocalRef): Promise<ItemSnapshot> {
    const snapshot = await this.snapshotWith(this.database.pool, local.project, local.number);
    if (!snapshot) throw new WorkItemNotFoundError(formatWorkItemRef(local), await this.missingItemHint(local));
    return snapshot;
  }

  protected override async missingItemHint(local: LocalRef): Promise<string> {
    const { rows } = await this.database.pool.query<{ number: number | null }>(`SELECT max(number) AS number FROM ${TRACKER_ITEMS_TABLE} WHERE project = $1`, [
      local.project,
    ]);
    const last = rows[0]?.number ?? 0;
    return last > 0 ? `the items of "${local.project}" are #1 to #${last}` : `the local project "${local.project}" has no items`;
  }

  protected override async readProjectItems(project: string): Promise<ItemSnapshot[]> {
    const { rows } = await this.database.pool.query<{ number: number; body: unknown }>(
      `SELECT number, body FROM ${TRACKER_ITEMS_TABLE} WHERE project = $1 ORDER BY number`,
      [project],
    );
    return rows.map((row) => this.snapshotOf(project, row.number, row.body));
  }

  protected override async requireProject(local: LocalRef): Promise<void> {
    const { rows } = await this.database.pool.query(`SELECT 1 FROM ${TRACKER_JOURNAL_TABLE} WHERE project = $1 LIMIT 1`, [local.project]);
    if (rows.length === 0) throw new WorkItemNotFoundError(formatWorkItemRef(local), `the local project "${local.project}" has no items`);
  }

  private async inScope(scope: TrackerScope): Promise<string[]> {
    if (scope.repositories === undefined) return this.listProjects();
    return [...new Set(scope.repositories.map((name) => this.checkProject(name)))].sort();
  }

  private async lastSeqs(projects: readonly string[]): Promise<Map<string, number>> {
    const { rows } = await this.database.pool.query<{ project: string; seq: number }>(
      `SELECT project, max(seq) AS seq FROM ${TRACKER_JOURNAL_TABLE} WHERE project = ANY($1::text[]) GROUP BY project`,
      [projects],
    );
    return new Map(rows.map((row) => [row.project, row.seq]));
  }

  /** The floors of those of `projects` that have one (the_loop_tracker_projects). */
  private async floors(projects: readonly string[]): Promise<Map<string, TrackerFloor>> {
    const { rows } = await this.database.pool.query<{ project: string; seq_floor: number; number_floor: number }>(
      `SELECT project, seq_floor, number_floor FROM ${TRACKER_PROJECTS_TABLE} WHERE project = ANY($1::text[])`,
      [projects],
    );
    return new Map(rows.map((row) => [row.project, { seq: row.seq_floor, number: row.number_floor }]));
  }

  /** How messages name a project's journal: its rows. */
  private journalOf(project: string): string {
    return `${TRACKER_JOURNAL_TABLE}(${project})`;
  }

  private lineOf(project: string, value: unknown): JournalLine {
    const result = journalLineSchema.safeParse(value);
    if (!result.success) {
      throw new CorruptTrackerFileError(this.journalOf(project), `a change is not a change record (${schemaProblem(result.error)})`, TRACKER_ROW_REMEDY, "row");
    }
    return result.data;
  }

  private snapshotOf(project: string, number: number, value: unknown): ItemSnapshot {
    const where = `${TRACKER_ITEMS_TABLE}(${project}, ${number})`;
    const result = itemSnapshotSchema.safeParse(value);
    if (!result.success) throw new CorruptTrackerFileError(where, schemaProblem(result.error), TRACKER_ROW_REMEDY, "row");
    if (result.data.number !== number) throw new CorruptTrackerFileError(where, `it holds item #${result.data.number}`, TRACKER_ROW_REMEDY, "row");
    return result.data;
  }
}

/** Every local item's title in the database, by ref (the dashboard's board names local items by them): one query. */
export async function localTitlesOf(database: PostgresDatabase): Promise<Map<string, string>> {
  const { rows } = await database.pool.query<{ project: string; number: number; title: unknown }>(
    `SELECT project, number, body->>'title' AS title FROM ${TRACKER_ITEMS_TABLE}`,
  );
  const titles = new Map<string, string>();
  for (const row of rows)
    if (typeof row.title === "string") titles.set(formatWorkItemRef({ tracker: "local", project: row.project, number: row.number }), row.title);
  return titles;
}

/** The local tracker of a state: in its database when it has one (state.store: postgres), else files under `trackerDir`. */
export function openLocalTracker(options: LocalTrackerOptions & { readonly database?: PostgresDatabase | undefined }): LocalTracker {
  const { database, ...rest } = options;
  return database === undefined ? new LocalTracker(rest) : new DatabaseLocalTracker({ ...rest, database });
}
