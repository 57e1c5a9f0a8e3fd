import { DEFAULT_GITHUB_HOST, parseWorkItemRef, repositoryOf } from "../workitem/index.js";

/**
 * Concurrency caps (routing.limits, docs/fleet.md) as plain functions over data: whether a start
 * may spawn now or waits in the queue, and which queued starts a freed slot lets through. The
 * queue is FIFO within priority, the starts carrying the operator's priority label first; a start
 * held by one cap never holds back a start no full cap concerns (a queued codex item waits for a
 * codex slot while a claude item behind it may take a free slot), and a paused start keeps its
 * place without holding anyone back.
 */

/** The caps as the config gives them; a missing cap is no cap. */
export interface Limits {
  readonly maxLiveSessions?: number | undefined;
  /** This daemon's own capacity: its live sessions (`here`), not the fleet's. */
  readonly perDaemon?: number | undefined;
  readonly perHarness: Readonly<Record<string, number>>;
  /** A repository (`owner/repo`, `host/owner/repo`) or a local project → its cap. */
  readonly perRepository?: Readonly<Record<string, number>> | undefined;
}

/** A live session, as far as the caps care. */
export interface LiveSlot {
  readonly ref: string;
  readonly harness: string;
  /**
   * False for a session another daemon on the shared database runs: it counts toward the fleet's
   * caps, not this daemon's `perDaemon`. Unset: here (one daemon owns everything on files).
   */
  readonly here?: boolean | undefined;
}

/** A start waiting for a slot, in the queue's order. */
export interface QueuedStart {
  readonly ref: string;
  readonly harness: string;
  /** It carried the priority label when it was queued: it goes before every start without it. */
  readonly priority?: boolean | undefined;
  /** Its item is paused: it keeps its place, takes no slot, and holds nobody back. */
  readonly paused?: boolean | undefined;
}

/** A cap that is full, by the key it has in the config. */
export type FullCap =
  | { readonly cap: "maxLiveSessions"; readonly limit: number }
  | { readonly cap: "perDaemon"; readonly limit: number }
  | { readonly cap: "perHarness"; readonly harness: string; readonly limit: number }
  | { readonly cap: "perRepository"; readonly repository: string; readonly limit: number };

export type Admission =
  | { readonly kind: "start" }
  /** `ahead`: the queued starts before this one; `cap`: the first cap that holds it. */
  | { readonly kind: "queue"; readonly ahead: number; readonly cap: FullCap };

/** Whether the caps on starts are on at all: with none, nothing is ever queued. */
export function hasLimits(limits: Limits): boolean {
  return (
    limits.maxLiveSessions !== undefined ||
    limits.perDaemon !== undefined ||
    Object.keys(limits.perHarness).length > 0 ||
    Object.keys(limits.perRepository ?? {}).length > 0
  );
}

/**
 * The repository key of a canonical work item ref, as `perRepository` names it: `owner/repo` on
 * github.com, `host/owner/repo` on another GitHub host, the project's name on the local tracker.
 * Lower-cased (GitHub's names are case-insensitive); undefined for a ref that does not parse.
 */
export function repositoryKey(ref: string): string | undefined {
  try {
    const parsed = parseWorkItemRef(ref);
    const name = repositoryOf(parsed);
    return (parsed.tracker === "github" && parsed.host !== DEFAULT_GITHUB_HOST ? `${parsed.host}/${name}` : name).toLowerCase();
  } catch {
    // Not a canonical ref (nothing the-loop queues or runs): no repository cap concerns it.
    return undefined;
  }
}

/** `perRepository` with its keys as repositoryKey gives them. */
function repositoryCaps(limits: Limits): Map<string, number> {
  return new Map(Object.entries(limits.perRepository ?? {}).map(([key, limit]) => [key.toLowerCase(), limit]));
}

/** Live counts: all, on this daemon, per harness, per repository. */
interface Counts {
  total: number;
  here: number;
  readonly byHarness: Map<string, number>;
  readonly byRepository: Map<string, number>;
}

function bump(map: Map<string, number>, key: string | undefined): void {
  if (key !== undefined) map.set(key, (map.get(key) ?? 0) + 1);
}

function countsOf(live: readonly LiveSlot[]): Counts {
  const counts: Counts = { total: 0, here: 0, byHarness: new Map(), byRepository: new Map() };
  for (const slot of live) take(counts, slot);
  return counts;
}

