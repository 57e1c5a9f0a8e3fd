import { usageLine } from "../budget/summary.js";
import { describeEvent } from "../why/events.js";
import { explainWhy } from "../why/explain.js";
import type { UsageView, WhySituation } from "../why/explain.js";

/**
 * `GET /api/v1/items/{ref}/why` (docs/dashboard.md): one item's `why` as `the-loop why --json`
 * gives it — the verdict, the live session's usage against routing.budget, the timeline newest
 * first in `why`'s words — from the same situation and the same pure functions, so the page and
 * the CLI never disagree.
 */
export function whyDocument(situation: WhySituation) {
  const verdict = explainWhy(situation);
  return {
    ref: situation.ref,
    verdict: { state: verdict.state, summary: verdict.summary, next: verdict.next ?? null, lastRefusal: verdict.lastRefusal ?? null },
    usage: situation.usage !== undefined ? usageDocument(situation.usage) : null,
    // Newest first, each event in the words `the-loop why` uses.
    timeline: situation.events.map((record) => ({
      ts: record.ts,
      event: record.event,
      level: record.level,
      text: describeEvent(record, situation.settings),
    })),
  };
}

/** A live session's usage so far: the figures, the limits in force (null: none), and the line `why` prints. */
function usageDocument(usage: UsageView) {
  return {
    tokens: usage.tokens,
    unreadable: usage.tokens === null ? (usage.unreadable ?? null) : null,
    minutes: usage.minutes,
    limits: { tokens: usage.limits.tokens ?? null, minutes: usage.limits.minutes ?? null },
    text: usageLine(usage),
  };
}
