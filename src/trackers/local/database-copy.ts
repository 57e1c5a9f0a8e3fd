import { promises as fs } from "node:fs";
import type { Dirent } from "node:fs";
import type { PoolClient } from "pg";
import { errnoOf } from "../../errors.js";
import { TRACKER_ITEMS_TABLE, TRACKER_JOURNAL_TABLE, TRACKER_PROJECTS_TABLE, withAdvisoryLock } from "../../state/index.js";
import type { PostgresDatabase } from "../../state/index.js";
import { trackerLockKey } from "./database-tracker.js";
import { CorruptTrackerFileError, journalRemedy } from "./errors.js";
import { isProjectName, projectFiles, readMeta } from "./files.js";
import { scanJournal } from "./journal.js";
import { JournalMismatchError, applyLine } from "./records.js";
import type { ItemSnapshot, JournalLine, ProjectMeta } from "./records.js";
import type { StoreCopyCount } from "../../state/copy-count.js";

/**
 * `the-loop state migrate --to postgres` for the local tracker: each project's journal, read from
 * its files, copied into the database with the items it makes (every snapshot rebuilt from the
 * journal, the source of truth, so a snapshot a crash left behind its last line is copied current).
 * A project the database already holds is not touched: the same journal counts as unchanged, any
 * other as kept (the database's is the newer truth once a daemon ran on it). A journal with a line
 * that does not read is reported and not copied. The files are left as they are; after the copy each
 * copied project's rows are counted again.
 *
 * A project `the-loop item repair` mended may keep seqs and numbers used beyond its journal
 * (`meta.json`'s `seqFloor`: the change ids and refs of the lines moved aside may have been
 * delivered). Its floor goes to the_loop_tracker_projects with the journal, and is written too when
 * the database holds the same journal already (copied by a the-loop before migration 7), so the
 * database tracker never hands those out again.
 */

/** The counts of `tracker-items` and `tracker-journal`, as the report gives every store's. */
export type TrackerCopyCount = StoreCopyCount;

interface ProjectRead {
  readonly project: string;
  readonly lines: readonly JournalLine[];
  readonly items: readonly ItemSnapshot[];
  /** What a repair kept used beyond the journal, when it did. */
  readonly floor: { readonly seq: number; readonly number: number } | undefined;
}

async function projectsOf(trackerDir: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await fs.readdir(trackerDir, { withFileTypes: true });
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return [];
    throw error;
  }
  return entries
    .filter((entry) => entry.isDirectory() && isProjectName(entry.name))
    .map((entry) => entry.name)
    .sort();
}

/** The project's journal and the items it makes, or why it cannot be copied. */
async function readProject(trackerDir: string, project: string): Promise<ProjectRead | { readonly where: string; readonly message: string } | undefined> {
  const files = projectFiles(trackerDir, project);
  const scan = await scanJournal(files.journal);
  const first = scan.damaged[0];
  if (first !== undefined) return { where: files.journal, message: `${first.reason}; ${journalRemedy(project)}` };
  let meta: ProjectMeta | undefined;
  try {
    meta = await readMeta(files);
  } catch (error) {
    // Without it the seqs a repair kept used are unknown: copied, the database could hand them out again.
    if (error instanceof CorruptTrackerFileError) return { where: files.meta, message: error.message };
    throw error;
  }
  const floor = meta?.seqFloor === undefined ? undefined : { seq: meta.seqFloor, number: meta.lastNumber };
  if (scan.lines.length === 0 && floor === undefined) return undefined;
  const items = new Map<number, ItemSnapshot>();
  try {
    for (const line of scan.lines) items.set(line.number, applyLine(items.get(line.number), line));
  } catch (error) {
    if (error instanceof JournalMismatchError) return { where: files.journal, message: `${error.message}; ${journalRemedy(project)}` };
    throw error;
  }
  return { project, lines: scan.lines, items: [...items.values()], floor };
}

