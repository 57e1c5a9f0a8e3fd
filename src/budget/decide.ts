/**
 * The budget decisions (docs/fleet.md#budgets): pure functions over plain data, so every case is
 * a row of a table test. What a session has used comes in (its tokens, when its harness records
 * them, and its wall-clock minutes), with its limits, what an operator raised them by, and what
 * was already said; what to do comes out.
 */

export const BUDGET_DIMENSIONS = ["tokens", "minutes"] as const;
export type BudgetDimension = (typeof BUDGET_DIMENSIONS)[number];

/** `routing.budget` as the decisions read it. */
export interface BudgetLimits {
  readonly tokens?: number | undefined;
  readonly minutes?: number | undefined;
  /** The share of a limit at which a warning is posted, in (0, 1]. */
  readonly warnAt: number;
}

/** What an operator raised the limits by (`sessions resume --budget +N`). */
export type BudgetRaise = { readonly [D in BudgetDimension]: number };
export const NO_RAISE: BudgetRaise = { tokens: 0, minutes: 0 };

/** What a session has used; `tokens` undefined when its harness's usage cannot be read. */
export interface BudgetUse {
  readonly tokens?: number | undefined;
  readonly minutes: number;
}

export interface BudgetInput {
  readonly limits: BudgetLimits;
  readonly raise: BudgetRaise;
  readonly use: BudgetUse;
  /** The limit each dimension was last warned at: a warning is said once per limit. */
  readonly warnedAt: Partial<Record<BudgetDimension, number>>;
  /** Only an active session is acted on: a paused one is held already. */
  readonly active: boolean;
}

export interface BudgetFigure {
  readonly dimension: BudgetDimension;
  readonly used: number;
  readonly limit: number;
}

export type BudgetVerdict =
  | { readonly kind: "within" }
  | ({ readonly kind: "warn" } & BudgetFigure)
  /** At or past the limit: the turn is interrupted and the item paused with reason `budget`. */
  | ({ readonly kind: "exceeded" } & BudgetFigure);

/** The limits in force: the configured ones plus what was raised. Undefined: no limit on that dimension. */
export function effectiveLimits(limits: BudgetLimits, raise: BudgetRaise): Partial<Record<BudgetDimension, number>> {
  return {
    ...(limits.tokens !== undefined ? { tokens: limits.tokens + raise.tokens } : {}),
    ...(limits.minutes !== undefined ? { minutes: limits.minutes + raise.minutes } : {}),
  };
}

function usedOf(use: BudgetUse, dimension: BudgetDimension): number | undefined {
  return dimension === "tokens" ? use.tokens : use.minutes;
}

/**
 * What to do about a session's use now. A limit reached wins over a warning (tokens first); a
 * warning is said once for each limit in force, so a raised limit is warned about again at its
 * own threshold. A dimension whose use cannot be read (tokens of a harness that records none)
 * is never judged: it is neither within nor over, and `status` says so.
 */
export function judgeBudget(input: BudgetInput): BudgetVerdict {
  if (!input.active) return { kind: "within" };
  const limits = effectiveLimits(input.limits, input.raise);
  for (const dimension of BUDGET_DIMENSIONS) {
    const limit = limits[dimension];
    const used = usedOf(input.use, dimension);
    if (limit !== undefined && used !== undefined && used >= limit) return { kind: "exceeded", dimension, used, limit };
  }
  for (const dimension of BUDGET_DIMENSIONS) {
    const limit = limits[dimension];
    const used = usedOf(input.use, dimension);
    if (limit === undefined || used === undefined || input.warnedAt[dimension] === limit) continue;
    if (used >= limit * input.limits.warnAt) return { kind: "warn", dimension, used, limit };
  }
  return { kind: "within" };
}

/** Whether any limit is set: without one the-loop only counts. */
export function hasBudget(limits: BudgetLimits): boolean {
  return limits.tokens !== undefined || limits.minutes !== undefined;
}

/** What `--budget` asked for: a dimension, or the one the item was paused on (a bare number). */
export interface ParsedRaise {
  readonly dimension?: BudgetDimension;
  readonly amount: number;
}

/**
 * `--budget +N`: `+50000` or `+50k` (a bare number raises the limit the item was paused at,
 * tokens when it was paused on none), `+50000tokens`, `+30min`. Undefined for anything else.
 */
export function parseBudgetRaise(text: string): ParsedRaise | undefined {
  const match = /^\+(\d{1,12})(k|tokens|min|minutes)?$/i.exec(text.trim());
  if (match === null) return undefined;
  const amount = Number(match[1]);
  if (!Number.isSafeInteger(amount) || amount <= 0) return undefined;
  const unit = match[2]?.toLowerCase();
  if (unit === undefined) return { amount };
  if (unit === "k") return { dimension: "tokens", amount: amount * 1000 };
  if (unit === "tokens") return { dimension: "tokens", amount };
  return { dimension: "minutes", amount };
}

/** The raise a parsed `--budget` makes, for an item paused on `pausedOn` (if it was). */
export function raiseFor(parsed: ParsedRaise, pausedOn: BudgetDimension | undefined): BudgetRaise {
  const dimension = parsed.dimension ?? pausedOn ?? "tokens";
  return { ...NO_RAISE, [dimension]: parsed.amount };
}

export function addRaise(a: BudgetRaise, b: BudgetRaise): BudgetRaise {
  return { tokens: a.tokens + b.tokens, minutes: a.minutes + b.minutes };
}

/** `12,345 tokens`, `42 min`: a figure as comments and the CLI say it. */
export function figureText(dimension: BudgetDimension, value: number): string {
  return `${amountText(dimension, value)} ${dimension === "tokens" ? "tokens" : "min"}`;
}

/** A count of tokens (rounded) or of minutes (whole ones gone by), with thousands separated. */
function amountText(dimension: BudgetDimension, value: number): string {
  return withThousands(dimension === "tokens" ? Math.round(value) : Math.floor(value));
}

const THOUSANDS = /\B(?=(\d{3})+$)/g;

/**
 * `12,345`: a whole number as `toLocaleString("en-US")` spells it, without Intl's cost (a table
 * of thousands of sessions spells two per row); anything else is left to it.
 */
export function withThousands(value: number): string {
  return Number.isSafeInteger(value) && value >= 0 ? String(value).replace(THOUSANDS, ",") : value.toLocaleString("en-US");
}

/** `12,345 of 100,000 tokens`. */
export function usedOfLimit(figure: BudgetFigure): string {
  return `${amountText(figure.dimension, figure.used)} of ${figureText(figure.dimension, figure.limit)}`;
}

/** Whole minutes between two instants (never negative). */
export function minutesBetween(from: string, now: Date): number {
  const start = Date.parse(from);
  if (Number.isNaN(start)) return 0;
  return Math.max(0, (now.getTime() - start) / 60_000);
}
