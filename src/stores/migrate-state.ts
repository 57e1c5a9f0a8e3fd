import { hostname } from "node:os";
import type { StoreCopyCount } from "../state/copy-count.js";
import { FileDocumentStore } from "../state/document.js";
import type { DocumentStore } from "../state/document.js";
import type { LocatedRecordStore } from "../state/backend.js";
import type { StatePaths } from "../state/layout.js";
import { resolvePollStateFile } from "../state/poll-state-file.js";
import { copyTrackerToDatabase } from "../trackers/local/index.js";
import type { Stores } from "./stores.js";

/**
 * `the-loop state migrate --to postgres`: copies a file state root's records and documents into
 * the database, once. Idempotent: a record the database already holds as the files do is counted
 * unchanged; one it holds otherwise is kept (the database's is the newer truth once a daemon ran
 * on it) and counted as such; a damaged file is reported and not copied. The files are left as
 * they are (the local tracker's projects too: trackers/local/database-copy.ts). After the copy every record the files hold is looked up in the database again: the
 * counts are verified, not assumed.
 */

/** One store's counts in the report. */
export type KindCount = StoreCopyCount;

export interface MigrationResult {
  readonly kinds: readonly KindCount[];
  /** Every kind verified. */
  readonly verified: boolean;
}

/** The record stores of a state, by the name a report gives them. */
function recordStoresOf(stores: Stores): [string, LocatedRecordStore<unknown>][] {
  return [
    ["sessions", stores.registry.records],
    ["control", stores.control.records],
    ["graphs", stores.graphStates],
    ["held-gate-answers", stores.heldAnswers],
    ["pr-links", stores.links.records],
    ["ci-attempts", stores.ciAttempts.records],
    ["budgets", stores.budgets.records],
  ] as [string, LocatedRecordStore<unknown>][];
}

/** Key order aside, whether two JSON values are one. */
function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sorted((value as Record<string, unknown>)[key])]),
  );
}

async function copyRecords(name: string, from: LocatedRecordStore<unknown>, to: LocatedRecordStore<unknown>): Promise<KindCount> {
  const { records, problems } = from.listSync();
  let copied = 0;
  let unchanged = 0;
  let kept = 0;
  const items: string[] = [];
  for (const record of records) {
    const item = from.itemOf(record);
    if (item === undefined) continue;
    items.push(item);
    const outcome = await to.transaction(item, async (tx) => {
      let current: unknown;
      try {
        current = tx.read();
      } catch {
        // A damaged row is the database's own problem to repair (moveAside); it is not overwritten unasked.
        return "kept" as const;
      }
      if (current === undefined) {
        await tx.write(record);
        return "copied" as const;
      }
      return sameJson(current, record) ? ("unchanged" as const) : ("kept" as const);
    });
    if (outcome === "copied") copied++;
    else if (outcome === "unchanged") unchanged++;
    else kept++;
  }
  let verified = true;
  for (const item of items) {
    // A row that does not read back (damaged) is as good as missing: the kind is not verified.
    if ((await to.get(item).catch(() => undefined)) === undefined) verified = false;
  }
  return { name, files: items.length, copied, unchanged, kept, problems, verified };
}

async function copyDocument(name: string, from: DocumentStore, to: DocumentStore): Promise<KindCount> {
  let value: unknown;
  try {
    value = await from.read();
  } catch (error) {
    return { name, files: 0, copied: 0, unchanged: 0, kept: 0, problems: [{ where: from.where, message: (error as Error).message }], verified: true };
  }
  if (value === undefined) return { name, files: 0, copied: 0, unchanged: 0, kept: 0, problems: [], verified: true };
  const outcome = await to.transaction(async (current) => {
    if (current === undefined) return { value, result: "copied" as const };
    return { result: sameJson(current, value) ? ("unchanged" as const) : ("kept" as const) };
  });
  const verified = (await to.read()) !== undefined;
  return {
    name,
    files: 1,
    copied: outcome === "copied" ? 1 : 0,
    unchanged: outcome === "unchanged" ? 1 : 0,
    kept: outcome === "kept" ? 1 : 0,
    problems: [],
    verified,
  };
}

/** Copies every store of `source` (the files) into `target` (the database). */
export async function migrateState(source: Stores, target: Stores, paths: StatePaths): Promise<MigrationResult> {
  const kinds: KindCount[] = [];
  const targets = new Map(recordStoresOf(target));
  for (const [name, from] of recordStoresOf(source)) {
    const to = targets.get(name);
    if (to !== undefined) kinds.push(await copyRecords(name, from, to));
  }
  kinds.push(await copyDocument("start-queue", source.startQueue.document, target.startQueue.document));
  if (target.pollState !== undefined) {
    // The poller's file, the pre-state-root one while it is still the one in use.
    kinds.push(await copyDocument("poll-state", new FileDocumentStore({ file: resolvePollStateFile(paths).file }), target.pollState));
  }
  // The local tracker's projects: its journal lines and the items they make.
  const database = target.backend.database;
  if (database !== undefined) kinds.push(...(await copyTrackerToDatabase(paths.trackerDir, database)));
  if (database !== undefined) {
    // The event log's lines, into the table every host on the database reads (the file is left as it is).
    const [{ copyEventLog }, { PostgresEventTable }] = await Promise.all([import("./migrate-events.js"), import("../state/postgres/event-table.js")]);
    kinds.push(await copyEventLog(paths.eventLog, new PostgresEventTable({ database, host: hostname() })));
  }
  return { kinds, verified: kinds.every((kind) => kind.verified) };
}
