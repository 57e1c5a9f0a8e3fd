/**
 * Budgets per work item (docs/fleet.md#budgets): what each agent CLI records of its model
 * tokens, read from its transcript as it grows; the wall-clock minutes of a session; the
 * decisions at a warning threshold and at the limit; and the record of what was used, raised
 * and said. Importers name the module itself; this file is the list the layering rule reads.
 */
export {
  BUDGET_DIMENSIONS,
  NO_RAISE,
  addRaise,
  effectiveLimits,
  figureText,
  hasBudget,
  judgeBudget,
  minutesBetween,
  parseBudgetRaise,
  raiseFor,
  usedOfLimit,
} from "./decide.js";
export type { BudgetDimension, BudgetFigure, BudgetInput, BudgetLimits, BudgetRaise, BudgetUse, BudgetVerdict, ParsedRaise } from "./decide.js";
export { NO_USAGE, USAGE_HARNESSES, UsageTally, claudeUsageLine, codexUsageLine, geminiUsageLine, isUsageHarness, sumUsage } from "./usage.js";
export type { TokenUsage, UsageHarness, UsageLine } from "./usage.js";
export { TranscriptReader, claudeProjectFolder, transcriptFiles, unreadableReason } from "./transcripts.js";
export type { TranscriptSession, UsageReading } from "./transcripts.js";
export { BudgetRecordError, BudgetStore, budgetDir } from "./store.js";
export { NOT_READ_YET, budgetRecordOf, readUsage, summarizeUsage, usageLine, usageText } from "./summary.js";
export type { UsageFigures, UsageSession, UsageSummary } from "./summary.js";
export type { BudgetRecord, UsageFacts } from "./store.js";
