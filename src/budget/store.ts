import { join } from "node:path";
import type { z } from "zod";
import { FILE_BACKEND } from "../state/backend.js";
import type { LocatedRecordStore, RecordBackend } from "../state/backend.js";
import { DamagedRecordError } from "../state/record-kind.js";
import type { RecordDamage, RecordKind } from "../state/record-kind.js";
import { BUDGET_DIMENSIONS, NO_RAISE } from "./decide.js";
import type { BudgetDimension, BudgetFigure, BudgetRaise } from "./decide.js";
import type { TokenUsage } from "./usage.js";

/**
 * What a work item's session has used, and what was raised and said about it: one record per
 * item in the record store, `<state.root>/budget/<slug>.json` on files (docs/fleet.md#budgets). The daemon writes the usage
 * it read, its warnings and the pause at the limit; `sessions resume --budget +N` writes the
 * raise. Each change is read → decide → write under the file's lock, written whole and
 * atomically, so a `kill -9` at any moment leaves the old record or the new one. A record belongs
 * to one session (its `session`, the session record's createdAt): a new session of the item
 * starts a fresh one.
 */

export type UsageFacts =
  | ({ readonly readable: true; readonly readAt: string; readonly files: number } & TokenUsage)
  | { readonly readable: false; readonly readAt: string; readonly reason: string };

export interface BudgetRecord {
  readonly version: 1;
  readonly ref: string;
  /** The session the record counts for: its createdAt. */
  readonly session: string;
  readonly harness: string;
  /** The tokens read from the harness's transcript, or why they cannot be. */
  readonly usage?: UsageFacts;
  /** Wall-clock minutes of the session when usage was last read. */
  readonly minutes?: number;
  /** What `sessions resume --budget` added to each limit. */
  readonly raise: BudgetRaise;
  /** The limit each dimension was last warned at. */
  readonly warnedAt: Partial<Record<BudgetDimension, number>>;
  /** The last limit the session reached, which paused it. */
  readonly exceeded?: BudgetFigure & { readonly at: string };
}

export function budgetDir(stateRoot: string): string {
  return join(stateRoot, "budget");
}

const REMEDY = "remove it (the session's usage is read again from its transcript; a raise it held is lost)";

/** A budget record that does not hold a record: named, with how to mend it. */
export class BudgetRecordError extends DamagedRecordError {
  override readonly name: string = "BudgetRecordError";
  constructor(damage: RecordDamage) {
    super(damage, REMEDY);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0;

/** Why `value` is not a budget record, or undefined when it is one. */
export function budgetRecordProblem(value: unknown): string | undefined {
  if (!isObject(value) || value.version !== 1) return "not { version: 1, … }";
  if (typeof value.ref !== "string" || typeof value.session !== "string" || typeof value.harness !== "string") {
    return "ref, session and harness must be strings";
  }
  const raise = value.raise;
  if (!isObject(raise) || !BUDGET_DIMENSIONS.every((dimension) => isCount(raise[dimension]))) return "raise needs tokens and minutes";
  const warned = value.warnedAt;
  if (!isObject(warned) || !Object.values(warned).every(isCount)) return "warnedAt holds counts";
  if (value.usage !== undefined && (!isObject(value.usage) || typeof value.usage.readable !== "boolean")) return "usage.readable";
  return undefined;
}

type BudgetSchema = z.ZodType<BudgetRecord>;

/** Budget records as a record kind of the one record store (state/record-kind.ts). */
export const budgetRecordKind: RecordKind<BudgetSchema> = {
  name: "budget record",
  itemField: "ref",
  // Writes are checked by the same rules reads are; zod loads with the first write only.
  schema: async () => (await import("zod")).z.custom<BudgetRecord>((value) => budgetRecordProblem(value) === undefined, "not a budget record"),
  check: budgetRecordProblem,
  order: (a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0),
  remedy: REMEDY,
  damaged: (damage) => new BudgetRecordError(damage),
};

export class BudgetStore {
  readonly dir: string;
  /** The records themselves, for what copies a state whole (`state migrate`). */
  readonly records: LocatedRecordStore<BudgetRecord>;

  /** `backend`: where the records are (files in `dir` when omitted; state/backend.ts). */
  constructor(options: { readonly dir: string; readonly backend?: RecordBackend }) {
    this.dir = options.dir;
    this.records = (options.backend ?? FILE_BACKEND).records(budgetRecordKind, { key: "budgets", file: { dir: options.dir } });
  }

  /** Where the item's record is (its file, or its row). */
  fileOf(ref: string): string {
    return this.records.locate(ref);
  }

  /** The item's record, or undefined without one. Throws BudgetRecordError on a damaged one. */
  get(ref: string): BudgetRecord | undefined {
    return this.records.readSync(ref);
  }

  /** The record of the item's session `session` (created when missing, replaced when it was another session's). */
  currentOf(ref: string, session: string, harness: string): BudgetRecord {
    let record: BudgetRecord | undefined;
    try {
      record = this.get(ref);
    } catch (error) {
      // A damaged record is started afresh: usage is read again from the transcript.
      if (!(error instanceof BudgetRecordError)) throw error;
    }
    return freshUnlessOf(record, ref, session, harness);
  }

  /**
   * Read → change → write under the record's lock, for the item's session `session`. `change`
   * returns the new record (undefined: no change) and its result; the record is rewritten only
   * when it changed.
   */
  async update<T>(
    ref: string,
    session: { readonly createdAt: string; readonly harness: string },
    change: (record: BudgetRecord) => { readonly record?: BudgetRecord; readonly result: T },
  ): Promise<T> {
    return this.records.transaction(ref, async (tx) => {
      let stored: BudgetRecord | undefined;
      try {
        stored = tx.read();
      } catch (error) {
        // A damaged record is started afresh, as currentOf does.
        if (!(error instanceof BudgetRecordError)) throw error;
      }
      const before = freshUnlessOf(stored, ref, session.createdAt, session.harness);
      const { record, result } = change(before);
      if (record !== undefined && JSON.stringify(record) !== JSON.stringify(before)) await tx.write(record);
      return result;
    });
  }
}

function freshUnlessOf(record: BudgetRecord | undefined, ref: string, session: string, harness: string): BudgetRecord {
  return record !== undefined && record.session === session ? record : { version: 1, ref, session, harness, raise: NO_RAISE, warnedAt: {} };
}
