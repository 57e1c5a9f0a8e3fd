import { join } from "node:path";
import { FileRecordStore } from "../state/record-store.js";
import { DamagedRecordError } from "../state/record-kind.js";
import { compileShape } from "../state/record-shape.js";
import type { LocatedRecordStore, RecordBackend } from "../state/backend.js";
import type { LockOptions } from "../state/lock.js";
import type { RecordDamage, RecordKind } from "../state/record-kind.js";
import type { StatePaths } from "../state/layout.js";
import type { GraphState, graphStateSchema } from "./state.js";
import { graphStateShape } from "./state-shape.js";

/**
 * The graph state store: one record per work item in the one record store
 * (state/record-store.ts), `<state.root>/graphs/<slug>.json`. The daemon decides every move of an
 * item inside the item's transaction (read → advance → write under its cross-process lock), so two
 * claims arriving at once move the item once; each write replaces the file atomically, so a
 * `kill -9` mid-advance leaves the old record or the new one.
 *
 * Reading loads no schema library (`graph status` and `sessions list` read records on a start-up
 * budget): what is read is checked against the schema's generated shape (state-shape.ts), and the
 * schema itself (state.ts) is loaded by the first transaction.
 */

/** What to do about a damaged record of `item`: the record is not guessed at, so the operator says where the item is. */
function remedyFor(item: string): string {
  return (
    `until it is repaired the item's graph does not move: move the record aside (it shows where the item was) and put the item on a node ` +
    `with \`the-loop graph force ${item} --to NODE --reason TEXT\`, or repair it by hand`
  );
}

/** A graph state file that does not hold its item's record. Stopping beats guessing where the item was. */
export class GraphStateError extends DamagedRecordError {
  override readonly name: string = "GraphStateError";
  constructor(damage: RecordDamage) {
    super(damage, remedyFor(damage.item));
  }
}

/**
 * Why `value` is not a graph state record, or undefined when it is one: graphStateSchema's rules,
 * checked through its generated shape without loading zod (test/graph-run/state.test.ts holds the two
 * together).
 */
export const graphStateProblem = compileShape(graphStateShape);

/** Graph state records as a record kind (state/record-store.ts). */
export const graphStateKind: RecordKind<typeof graphStateSchema> = {
  name: "graph state record",
  itemField: "ref",
  schema: async () => (await import("./state.js")).graphStateSchema,
  check: graphStateProblem,
  order: (a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0),
  remedy: remedyFor("REF"),
  damaged: (damage) => new GraphStateError(damage),
  misaddressed: (named, item) => `refusing to write a graph state record for ${named} in the transaction of ${item} (records carry the canonical ref)`,
};

/** Where a listing of graph states is kept while the folder is unchanged (safe to delete). */
export function graphStatesListingCache(paths: Pick<StatePaths, "root">): string {
  return join(paths.root, "cache", "graph-states.json");
}

export type GraphStateStore = LocatedRecordStore<GraphState>;
/** The file backend's store, whose folder a caller may cache listings of. */
export type FileGraphStateStore = FileRecordStore<typeof graphStateSchema>;

/**
 * The graph state records of a state root. A listing (`sessions list` shows each item's node) is
 * kept in `<state.root>/cache/` while the folder is unchanged, so ten thousand records cost one
 * file read; a read of one item always reads its own file.
 */
export function openGraphStates(paths: Pick<StatePaths, "root" | "graphsDir">, options?: { readonly lock?: LockOptions }): FileGraphStateStore;
export function openGraphStates(
  paths: Pick<StatePaths, "root" | "graphsDir">,
  options: { readonly lock?: LockOptions; readonly backend: RecordBackend | undefined },
): GraphStateStore;
export function openGraphStates(
  paths: Pick<StatePaths, "root" | "graphsDir">,
  options: { readonly lock?: LockOptions; readonly backend?: RecordBackend | undefined } = {},
): GraphStateStore {
  const file = { dir: paths.graphsDir, listingCache: graphStatesListingCache(paths), ...(options.lock ? { lock: options.lock } : {}) };
  if (options.backend === undefined) return new FileRecordStore({ ...file, kind: graphStateKind });
  return options.backend.records(graphStateKind, { key: "graphs", file });
}

export type { GraphState };
