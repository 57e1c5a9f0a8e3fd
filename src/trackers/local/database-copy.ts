import { promises as fs } from "node:fs";
import type { Dirent } from "node:fs";
import { errnoOf } from "../../errors.js";
import { TRACKER_ITEMS_TABLE, TRACKER_JOURNAL_TABLE, withAdvisoryLock } from "../../state/index.js";
import type { PostgresDatabase } from "../../state/index.js";
import { trackerLockKey } from "./database-tracker.js";
import { journalRemedy } from "./errors.js";
import { isProjectName, projectFiles } from "./files.js";
import { scanJournal } from "./journal.js";
import { JournalMismatchError, applyLine } from "./records.js";
import type { ItemSnapshot, JournalLine } from "./records.js";
import type { StoreCopyCount } from "../../state/copy-count.js";

/**
 * `the-loop state migrate --to postgres` for the local tracker: each project's journal, read from
 * its files, copied into the database with the items it makes (every snapshot rebuilt from the
 * journal, the source of truth, so a snapshot a crash left behind its last line is copied current).
 * A project the database already holds is not touched: the same journal counts as unchanged, any
 * other as kept (the database's is the newer truth once a daemon ran on it). A journal with a line
 * that does not read is reported and not copied. The files are left as they are; after the copy each
 * copied project's rows are counted again.
 */

/** The counts of `tracker-items` and `tracker-journal`, as the report gives every store's. */
export type TrackerCopyCount = StoreCopyCount;

interface ProjectRead {
  readonly project: string;
  readonly lines: readonly JournalLine[];
  readonly items: readonly ItemSnapshot[];
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
  if (scan.lines.length === 0) return undefined;
  const items = new Map<number, ItemSnapshot>();
  try {
    for (const line of scan.lines) items.set(line.number, applyLine(items.get(line.number), line));
  } catch (error) {
    if (error instanceof JournalMismatchError) return { where: files.journal, message: `${error.message}; ${journalRemedy(project)}` };
    throw error;
  }
  return { project, lines: scan.lines, items: [...items.values()] };
}

async function heldCounts(database: PostgresDatabase, project: string): Promise<{ lines: number; items: number; last: number }> {
  const { rows } = await database.pool.query<{ lines: number; items: number; last: number }>(
    `SELECT (SELECT count(*)::int FROM ${TRACKER_JOURNAL_TABLE} WHERE project = $1) AS lines,
            (SELECT count(*)::int FROM ${TRACKER_ITEMS_TABLE} WHERE project = $1) AS items,
            (SELECT coalesce(max(seq), 0) FROM ${TRACKER_JOURNAL_TABLE} WHERE project = $1) AS last`,
    [project],
  );
  return rows[0] ?? { lines: 0, items: 0, last: 0 };
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
      if (held.lines > 0) return held.lines === read.lines.length && held.last === read.lines.at(-1)?.seq ? "unchanged" : "kept";
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
      if (held.lines !== read.lines.length || held.items !== read.items.length) verified = false;
    }
  }
  return [
    { name: "tracker-items", ...items, problems, verified },
    { name: "tracker-journal", ...lines, problems: [], verified },
  ];
}