/** The first cap a start would exceed, given these counts; undefined when it fits. */
function fullCap(limits: Limits, repositories: Map<string, number>, counts: Counts, start: LiveSlot): FullCap | undefined {
  if (limits.maxLiveSessions !== undefined && counts.total >= limits.maxLiveSessions) return { cap: "maxLiveSessions", limit: limits.maxLiveSessions };
  if (limits.perDaemon !== undefined && counts.here >= limits.perDaemon) return { cap: "perDaemon", limit: limits.perDaemon };
  const own = limits.perHarness[start.harness];
  if (own !== undefined && (counts.byHarness.get(start.harness) ?? 0) >= own) return { cap: "perHarness", harness: start.harness, limit: own };
  const repository = repositoryKey(start.ref);
  const repositoryCap = repository === undefined ? undefined : repositories.get(repository);
  if (repository !== undefined && repositoryCap !== undefined && (counts.byRepository.get(repository) ?? 0) >= repositoryCap) {
    return { cap: "perRepository", repository, limit: repositoryCap };
  }
  return undefined;
}

/** A start taken from the queue is weighed as this daemon's: it is this daemon's look at the queue. */
function take(counts: Counts, start: LiveSlot): void {
  counts.total += 1;
  if (start.here !== false) counts.here += 1;
  bump(counts.byHarness, start.harness);
  bump(counts.byRepository, repositoryKey(start.ref));
}

/**
 * Where a start not yet queued joins the queue: after every start with the priority label when it
 * has it too, else at the end. The 0-based index it is inserted at.
 */
export function placeInQueue(queue: readonly QueuedStart[], priority: boolean): number {
  if (!priority) return queue.length;
  let place = 0;
  queue.forEach((entry, index) => {
    if (entry.priority === true) place = index + 1;
  });
  return place;
}

/**
 * Whether `candidate` may start now. The queued starts ahead of it (where it would join the queue
 * when it is not in it yet) go first: each one that fits and is not paused takes its slot before
 * the candidate is weighed. A live session of the candidate's own item is not counted against it
 * (the claim decides that case).
 */
export function admit(limits: Limits, live: readonly LiveSlot[], queue: readonly QueuedStart[], candidate: QueuedStart): Admission {
  const repositories = repositoryCaps(limits);
  const counts = countsOf(live.filter((slot) => slot.ref !== candidate.ref));
  const index = queue.findIndex((entry) => entry.ref === candidate.ref);
  const ahead = queue.slice(0, index === -1 ? placeInQueue(queue, candidate.priority === true) : index);
  for (const entry of ahead) {
    if (entry.paused !== true && fullCap(limits, repositories, counts, entry) === undefined) take(counts, entry);
  }
  const cap = fullCap(limits, repositories, counts, candidate);
  return cap === undefined ? { kind: "start" } : { kind: "queue", ahead: ahead.length, cap };
}

/** The queued starts that may start now, in queue order: what a freed slot lets through. A paused one is passed over. */
export function startable(limits: Limits, live: readonly LiveSlot[], queue: readonly QueuedStart[]): QueuedStart[] {
  const repositories = repositoryCaps(limits);
  const counts = countsOf(live);
  const chosen: QueuedStart[] = [];
  for (const entry of queue) {
    if (entry.paused === true || live.some((slot) => slot.ref === entry.ref)) continue;
    if (fullCap(limits, repositories, counts, entry) !== undefined) continue;
    take(counts, entry);
    chosen.push(entry);
  }
  return chosen;
}

/** A full cap in words: `routing.limits.maxLiveSessions 2`, `routing.limits.perHarness.codex 1`, `routing.limits.perRepository.acme/api 1`. */
export function capText(cap: FullCap): string {
  switch (cap.cap) {
    case "maxLiveSessions":
      return `routing.limits.maxLiveSessions ${cap.limit}`;
    case "perDaemon":
      return `routing.limits.perDaemon ${cap.limit} (this daemon's capacity)`;
    case "perHarness":
      return `routing.limits.perHarness.${cap.harness} ${cap.limit}`;
    case "perRepository":
      return `routing.limits.perRepository.${cap.repository} ${cap.limit}`;
  }
}

/** One cap with what is live under it. */
export interface CapUsage {
  readonly cap: string;
  readonly live: number;
  readonly limit: number;
}

/** Each cap on starts with what is live under it: for `status`. */
export function capUsage(limits: Limits, live: readonly LiveSlot[]): CapUsage[] {
  const counts = countsOf(live);
  const usage: CapUsage[] = [];
  if (limits.maxLiveSessions !== undefined) usage.push({ cap: "maxLiveSessions", live: counts.total, limit: limits.maxLiveSessions });
  for (const [harness, limit] of Object.entries(limits.perHarness))
    usage.push({ cap: `perHarness.${harness}`, live: counts.byHarness.get(harness) ?? 0, limit });
  for (const [repository, limit] of Object.entries(limits.perRepository ?? {}))
    usage.push({ cap: `perRepository.${repository}`, live: counts.byRepository.get(repository.toLowerCase()) ?? 0, limit });
  return usage;
}
