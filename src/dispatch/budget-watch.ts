import { randomUUID } from "node:crypto";
import { figureText, judgeBudget, minutesBetween, usedOfLimit } from "../budget/decide.js";
import type { BudgetDimension, BudgetFigure, BudgetVerdict } from "../budget/decide.js";
import type { BudgetRecord, UsageFacts } from "../budget/store.js";
import { TranscriptReader, unreadableReason } from "../budget/transcripts.js";
import { isUsageHarness } from "../budget/usage.js";
import { messageOf } from "../errors.js";
import { lookEvery } from "../supervision/index.js";
import { markSelfAuthored, parseWorkItemRef } from "../workitem/index.js";
import { adapterOf, deliveryEvents, dispatchFailed } from "../sessions/context.js";
import type { DeliveryEvents, DispatchContext } from "../sessions/context.js";
import { isLive } from "../registry/record.js";
import type { SessionRecord } from "../registry/record.js";
import { controlRequest } from "./commands.js";

/**
 * Budgets per session (docs/fleet.md#budgets), watched by the daemon: every BUDGET_CHECK_MS each
 * live session's usage is read off its harness's transcript (from where the last look ended),
 * its wall-clock minutes counted, and the record of both kept in `<state.root>/budget/`. At
 * `warnAt` of a limit it warns (an event and a marked comment, once per limit); at the limit the
 * item is paused with reason `budget`, the agent's current turn is interrupted by its harness's
 * own keys, and a marked comment gives the figures. The decisions are judgeBudget's.
 */

/** How often the daemon looks at every live session's usage. */
export const BUDGET_CHECK_MS = 2000;

/** Each session's transcript reader, kept between looks so each reads only what was appended. */
export class UsageReaders {
  private readonly readers = new Map<string, { readonly key: string; readonly reader: TranscriptReader }>();

  constructor(private readonly env: () => Readonly<Record<string, string | undefined>>) {}

  /** The reader of `record`'s conversation (a new session, or a new conversation id, gets a new one). */
  readerOf(record: SessionRecord): TranscriptReader | undefined {
    if (!isUsageHarness(record.harness)) return undefined;
    const key = `${record.createdAt} ${record.harnessSessionId}`;
    const known = this.readers.get(record.workItem.ref);
    if (known?.key === key) return known.reader;
    const reader = new TranscriptReader(record.harness, {
      harness: record.harness,
      conversationId: record.harnessSessionId,
      cwd: record.cwd,
      createdAt: record.createdAt,
      env: this.env(),
    });
    this.readers.set(record.workItem.ref, { key, reader });
    return reader;
  }

  /** Forgets the readers of items with no live session. */
  keepOnly(refs: ReadonlySet<string>): void {
    for (const ref of this.readers.keys()) if (!refs.has(ref)) this.readers.delete(ref);
  }
}

async function usageFacts(readers: UsageReaders, record: SessionRecord, now: Date): Promise<UsageFacts> {
  const readAt = now.toISOString();
  const reader = readers.readerOf(record);
  if (reader === undefined) return { readable: false, readAt, reason: unreadableReason(record.harness) ?? "no transcript" };
  try {
    const reading = await reader.read(now);
    if (!reading.readable) return { readable: false, readAt, reason: reading.reason };
    return { readable: true, readAt, files: reading.files.length, ...reading.usage };
  } catch (error) {
    return { readable: false, readAt, reason: `its transcript could not be read: ${messageOf(error)}` };
  }
}

/** What one look decided, and the record to keep. */
interface Judged {
  readonly verdict: BudgetVerdict;
  readonly record: BudgetRecord;
}

function judged(ctx: DispatchContext, before: BudgetRecord, usage: UsageFacts, minutes: number, active: boolean, now: Date): Judged {
  const tokens = usage.readable ? usage.total : undefined;
  const verdict = judgeBudget({ limits: ctx.routing.budget, raise: before.raise, use: { tokens, minutes }, warnedAt: before.warnedAt, active });
  // Whole minutes on the record: a record rewritten once a minute at most while nothing else moves.
  const kept = { ...before, usage, minutes: Math.floor(minutes) };
  if (verdict.kind === "warn") return { verdict, record: { ...kept, warnedAt: { ...before.warnedAt, [verdict.dimension]: verdict.limit } } };
  if (verdict.kind === "exceeded") {
    const { dimension, used, limit } = verdict;
    return { verdict, record: { ...kept, exceeded: { dimension, used, limit, at: now.toISOString() } } };
  }
  return { verdict, record: kept };
}

/** The usage part of a record as a look compares it: unchanged figures are not written again. */
function sameFacts(a: BudgetRecord, b: BudgetRecord): boolean {
  const strip = (record: BudgetRecord): unknown => ({ ...record, usage: record.usage === undefined ? undefined : { ...record.usage, readAt: "" } });
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}

/**
 * One look at one item's session, in the item's queue: read, count, judge, keep the record, act.
 * Whether it paused the item.
 */
