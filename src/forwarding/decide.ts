import type { DaemonRow, LeaseRow } from "../state/postgres/leases.js";
import type { InboxRow } from "../state/postgres/inbox.js";

/**
 * The forwarding decisions of daemons that share one database (docs/scale.md, "Many daemons, one
 * database"), as plain functions over the rows and the database's clock: the key an event is
 * recorded under, who runs a row of the inbox, and where a CLI command goes.
 */

/** How often a row may be readdressed before it is given up (owners that keep handing it on). */
export const MAX_HOPS = 8;

/** The inbox key of an inbound event: its delivery id, so a delivery that reaches several daemons (or one twice) is recorded once. */
export function eventKey(deliveryId: string): string {
  return `event:${deliveryId}`;
}

/** What the database says of the fleet at one moment: every daemon, every lease, its clock. */
export interface FleetView {
  readonly daemons: ReadonlyMap<string, DaemonRow>;
  readonly leases: ReadonlyMap<string, LeaseRow>;
  readonly now: Date;
  /** state.leaseSeconds, in ms. */
  readonly leaseMs: number;
  /** state.adoptGraceSeconds, in ms: a lapsed lease is still its owner's this long (leaseDecision's grace). */
  readonly graceMs: number;
}

export function fleetView(
  rows: { readonly daemons: readonly DaemonRow[]; readonly leases: readonly LeaseRow[]; readonly now: Date },
  leaseMs: number,
  graceMs = 0,
): FleetView {
  return {
    graceMs,
    daemons: new Map(rows.daemons.map((row) => [row.name, row])),
    leases: new Map(rows.leases.map((row) => [row.item, row])),
    now: rows.now,
    leaseMs,
  };
}

/** Whether a daemon beats: started, not stopped, and its last heartbeat within a lease's length. */
export function daemonLive(daemon: DaemonRow | undefined, now: Date, leaseMs: number): boolean {
  return daemon !== undefined && daemon.stoppedAt === null && now.getTime() - daemon.heartbeatAt.getTime() <= leaseMs;
}

/** The owner of an item's lease while no other daemon may take it (until `graceMs` past its expiry), if one holds it now. */
export function liveOwner(lease: LeaseRow | undefined, now: Date, graceMs = 0): string | undefined {
  return lease !== undefined && lease.expiresAt.getTime() + graceMs > now.getTime() ? lease.owner : undefined;
}

/**
 * What `self` does with a pending row of the inbox: `run` one addressed to it; `wait` while its
 * addressee may still run it (it holds the item's lease, or beats); otherwise readdress it — to
 * the item's live owner, or to `self` when nobody holds the item (the next owner: its run takes
 * the lease). A row handed on too often is `give-up`.
 */
export type InboxTurn =
  { readonly kind: "run" } | { readonly kind: "wait" } | { readonly kind: "readdress"; readonly to: string } | { readonly kind: "give-up" };

export function inboxTurn(row: Pick<InboxRow, "addressee" | "item" | "hops">, self: string, fleet: FleetView): InboxTurn {
  if (row.addressee === self) return { kind: "run" };
  const owner = liveOwner(fleet.leases.get(row.item), fleet.now, fleet.graceMs);
  if (owner === row.addressee) return { kind: "wait" };
  if (daemonLive(fleet.daemons.get(row.addressee), fleet.now, fleet.leaseMs)) return { kind: "wait" };
  if (row.hops >= MAX_HOPS) return { kind: "give-up" };
  if (owner !== undefined && owner !== self) {
    // The owner must beat too, or the row would move to a daemon that is gone as well.
    return daemonLive(fleet.daemons.get(owner), fleet.now, fleet.leaseMs) ? { kind: "readdress", to: owner } : { kind: "wait" };
  }
  return { kind: "readdress", to: self };
}

/**
 * Where a CLI command on an item goes: `here` (the item's lease is free, lapsed, or this host's
 * daemon's — the command runs as it always has), or to the live daemon that owns it.
 */
export type CommandRoute = { readonly kind: "here" } | { readonly kind: "owner"; readonly owner: string; readonly host: string | undefined };

export function commandRoute(item: string, local: string, fleet: FleetView): CommandRoute {
  const owner = liveOwner(fleet.leases.get(item), fleet.now, fleet.graceMs);
  if (owner === undefined || owner === local) return { kind: "here" };
  return { kind: "owner", owner, host: fleet.daemons.get(owner)?.host };
}

/** An announcement of the inbox's channel (the trigger's id, addressee and done), or undefined for anything else. */
export interface InboxAnnouncement {
  readonly id: string;
  readonly addressee: string;
  readonly done: boolean;
}

export function inboxAnnouncement(payload: string | undefined): InboxAnnouncement | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload ?? "");
  } catch {
    // Not an announcement of ours (another program on the channel).
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const { id, addressee, done } = parsed as Record<string, unknown>;
  if ((typeof id !== "number" && typeof id !== "string") || typeof addressee !== "string" || typeof done !== "boolean") return undefined;
  return { id: String(id), addressee, done };
}
