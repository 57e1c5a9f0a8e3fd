import { z } from "zod";

/**
 * `routing.budget` (docs/fleet.md#budgets): what one session may use before it is paused —
 * model tokens as its agent CLI records them, and wall-clock minutes — and when to warn.
 */
export const budgetSchema = z
  .strictObject({
    tokens: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        "Model tokens a session may use (input, cached included, plus output, as its agent CLI records them). At the limit its turn is interrupted and the item paused (reason budget); `sessions resume --budget +N` raises it. Unset: counted, not capped.",
      ),
    minutes: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe("Wall-clock minutes a session may run, from its start; at the limit it is paused as for tokens. Unset: no cap."),
    warnAt: z
      .number()
      .gt(0)
      .max(1)
      .default(0.8)
      .describe("The share of a limit at which the-loop warns: a marked comment on the item and session.budget_warned, once per limit."),
  })
  .describe("Budgets per session (docs/fleet.md#budgets): model tokens where the agent CLI records them, and wall-clock minutes.");

export type BudgetConfig = z.output<typeof budgetSchema>;
