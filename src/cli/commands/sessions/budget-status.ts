import { figureText, hasBudget } from "../../../budget/decide.js";
import type { BudgetLimits } from "../../../budget/decide.js";
import { unreadableReason } from "../../../budget/transcripts.js";
import { allowedHarnesses } from "../../../routing/harness-choice.js";

// Apart from budget.ts so that `status` loads no record store for its line (docs/fleet.md#budgets).
/** What `status` says of budgets: the limits per session, and each harness the config allows whose usage cannot be read. */
export interface BudgetStatus {
  readonly limits: { readonly tokens: number | null; readonly minutes: number | null; readonly warnAt: number };
  readonly unreadable: readonly { readonly harness: string; readonly reason: string }[];
}

export function budgetStatus(routing: Parameters<typeof allowedHarnesses>[0] & { readonly budget: BudgetLimits }): BudgetStatus | undefined {
  const unreadable = allowedHarnesses(routing).flatMap((harness) => {
    const reason = unreadableReason(harness);
    return reason === undefined ? [] : [{ harness, reason }];
  });
  // Nothing to say without a limit: usage is counted and shown in `sessions list` either way.
  if (!hasBudget(routing.budget)) return undefined;
  const { tokens, minutes, warnAt } = routing.budget;
  return { limits: { tokens: tokens ?? null, minutes: minutes ?? null, warnAt }, unreadable };
}

/** `budget: 6,000 tokens, 240 minutes per session (warned at 80 %); tokens not read for cursor: …`. */
export function budgetLine(status: BudgetStatus): string {
  const limits = [
    status.limits.tokens !== null ? figureText("tokens", status.limits.tokens) : undefined,
    status.limits.minutes !== null ? figureText("minutes", status.limits.minutes) : undefined,
  ].filter((part) => part !== undefined);
  const head = `budget: ${limits.join(", ")} per session (warned at ${Math.round(status.limits.warnAt * 100)} %)`;
  const unread = status.unreadable.map((entry) => `${entry.harness} (${entry.reason})`);
  return unread.length === 0 ? head : `${head}; tokens not read for ${unread.join(", ")}`;
}
