import { TRACKER_ITEMS_TABLE, TRACKER_JOURNAL_TABLE } from "../../state/index.js";
import type { PostgresDatabase } from "../../state/index.js";
import { TRACKER_ROW_REMEDY } from "./database-tracker.js";
import { itemSnapshotSchema, journalLineSchema, schemaProblem } from "./records.js";

/**
 * `the-loop status`'s scan of the local tracker when it is in the state database: each project's
 * change rows and item rows that do not read, as the file scan reports a journal's damaged lines
 * — the first of each project's rows, with how many more — named by table, project and seq or
 * number, with the remedy on the database.
 */

export interface DamagedTrackerRow {
  /** `the_loop_tracker_journal(demo, seq 4)`, `the_loop_tracker_items(demo, 2)`. */
  readonly where: string;
  readonly reason: string;
  readonly remedy: string;
}

export async function damagedTrackerRows(database: PostgresDatabase): Promise<DamagedTrackerRow[]> {
  const [journal, items] = await Promise.all([
    database.pool.query<{ project: string; seq: number; number: number; line: unknown }>(
      `SELECT project, seq, number, line FROM ${TRACKER_JOURNAL_TABLE} ORDER BY project, seq`,
    ),
    database.pool.query<{ project: string; number: number; body: unknown }>(
      `SELECT project, number, body FROM ${TRACKER_ITEMS_TABLE} ORDER BY project, number`,
    ),
  ]);
  const found = new Map<string, { where: string; reason: string; more: number }>();
  const note = (key: string, where: string, reason: string): void => {
    const first = found.get(key);
    if (first === undefined) found.set(key, { where, reason, more: 0 });
    else first.more += 1;
  };
  for (const row of journal.rows) {
    const read = journalLineSchema.safeParse(row.line);
    const where = `${TRACKER_JOURNAL_TABLE}(${row.project}, seq ${row.seq})`;
    if (!read.success) note(`journal\0${row.project}`, where, `a change is not a change record (${schemaProblem(read.error)})`);
    else if (read.data.seq !== row.seq || read.data.number !== row.number) {
      note(`journal\0${row.project}`, where, `it holds change ${read.data.seq} of item #${read.data.number}`);
    }
  }
  for (const row of items.rows) {
    const read = itemSnapshotSchema.safeParse(row.body);
    const where = `${TRACKER_ITEMS_TABLE}(${row.project}, ${row.number})`;
    if (!read.success) note(`items\0${row.project}`, where, schemaProblem(read.error));
    else if (read.data.number !== row.number) note(`items\0${row.project}`, where, `it holds item #${read.data.number}`);
  }
  return [...found.values()].map(({ where, reason, more }) => ({
    where,
    reason: more > 0 ? `${reason} (and ${more} more row${more > 1 ? "s" : ""})` : reason,
    remedy: TRACKER_ROW_REMEDY,
  }));
}
