import type { DaemonRow, LeaseRow } from "../state/postgres/leases.js";

/**
 * The ownership decisions of daemons that share one database (docs/scale.md, "Many daemons, one
 * database"), as plain functions over the rows and the database's clock: who may take a daemon
 * name, who may take or renew a work item's lease, what a start does with the live sessions it
 * finds, which leases a beat found lost and which an idle daemon gives up.
 */

export interface FleetBounds {
  /** How long a lease lasts without a renewal (state.leaseSeconds). */
  readonly leaseMs: number;
  /** How often the leases and the name are renewed (state.heartbeatSeconds). */
  readonly heartbeatMs: number;
  /** How long past a lapsed lease another daemon waits before it takes the item (state.adoptGraceSeconds; 0 when absent). */
  readonly graceMs?: number;
}

/** The bounds of the config, or why they cannot work (a beat must fit three times in a lease, so one late beat loses nothing). */
export function fleetBounds(state: {
  readonly leaseSeconds: number;
  readonly heartbeatSeconds: number;
  readonly adoptGraceSeconds?: number;
}): FleetBounds | { readonly problem: string } {
  if (state.heartbeatSeconds * 3 > state.leaseSeconds) {
    return {
      problem: `state.heartbeatSeconds (${state.heartbeatSeconds}) is more than a third of state.leaseSeconds (${state.leaseSeconds}): one late heartbeat would let a lease lapse; lower the heartbeat or raise the lease`,
    };
  }
  const bounds = { leaseMs: state.leaseSeconds * 1000, heartbeatMs: state.heartbeatSeconds * 1000 };
  return state.adoptGraceSeconds === undefined ? bounds : { ...bounds, graceMs: state.adoptGraceSeconds * 1000 };
}

export type NameDecision = { readonly take: true } | { readonly refuse: string };

/** Whether a start may take the name `name`, given the daemon row the database holds under it. */
export function nameDecision(existing: DaemonRow | undefined, name: string, now: Date, leaseMs: number): NameDecision {
  if (existing === undefined || existing.stoppedAt !== null) return { take: true };
  const silentMs = now.getTime() - existing.heartbeatAt.getTime();
  if (silentMs > leaseMs) return { take: true };
  return {
    refuse:
      `a daemon named "${name}" already runs on this database (host ${existing.host}, pid ${existing.pid}, its last heartbeat ${Math.max(0, Math.round(silentMs / 1000))} s ago): ` +
      `give this one another name (state.daemonName in its config), or stop that one first (the-loop stop on ${existing.host}); ` +
      `the name is free once its daemon stops, or ${leaseMs / 1000} s after its last heartbeat`,
  };
}

export type LeaseDecision =
  | { readonly kind: "taken"; readonly from?: string }
  | { readonly kind: "renewed" }
  | { readonly kind: "elsewhere"; readonly owner: string; readonly expiresAt: Date };

/**
 * What `self` may do with an item's lease: take it (free, or lapsed more than `graceMs` ago — the
 * lost owner's watchdog has ended its harness by then), renew its own, or leave it to its owner.
 */
export function leaseDecision(lease: LeaseRow | undefined, self: string, now: Date, graceMs = 0): LeaseDecision {
  if (lease === undefined) return { kind: "taken" };
  if (lease.owner === self) return { kind: "renewed" };
  if (lease.expiresAt.getTime() + graceMs <= now.getTime()) return { kind: "taken", from: lease.owner };
  return { kind: "elsewhere", owner: lease.owner, expiresAt: lease.expiresAt };
}

/**
 * What a start does with an item it finds: `keep` the lease it still owns for a live session;
 * `take` one nobody holds for a live session that runs on this daemon's tmux server (a state from
 * before leases); close a session of its own tmux server whose item another daemon owns now, or
 * whose record is no longer live (adopted elsewhere, say, while this daemon was down) — `stale`:
 * never pasted into again; and `leave` every other daemon's sessions alone — even one whose lease
 * lapsed: taking it over is an adoption, not a start's business.
 */
export type ReclaimDecision = "keep" | "take" | "stale" | "leave";

export function reclaimDecision(lease: LeaseRow | undefined, self: string, runsHere: boolean, live = true): ReclaimDecision {
  if (lease?.owner === self) return live ? "keep" : "leave";
  if (!runsHere) return "leave";
  return lease === undefined && live ? "take" : "stale";
}

/**
 * The items a start looks at, each with whether its session record is live: the live records,
 * the items whose record closed as adopted by another daemon, and every item another daemon holds
 * the lease of — a daemon back from a kill -9 holds nothing, yet its tmux server may still run a
 * session of any of them.
 */
export function reclaimCandidates(
  live: readonly string[],
  adopted: readonly string[],
  leases: readonly Pick<LeaseRow, "item" | "owner">[],
  self: string,
): { readonly item: string; readonly live: boolean }[] {
  const liveSet = new Set(live);
  const items = new Set([...live, ...adopted, ...leases.filter((lease) => lease.owner !== self).map((lease) => lease.item)]);
  return [...items].sort().map((item) => ({ item, live: liveSet.has(item) }));
}

/** The items held before a beat that the beat did not renew: their leases are gone. */
export function lostAfterBeat(held: Iterable<string>, renewed: readonly string[]): string[] {
  const kept = new Set(renewed);
  return [...held].filter((item) => !kept.has(item)).sort();
}

/**
 * The leases an idle daemon gives up: items with no live session that it has not acted on for a
 * lease's length (a start just taken keeps its lease while its claim is being written).
 */
export function releasable(lastUsed: ReadonlyMap<string, number>, live: ReadonlySet<string>, nowMs: number, leaseMs: number): string[] {
  return [...lastUsed]
    .filter(([item, at]) => !live.has(item) && nowMs - at >= leaseMs)
    .map(([item]) => item)
    .sort();
}
