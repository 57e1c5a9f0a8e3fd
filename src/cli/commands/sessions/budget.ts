import { addRaise, effectiveLimits, figureText, judgeBudget, minutesBetween, parseBudgetRaise, raiseFor } from "../../../budget/decide.js";
import type { BudgetDimension, BudgetLimits } from "../../../budget/decide.js";
import { BudgetStore, budgetDir } from "../../../budget/store.js";
import type { BudgetRecord } from "../../../budget/store.js";
import { budgetRecordOf, readUsage, summarizeUsage, usageText } from "../../../budget/summary.js";
import type { UsageSession as SummarizedSession, UsageSummary } from "../../../budget/summary.js";
import { join } from "node:path";
import { UsageError } from "../../../errors.js";
import { isLive } from "../../../registry/record.js";
import type { SessionRecord, SessionStatus } from "../../../registry/record.js";
import type { Project } from "../../context.js";
import { stdout } from "../../output.js";
import { readJsonFileSync } from "../../../state/atomic.js";
import { workItemSlug } from "../../../workitem/ref.js";
import { cachedListing } from "./listing-cache.js";

/**
 * Budgets from the CLI (docs/fleet.md#budgets): `sessions resume --budget +N` raises the limit
 * the item was paused at before it resumes it, and a resume that would be paused again at once
 * is refused with how to raise it; `sessions list` shows each live session's usage.
 */

export function budgetStoreOf(project: Project): BudgetStore {
  return project.stores?.budgets ?? new BudgetStore({ dir: budgetDir(project.paths.root) });
}

// A damaged record holds nothing a resume must honour: the daemon starts it afresh.
const readRecord = budgetRecordOf;

export interface Raised {
  readonly dimension: BudgetDimension;
  readonly by: number;
  readonly limit?: number;
}

/**
 * Before a resume: with `--budget +N`, the raise written to the item's budget record (under its
 * lock); without it, a refusal when the session's budget paused it and it is still over its
 * limit (the daemon would pause it again at its next look).
 */
export async function budgetBeforeResume(
  project: Project,
  session: SessionRecord | undefined,
  ref: string,
  budget: string | undefined,
  say: boolean,
): Promise<Raised | undefined> {
  const limits = project.config.routing.budget;
  const store = budgetStoreOf(project);
  if (budget === undefined) {
    if (session === undefined) return undefined;
    const record = readRecord(store, ref);
    if (record === undefined || record.session !== session.createdAt) return undefined;
    const verdict = judgeBudget({ limits, raise: record.raise, use: useOf(record, session), warnedAt: {}, active: true });
    if (verdict.kind !== "exceeded") return undefined;
    throw new UsageError(
      `${ref}'s session is over its budget (${figureText(verdict.dimension, verdict.used)} of ${figureText(verdict.dimension, verdict.limit)}), so it would be paused again at once: ` +
        `resume it with --budget +N to raise the limit (+Nk for thousands of tokens, +Nmin for minutes)`,
    );
  }
  const parsed = parseBudgetRaise(budget);
  if (parsed === undefined)
    throw new UsageError(
      `--budget ${JSON.stringify(budget)} is not a raise: give +N (the limit it was paused at), +Nk (thousands of tokens) or +Nmin (minutes)`,
    );
  if (session === undefined) throw new UsageError(`${ref} has no session whose budget could be raised; see \`the-loop sessions list\``);
  const pausedOn = readRecord(store, ref)?.exceeded?.dimension;
  const raise = raiseFor(parsed, pausedOn);
  const dimension = raise.tokens > 0 ? "tokens" : "minutes";
  if (limits[dimension] === undefined) {
    throw new UsageError(`routing.budget.${dimension} is not set, so there is no ${dimension === "tokens" ? "token" : "minute"} limit to raise`);
  }
  const after = await store.update(ref, session, (record) => {
    const next = { ...record, raise: addRaise(record.raise, raise) };
    return { record: next, result: next };
  });
  const limit = effectiveLimits(limits, after.raise)[dimension];
  project.events.emit("session.budget_raised", { work_item: ref, dimension, by: parsed.amount, ...(limit !== undefined ? { limit } : {}) });
  if (say) stdout.line(`raised ${ref}'s ${dimension} limit by ${parsed.amount}${limit !== undefined ? `, to ${limit}` : ""}`);
  return { dimension, by: parsed.amount, ...(limit !== undefined ? { limit } : {}) };
}

