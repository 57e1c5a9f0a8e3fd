import { NO_RAISE, effectiveLimits, hasBudget, minutesBetween, withThousands } from "./decide.js";
import type { BudgetLimits, BudgetRaise } from "./decide.js";
import { BudgetRecordError } from "./store.js";
import type { BudgetRecord, BudgetStore, UsageFacts } from "./store.js";
import { unreadableReason } from "./transcripts.js";

/**
 * A live session's usage so far against its budget (docs/fleet.md#budgets), as every reader shows
 * it: `sessions list`, `why` (the CLI's, the daemon's `session.why` behind the MCP `why` tool, the
 * dashboard's), `graph status` and the `loop.*` payloads' `details.the_loop.usage`. One builder,
 * so they never disagree: the figures are the daemon's last reading, kept in the item's budget
 * record; the minutes are counted now. Tokens a harness does not record are null with the reason,
 * never 0.
 */

/** A session's usage as the readers give it (a type, not an interface: it travels as JSON in answers and payloads). */
export type UsageSummary = {
  /** Tokens so far; null when they cannot be read (`unreadable` says why). */
  readonly tokens: number | null;
  readonly input?: number;
  readonly cached?: number;
  readonly output?: number;
  readonly unreadable?: string;
  /** Whole wall-clock minutes since the session began. */
  readonly minutes: number;
  /** The limits in force (raised ones included); a dimension without a limit is absent. */
  readonly limits: { readonly tokens?: number; readonly minutes?: number };
  /** What `sessions resume --budget +N` added; absent when nothing was. */
  readonly raised?: BudgetRaise;
  /** When the daemon last read the tokens; absent before its first look. */
  readonly readAt?: string;
};

/** What the usage's words are made of: a UsageSummary, or the same figures as another folder holds them. */
export type UsageFigures = Pick<UsageSummary, "tokens" | "unreadable" | "minutes" | "limits">;

/** What of a session the summary needs: which session it is (its createdAt) and its harness. */
export interface UsageSession {
  readonly createdAt: string;
  readonly harness: string;
}

/** Before the daemon's first look at a harness it can read. */
export const NOT_READ_YET = "not read yet: the daemon reads it every few seconds while the session runs";

type Built<T> = { -readonly [K in keyof T]: T[K] };

/** The summary's token fields and the two every summary has, in the order readers print them. */
function summaryOf(usage: UsageFacts | undefined, harness: string, minutes: number, limits: UsageSummary["limits"]): Built<UsageSummary> {
  if (usage === undefined) return { tokens: null, unreadable: unreadableReason(harness) ?? NOT_READ_YET, minutes, limits };
  if (!usage.readable) return { tokens: null, unreadable: usage.reason, minutes, limits };
  return { tokens: usage.total, input: usage.input, cached: usage.cached, output: usage.output, minutes, limits };
}

/**
 * The usage of `session` from its item's budget record (pure). A record of an earlier session of
 * the item counts for nothing: the new one starts from none.
 */
export function summarizeUsage(
  record: Pick<BudgetRecord, "session" | "usage" | "raise"> | undefined,
  limits: BudgetLimits,
  session: UsageSession,
  now: Date,
): UsageSummary {
  const own = record !== undefined && record.session === session.createdAt ? record : undefined;
  const raise = own?.raise ?? NO_RAISE;
  // Field by field rather than spread: `sessions list --json` builds one per live session, thousands of them.
  const summary = summaryOf(
    own?.usage,
    session.harness,
    Math.floor(minutesBetween(session.createdAt, now)),
    hasBudget(limits) ? effectiveLimits(limits, raise) : {},
  );
  if (raise.tokens > 0 || raise.minutes > 0) summary.raised = raise;
  if (own?.usage !== undefined) summary.readAt = own.usage.readAt;
  return summary;
}

/** The record of `ref`, or undefined without one; a damaged one holds nothing to show (the daemon starts it afresh). */
export function budgetRecordOf(store: BudgetStore, ref: string): BudgetRecord | undefined {
  try {
    return store.get(ref);
  } catch (error) {
    if (error instanceof BudgetRecordError) return undefined;
    throw error;
  }
}

/** The usage of the item `ref`'s session, read from its budget record. */
export function readUsage(store: BudgetStore, limits: BudgetLimits, ref: string, session: UsageSession, now: Date = new Date()): UsageSummary {
  return summarizeUsage(budgetRecordOf(store, ref), limits, session, now);
}

/** `12,345/100,000 tok, 12/240 min`; `? tok, 3 min` where the tokens cannot be read. */
export function usageText(summary: UsageFigures): string {
  const tokens =
    summary.tokens === null
      ? "? tok"
      : `${withThousands(summary.tokens)}${summary.limits.tokens !== undefined ? `/${withThousands(summary.limits.tokens)}` : ""} tok`;
  const minutes = `${summary.minutes}${summary.limits.minutes !== undefined ? `/${summary.limits.minutes}` : ""} min`;
  return `${tokens}, ${minutes}`;
}

/** The usage line `why` prints: the figures, and why the tokens are not among them when they are not. */
export function usageLine(summary: UsageFigures): string {
  return `${usageText(summary)}${summary.tokens === null && summary.unreadable !== undefined ? ` (tokens: ${summary.unreadable})` : ""}`;
}
