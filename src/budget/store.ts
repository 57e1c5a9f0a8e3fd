import { join } from "node:path";
import { readJsonFileSync, writeJsonAtomic } from "../state/atomic.js";
import { withLock } from "../state/lock.js";
import { workItemSlug } from "../workitem/ref.js";
import { BUDGET_DIMENSIONS, NO_RAISE } from "./decide.js";
import type { BudgetDimension, BudgetFigure, BudgetRaise } from "./decide.js";
import type { TokenUsage } from "./usage.js";

/**
 * What a work item's session has used, and what was raised and said about it: one JSON file per
 * item, `<state.root>/budget/<slug>.json` (docs/fleet.md#budgets). The daemon writes the usage
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

/** A budget file that does not hold a record: named, with how to mend it. */
export class BudgetRecordError extends Error {
  override readonly name: string = "BudgetRecordError";
  constructor(file: string, why: string) {
    super(`the budget record ${file} is damaged (${why}): remove it (the session's usage is read again from its transcript; a raise it held is lost)`);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0;

function checked(file: string, value: unknown): BudgetRecord {
  if (!isObject(value) || value.version !== 1) throw new BudgetRecordError(file, "not { version: 1, … }");
  if (typeof value.ref !== "string" || typeof value.session !== "string" || typeof value.harness !== "string") {
    throw new BudgetRecordError(file, "ref, session and harness must be strings");
  }
  const raise = value.raise;
  if (!isObject(raise) || !BUDGET_DIMENSIONS.every((dimension) => isCount(raise[dimension])))
    throw new BudgetRecordError(file, "raise needs tokens and minutes");
  const warned = value.warnedAt;
  if (!isObject(warned) || !Object.values(warned).every(isCount)) throw new BudgetRecordError(file, "warnedAt holds counts");
  if (value.usage !== undefined && (!isObject(value.usage) || typeof value.usage.readable !== "boolean")) throw new BudgetRecordError(file, "usage.readable");
  return value as unknown as BudgetRecord;
}

export class BudgetStore {
  readonly dir: string;

  constructor(options: { readonly dir: string }) {
    this.dir = options.dir;
  }

  fileOf(ref: string): string {
    return join(this.dir, `${workItemSlug(ref)}.json`);
  }

  /** The item's record, or undefined without one. Throws BudgetRecordError on a damaged file. */
  get(ref: string): BudgetRecord | undefined {
    const file = this.fileOf(ref);
    let value: unknown;
    try {
      value = readJsonFileSync(file);
    } catch (error) {
      throw new BudgetRecordError(file, error instanceof Error ? error.message : String(error));
    }
    if (value === undefined) return undefined;
    const record = checked(file, value);
    return record.ref === ref ? record : undefined;
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
    return record !== undefined && record.session === session ? record : { version: 1, ref, session, harness, raise: NO_RAISE, warnedAt: {} };
  }

  /**
   * Read → change → write under the file's lock, for the item's session `session`. `change`
   * returns the new record (undefined: no change) and its result; the file is rewritten only
   * when the record changed.
   */
  async update<T>(
    ref: string,
    session: { readonly createdAt: string; readonly harness: string },
    change: (record: BudgetRecord) => { readonly record?: BudgetRecord; readonly result: T },
  ): Promise<T> {
    const file = this.fileOf(ref);
    return withLock(file, async () => {
      const before = this.currentOf(ref, session.createdAt, session.harness);
      const { record, result } = change(before);
      if (record !== undefined && JSON.stringify(record) !== JSON.stringify(before)) await writeJsonAtomic(file, record);
      return result;
    });
  }
}