export async function checkBudget(ctx: DispatchContext, readers: UsageReaders, ref: string): Promise<boolean> {
  const store = ctx.options.budgets;
  if (store === undefined) return false;
  const record = ctx.options.registry.get(ref);
  if (record === undefined || !isLive(record)) return false;
  const now = ctx.now();
  const usage = await usageFacts(readers, record, now);
  const minutes = minutesBetween(record.createdAt, now);
  const { verdict } = await store.update(ref, record, (before) => {
    const next = judged(ctx, before, usage, minutes, record.status === "active", now);
    return { record: sameFacts(before, next.record) ? undefined : next.record, result: next };
  });
  if (verdict.kind === "within") return false;
  const events = deliveryEvents(ctx.options.events, ref, `budget-${randomUUID()}`);
  const figures = { harness: record.harness, ...(usage.readable ? { tokens: usage.total } : {}), minutes: Math.floor(minutes) };
  const figure = { dimension: verdict.dimension, used: Math.floor(verdict.used), limit: verdict.limit };
  if (verdict.kind === "warn") {
    events.emit("session.budget_warned", { ...figure, ...figures });
    await postMarked(ctx, events, ref, warningText(ref, verdict, ctx.routing.budget.warnAt));
    return false;
  }
  const paused = await pauseForBudget(ctx, ref, verdict);
  if (paused !== undefined) {
    dispatchFailed(events, "control", `the session of ${ref} reached its budget (${usedOfLimit(verdict)}) but could not be paused: ${paused}`);
    return false;
  }
  const interrupt = await interruptTurn(ctx, record);
  events.emit("session.budget_exceeded", {
    ...figure,
    ...figures,
    interrupted: interrupt === true,
    ...(typeof interrupt === "string" ? { error: interrupt } : {}),
  });
  await postMarked(ctx, events, ref, exceededText(ref, verdict, usage, minutes, interrupt === true));
  return true;
}

/** The pause at the limit: the item's control record (source `budget`), as any pause. Undefined when it applied; else why not. */
async function pauseForBudget(ctx: DispatchContext, ref: string, figure: BudgetFigure): Promise<string | undefined> {
  try {
    const outcome = await controlRequest(ctx, ref, { ref, command: "pause", source: "budget", actor: "the-loop", note: `budget: ${usedOfLimit(figure)}` });
    return outcome.applied ? undefined : outcome.message;
  } catch (error) {
    return messageOf(error);
  }
}

/** The harness's interrupt keys into its pane: true when sent; else why not. */
async function interruptTurn(ctx: DispatchContext, record: SessionRecord): Promise<true | string> {
  try {
    const keys = adapterOf(ctx, record.harness).interruptKeys;
    if (keys === undefined) return `the ${record.harness} harness has no documented interrupt`;
    const runner = ctx.options.runner;
    if (runner.interrupt === undefined) return "this runner cannot interrupt a turn";
    await runner.interrupt(record.tmuxTarget, keys);
    return true;
  } catch (error) {
    return messageOf(error);
  }
}

async function postMarked(ctx: DispatchContext, events: DeliveryEvents, ref: string, body: string): Promise<void> {
  try {
    await ctx.options.trackers.forRef(ref).postComment(parseWorkItemRef(ref), markSelfAuthored(body));
  } catch (error) {
    dispatchFailed(events, "control", `the budget comment on ${ref} could not be posted: ${messageOf(error)}`);
  }
}

const raiseHint = (ref: string, dimension: BudgetDimension): string =>
  `\`the-loop sessions resume --work-item ${ref} --budget +N\` raises the ${dimension === "tokens" ? "token" : "minute"} limit by N and resumes it`;

export function warningText(ref: string, figure: BudgetFigure, warnAt: number): string {
  return [
    `⚠️ **the-loop budget of \`${ref}\`**: its session has used ${usedOfLimit(figure)} (warning at ${Math.round(warnAt * 100)}%).`,
    "",
    `At the limit its turn is interrupted and the item paused; ${raiseHint(ref, figure.dimension)}.`,
  ].join("\n");
}

export function exceededText(ref: string, figure: BudgetFigure, usage: UsageFacts, minutes: number, interrupted: boolean): string {
  const tokens = usage.readable
    ? `${figureText("tokens", usage.total)} (${figureText("tokens", usage.input)} read, of them ${usage.cached.toLocaleString("en-US")} cached; ${usage.output.toLocaleString("en-US")} written)`
    : `tokens not counted (${usage.reason})`;
  return [
    `⏸️ **the-loop paused \`${ref}\`: its session reached its budget**, ${usedOfLimit(figure)}.`,
    "",
    `- used: ${tokens}; ${figureText("minutes", minutes)} since it started`,
    `- ${interrupted ? "its current turn was interrupted" : "its turn could not be interrupted: the agent may finish the turn it is on"}; the session, its conversation and its checkout are kept, and events are not delivered while it is paused`,
    "",
    `To go on, ${raiseHint(ref, figure.dimension)} (\`+Nk\` for thousands of tokens, \`+Nmin\` for minutes). A resume without a raise is paused again at once.`,
  ].join("\n");
}

/**
 * The daemon's look at the budgets, every BUDGET_CHECK_MS until `signal` aborts. A look that
 * fails is reported once until one succeeds again.
 */
export function watchBudgets(check: () => Promise<number>, signal: AbortSignal, warn: (message: string) => void): Promise<void> {
  return lookEvery(BUDGET_CHECK_MS, check, signal, warn, "could not check the sessions' budgets");
}