function useOf(record: BudgetRecord, session: SessionRecord): { tokens?: number; minutes: number } {
  const minutes = minutesBetween(session.createdAt, new Date());
  return record.usage?.readable === true ? { tokens: record.usage.total, minutes } : { minutes };
}

/** What a usage summary needs of a session: its item, when it began (its budget record's key) and its harness. */
export interface UsageSession extends SummarizedSession {
  readonly ref: string;
}

/** The usage column of the `sessions list` table: `12,345/100,000 tok, 12/240 min`, `? tok, 3 min`. */
export const usageColumn = usageText;

/**
 * The usage of the item `ref`'s live session, for `graph status`: its session record read as
 * plain JSON (no schema loaded for one item), undefined when it has no live session or its record
 * does not read (`why` and `sessions list` report that themselves).
 */
export function itemUsage(project: Pick<Project, "paths" | "config" | "stores">, ref: string, now: Date = new Date()): UsageSummary | undefined {
  let record: Partial<SessionRecord> | undefined;
  try {
    record =
      project.stores !== undefined
        ? project.stores.registry.get(ref)
        : (readJsonFileSync(join(project.paths.registryDir, `${workItemSlug(ref)}.json`)) as Partial<SessionRecord> | undefined);
  } catch {
    // A record that does not read is reported by whoever reads it whole; its usage is unknown.
    return undefined;
  }
  if (record === undefined || typeof record.createdAt !== "string" || typeof record.harness !== "string" || !isLive({ status: record.status ?? "closed" })) {
    return undefined;
  }
  const store = project.stores?.budgets ?? new BudgetStore({ dir: budgetDir(project.paths.root) });
  return readUsage(store, project.config.routing.budget, ref, { createdAt: record.createdAt, harness: record.harness }, now);
}

/**
 * The usage of the live sessions, from their budget records. With `cache` (a listing of every
 * session), the budget folder is read once for all of them and what the usage needs of each
 * record is kept in that file while the folder is unchanged, so a listing of thousands of live
 * sessions costs one file read; without it (one session's usage), only that session's record is read.
 */
export interface LiveUsage {
  /** The `usage` field of a session in `sessions list --json`: null unless it is live. */
  of(session: UsageSession & { readonly status: SessionStatus }): { usage: UsageSummary | null };
  /** A live session's usage. */
  summary(session: UsageSession): UsageSummary;
  /** The usage column of a live session's row in the table. */
  column(session: UsageSession): string;
}

/** What a session's usage needs of its item's budget record. */
type BudgetFacts = Pick<BudgetRecord, "session" | "usage" | "raise">;
/** A budget record as a listing keeps it: its item's ref and its facts. */
type BudgetRow = [ref: string, facts: BudgetFacts];

export function liveUsage(stateRoot: string, limits: BudgetLimits, shared?: BudgetStore, options: { readonly cache?: string } = {}): LiveUsage {
  const store = shared ?? new BudgetStore({ dir: budgetDir(stateRoot) });
  // In a database (`shared`) every record is in the mirror already: each is read from it.
  const listed = shared === undefined && options.cache !== undefined ? budgetFactsByRef(store, options.cache) : undefined;
  const recordOf = (ref: string): BudgetFacts | undefined => (listed === undefined ? readRecord(store, ref) : listed.get(ref));
  // One moment for the whole listing: every session's minutes are counted to it.
  const now = new Date();
  const summary = (session: UsageSession): UsageSummary => summarizeUsage(recordOf(session.ref), limits, session, now);
  return {
    of: (session) => ({ usage: isLive(session) ? summary(session) : null }),
    summary,
    column: (session) => usageColumn(summary(session)),
  };
}

/**
 * Every budget record's facts, by ref. A damaged record is left out, as a read of it gives none
 * (the daemon starts it afresh); a listing with one is not kept, so the folder is read again.
 */
function budgetFactsByRef(store: BudgetStore, cache: string): ReadonlyMap<string, BudgetFacts> {
  const { entries } = cachedListing(store.dir, cache, () => {
    const { records, problems } = store.records.listSync();
    const rows = records.map(({ ref, session, usage, raise }): BudgetRow => [ref, usage === undefined ? { session, raise } : { session, usage, raise }]);
    return { entries: rows, problems };
  });
  return new Map(entries);
}