async function heldCounts(database: PostgresDatabase, project: string): Promise<{ lines: number; items: number; last: number; floor: number }> {
  const { rows } = await database.pool.query<{ lines: number; items: number; last: number; floor: number }>(
    `SELECT (SELECT count(*)::int FROM ${TRACKER_JOURNAL_TABLE} WHERE project = $1) AS lines,
            (SELECT count(*)::int FROM ${TRACKER_ITEMS_TABLE} WHERE project = $1) AS items,
            (SELECT coalesce(max(seq), 0) FROM ${TRACKER_JOURNAL_TABLE} WHERE project = $1) AS last,
            (SELECT coalesce(max(seq_floor), 0) FROM ${TRACKER_PROJECTS_TABLE} WHERE project = $1) AS floor`,
    [project],
  );
  return rows[0] ?? { lines: 0, items: 0, last: 0, floor: 0 };
}

/** Raises the project's floor to the files' (never lowers it: a floor only says what was handed out). */
async function writeFloor(client: Pick<PoolClient, "query">, project: string, floor: NonNullable<ProjectRead["floor"]>): Promise<void> {
  await client.query(
    `INSERT INTO ${TRACKER_PROJECTS_TABLE} (project, seq_floor, number_floor) VALUES ($1, $2, $3)
     ON CONFLICT (project) DO UPDATE SET seq_floor = GREATEST(${TRACKER_PROJECTS_TABLE}.seq_floor, EXCLUDED.seq_floor),
                                         number_floor = GREATEST(${TRACKER_PROJECTS_TABLE}.number_floor, EXCLUDED.number_floor)`,
    [project, floor.seq, floor.number],
  );
}

/** Copies every local project under `trackerDir` into the database; counts items and journal lines. */
export async function copyTrackerToDatabase(trackerDir: string, database: PostgresDatabase): Promise<TrackerCopyCount[]> {
  const items = { files: 0, copied: 0, unchanged: 0, kept: 0 };
  const lines = { files: 0, copied: 0, unchanged: 0, kept: 0 };
  const problems: { where: string; message: string }[] = [];
  let verified = true;
  for (const project of await projectsOf(trackerDir)) {
    const read = await readProject(trackerDir, project);
    if (read === undefined) continue;
    if (!("lines" in read)) {
      problems.push(read);
      continue;
    }
    items.files += read.items.length;
    lines.files += read.lines.length;
    const outcome = await withAdvisoryLock(database, trackerLockKey(project), `the local project "${project}" in the state database`, async (client) => {
      const held = await heldCounts(database, project);
      if (held.lines > 0) {
        if (held.lines !== read.lines.length || held.last !== read.lines.at(-1)?.seq) return "kept";
        if (read.floor !== undefined) await writeFloor(client, project, read.floor);
        return "unchanged";
      }
      await client.query("BEGIN");
      try {
        await client.query(
          `INSERT INTO ${TRACKER_JOURNAL_TABLE} (project, seq, number, line) SELECT $1, seq, number, line::json FROM unnest($2::int[], $3::int[], $4::text[]) AS l(seq, number, line)`,
          [project, read.lines.map((line) => line.seq), read.lines.map((line) => line.number), read.lines.map((line) => JSON.stringify(line))],
        );
        await client.query(
          `INSERT INTO ${TRACKER_ITEMS_TABLE} (project, number, body) SELECT $1, number, body::json FROM unnest($2::int[], $3::text[]) AS i(number, body)`,
          [project, read.items.map((item) => item.number), read.items.map((item) => JSON.stringify(item))],
        );
        if (read.floor !== undefined) await writeFloor(client, project, read.floor);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      }
      return "copied";
    });
    items[outcome] += read.items.length;
    lines[outcome] += read.lines.length;
    if (outcome !== "kept") {
      const held = await heldCounts(database, project);
      if (held.lines !== read.lines.length || held.items !== read.items.length || held.floor < (read.floor?.seq ?? 0)) verified = false;
    }
  }
  return [
    { name: "tracker-items", ...items, problems, verified },
    { name: "tracker-journal", ...lines, problems: [], verified },
  ];
}
