import { addRaise, effectiveLimits, figureText, hasBudget, judgeBudget, minutesBetween, parseBudgetRaise, raiseFor } from "../../../budget/decide.js";
import type { BudgetDimension, BudgetLimits } from "../../../budget/decide.js";
import { BudgetRecordError, BudgetStore, budgetDir } from "../../../budget/store.js";
import type { BudgetRecord, UsageFacts } from "../../../budget/store.js";
import { unreadableReason } from "../../../budget/transcripts.js";
import { readdirSync } from "node:fs";
import { basename } from "node:path";
import { UsageError, errnoOf } from "../../../errors.js";
import { isLive } from "../../../registry/record.js";
import type { SessionRecord } from "../../../registry/record.js";
import type { Project } from "../../context.js";
import { stdout } from "../../output.js";

/**
 * Budgets from the CLI (docs/fleet.md#budgets): `sessions resume --budget +N` raises the limit
 * the item was paused at before it resumes it, and a resume that would be paused again at once
 * is refused with how to raise it; `sessions list` shows each live session's usage.
 */

export function budgetStoreOf(project: Project): BudgetStore {
  return new BudgetStore({ dir: budgetDir(project.paths.root) });
}

function readRecord(store: BudgetStore, ref: string): BudgetRecord | undefined {
  try {
    return store.get(ref);
  } catch (error) {
    // A damaged record holds nothing a resume must honour: the daemon starts it afresh.
    if (error instanceof BudgetRecordError) return undefined;
    throw error;
  }
}

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

/** A session's usage as `sessions list --json`, `why` and `graph status` give it. */
export interface UsageSummary {
  /** Tokens so far; null when the harness's usage cannot be read (`unreadable` says why). */
  readonly tokens: number | null;
  readonly input?: number;
  readonly cached?: number;
  readonly output?: number;
  readonly unreadable?: string;
  readonly minutes: number;
  /** The limits in force (raised ones included); absent where none is set. */
  readonly limits: { readonly tokens?: number; readonly minutes?: number };
  readonly raised?: { readonly tokens: number; readonly minutes: number };
  /** When usage was last read by the daemon; absent before its first look. */
  readonly readAt?: string;
}

function tokensOf(usage: UsageFacts | undefined, harness: string): Pick<UsageSummary, "tokens" | "input" | "cached" | "output" | "unreadable"> {
  if (usage === undefined) {
    const reason = unreadableReason(harness);
    return reason === undefined
      ? { tokens: null, unreadable: "not read yet: the daemon reads it every few seconds while it runs" }
      : { tokens: null, unreadable: reason };
  }
  if (!usage.readable) return { tokens: null, unreadable: usage.reason };
  return { tokens: usage.total, input: usage.input, cached: usage.cached, output: usage.output };
}

/** What a usage summary needs of a session: its item, when it began (its budget record's key) and its harness. */
export interface UsageSession {
  readonly ref: string;
  readonly createdAt: string;
  readonly harness: string;
}

/** The usage of a live session from its budget record (`record`, undefined without one), or what can be said without one. */
export function usageSummary(record: BudgetRecord | undefined, limits: BudgetLimits, session: UsageSession, now: Date = new Date()): UsageSummary {
  const own = record !== undefined && record.session === session.createdAt ? record : undefined;
  const raise = own?.raise ?? { tokens: 0, minutes: 0 };
  const raised = raise.tokens > 0 || raise.minutes > 0;
  return {
    ...tokensOf(own?.usage, session.harness),
    minutes: Math.floor(minutesBetween(session.createdAt, now)),
    limits: hasBudget(limits) ? effectiveLimits(limits, raise) : {},
    ...(raised ? { raised: raise } : {}),
    ...(own?.usage !== undefined ? { readAt: own.usage.readAt } : {}),
  };
}

/** The usage column of the `sessions list` table: `12,345/100,000 tok, 12/240 min`, `- tok (unreadable), 3 min`. */
export function usageColumn(summary: UsageSummary): string {
  const tokens =
    summary.tokens === null
      ? "? tok"
      : `${summary.tokens.toLocaleString("en-US")}${summary.limits.tokens !== undefined ? `/${summary.limits.tokens.toLocaleString("en-US")}` : ""} tok`;
  const minutes = `${summary.minutes}${summary.limits.minutes !== undefined ? `/${summary.limits.minutes}` : ""} min`;
  return `${tokens}, ${minutes}`;
}

/**
 * The usage of the live sessions, from their budget records, read for the live ones only: a
 * listing of thousands of closed sessions reads none. The budget folder's names are read once, so
 * a live session without a record (the daemon has not looked at it yet) costs no file read.
 */
export interface LiveUsage {
  /** The `usage` field of a session in `sessions list --json` and `why --json`: null unless it is live. */
  of(record: SessionRecord): { usage: UsageSummary | null };
  /** A live session's usage. */
  summary(session: UsageSession): UsageSummary;
  /** The usage column of a live session's row in the table. */
  column(session: UsageSession): string;
}

export function liveUsage(stateRoot: string, limits: BudgetLimits): LiveUsage {
  const store = new BudgetStore({ dir: budgetDir(stateRoot) });
  const present = budgetFileNames(store.dir);
  const recordOf = (ref: string): BudgetRecord | undefined => {
    if (present.size === 0) return undefined;
    const file = store.fileOf(ref);
    return present.has(basename(file)) ? readRecord(store, ref) : undefined;
  };
  const summary = (session: UsageSession): UsageSummary => usageSummary(recordOf(session.ref), limits, session);
  return {
    of: (record) => ({ usage: isLive(record) ? summary({ ref: record.workItem.ref, createdAt: record.createdAt, harness: record.harness }) : null }),
    summary,
    column: (session) => usageColumn(summary(session)),
  };
}

/** The names in the budget folder; none when it does not exist yet. */
function budgetFileNames(dir: string): ReadonlySet<string> {
  try {
    return new Set(readdirSync(dir));
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return new Set();
    throw error;
  }
}
