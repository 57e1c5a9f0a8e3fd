/**
 * Concurrency caps (routing.limits, docs/fleet.md) as plain functions over data: whether a start
 * may spawn now or waits in the queue, and which queued starts a freed slot lets through. The
 * queue is FIFO, but a start held by one cap never holds back a start no full cap concerns: a
 * queued codex item waits for a codex slot while a claude item behind it may take a free slot.
 */

/** The caps as the config gives them; a missing cap is no cap. */
export interface Limits {
  readonly maxLiveSessions?: number | undefined;
  readonly perHarness: Readonly<Record<string, number>>;
}

/** A live session, as far as the caps care. */
export interface LiveSlot {
  readonly ref: string;
  readonly harness: string;
}

/** A start waiting for a slot, in the queue's order. */
export interface QueuedStart {
  readonly ref: string;
  readonly harness: string;
}

/** A cap that is full, by the key it has in the config. */
export type FullCap =
  { readonly cap: "maxLiveSessions"; readonly limit: number } | { readonly cap: "perHarness"; readonly harness: string; readonly limit: number };

export type Admission =
  | { readonly kind: "start" }
  /** `ahead`: the queued starts before this one; `cap`: the first cap that holds it. */
  | { readonly kind: "queue"; readonly ahead: number; readonly cap: FullCap };

/** Whether the caps are on at all: with none, nothing is ever queued. */
export function hasLimits(limits: Limits): boolean {
  return limits.maxLiveSessions !== undefined || Object.keys(limits.perHarness).length > 0;
}

/** Live counts: all, and per harness. */
interface Counts {
  total: number;
  readonly byHarness: Map<string, number>;
}

function countsOf(live: readonly LiveSlot[]): Counts {
  const byHarness = new Map<string, number>();
  for (const slot of live) byHarness.set(slot.harness, (byHarness.get(slot.harness) ?? 0) + 1);
  return { total: live.length, byHarness };
}

/** The first cap a start of `harness` would exceed, given these counts; undefined when it fits. */
function fullCap(limits: Limits, counts: Counts, harness: string): FullCap | undefined {
  if (limits.maxLiveSessions !== undefined && counts.total >= limits.maxLiveSessions) return { cap: "maxLiveSessions", limit: limits.maxLiveSessions };
  const own = limits.perHarness[harness];
  if (own !== undefined && (counts.byHarness.get(harness) ?? 0) >= own) return { cap: "perHarness", harness, limit: own };
  return undefined;
}

function take(counts: Counts, harness: string): void {
  counts.total += 1;
  counts.byHarness.set(harness, (counts.byHarness.get(harness) ?? 0) + 1);
}

/**
 * Whether `candidate` may start now. The queued starts ahead of it (all of the queue when it is
 * not in it yet) go first: each one that fits takes its slot before the candidate is weighed.
 * A live session of the candidate's own item is not counted against it (the claim decides that case).
 */
export function admit(limits: Limits, live: readonly LiveSlot[], queue: readonly QueuedStart[], candidate: QueuedStart): Admission {
  const counts = countsOf(live.filter((slot) => slot.ref !== candidate.ref));
  const index = queue.findIndex((entry) => entry.ref === candidate.ref);
  const ahead = index === -1 ? queue : queue.slice(0, index);
  for (const entry of ahead) {
    if (fullCap(limits, counts, entry.harness) === undefined) take(counts, entry.harness);
  }
  const cap = fullCap(limits, counts, candidate.harness);
  return cap === undefined ? { kind: "start" } : { kind: "queue", ahead: ahead.length, cap };
}

/** The queued starts that may start now, in queue order: what a freed slot lets through. */
export function startable(limits: Limits, live: readonly LiveSlot[], queue: readonly QueuedStart[]): QueuedStart[] {
  const counts = countsOf(live);
  const chosen: QueuedStart[] = [];
  for (const entry of queue) {
    if (live.some((slot) => slot.ref === entry.ref)) continue;
    if (fullCap(limits, counts, entry.harness) !== undefined) continue;
    take(counts, entry.harness);
    chosen.push(entry);
  }
  return chosen;
}

/** A full cap in words: `maxLiveSessions 2` or `perHarness.codex 1`. */
export function capText(cap: FullCap): string {
  return cap.cap === "maxLiveSessions" ? `routing.limits.maxLiveSessions ${cap.limit}` : `routing.limits.perHarness.${cap.harness} ${cap.limit}`;
}

/** Each cap with what is live under it: for `status`. */
export function capUsage(limits: Limits, live: readonly LiveSlot[]): { readonly cap: string; readonly live: number; readonly limit: number }[] {
  const counts = countsOf(live);
  const usage: { cap: string; live: number; limit: number }[] = [];
  if (limits.maxLiveSessions !== undefined) usage.push({ cap: "maxLiveSessions", live: counts.total, limit: limits.maxLiveSessions });
  for (const [harness, limit] of Object.entries(limits.perHarness))
    usage.push({ cap: `perHarness.${harness}`, live: counts.byHarness.get(harness) ?? 0, limit });
  return usage;
}
