import { PostgresLeases } from "../state/postgres/leases.js";
import type { DaemonCapacity, DaemonRow, LeaseRow, LeasePool } from "../state/postgres/leases.js";

/**
 * The operator's view of the daemons that share one database (docs/scale.md, "The operator's
 * view across hosts"): every daemon with its host, pid, last heartbeat and the leases it holds,
 * and where each work item's session runs — the daemon whose lease it is under, its host and tmux
 * socket. Plain functions over the rows `PostgresLeases.fleet()` reads and the database's clock.
 */

export interface DaemonView {
  readonly name: string;
  readonly host: string;
  readonly pid: number;
  readonly tmuxSocket: string | null;
  /** Whole seconds since its last heartbeat, by the database's clock. */
  readonly heartbeatAgeSeconds: number;
  readonly stopped: boolean;
  /** Running (not stopped) and silent for more than two heartbeats: it may have died. */
  readonly late: boolean;
  /** The leases it holds that have not lapsed. */
  readonly leases: number;
  /** Its own capacity as it last wrote it; null: not known (its row is from before daemons wrote it). */
  readonly capacity: DaemonCapacity | null;
}

/** Where an item's session runs: the daemon that owns it, that daemon's host and tmux socket. */
export interface Placement {
  readonly daemon: string;
  readonly host: string;
  readonly tmuxSocket: string | null;
}

export interface FleetRows {
  readonly daemons: readonly DaemonRow[];
  readonly leases: readonly LeaseRow[];
  readonly now: Date;
}

export interface FleetView {
  readonly daemons: readonly DaemonView[];
  /** The owner of `item`'s lease, lapsed or not (a lapsed one is still where its session runs until another daemon adopts it). */
  placementOf(item: string): Placement | undefined;
}

/** A daemon counts as late once two heartbeats passed without one. */
export function isLate(row: Pick<DaemonRow, "stoppedAt" | "heartbeatAt">, now: Date, heartbeatMs: number): boolean {
  return row.stoppedAt === null && now.getTime() - row.heartbeatAt.getTime() > 2 * heartbeatMs;
}

export function fleetView(rows: FleetRows, heartbeatMs: number): FleetView {
  const nowMs = rows.now.getTime();
  const held = new Map<string, number>();
  for (const lease of rows.leases) {
    if (lease.expiresAt.getTime() > nowMs) held.set(lease.owner, (held.get(lease.owner) ?? 0) + 1);
  }
  const byName = new Map(rows.daemons.map((row) => [row.name, row]));
  const owners = new Map(rows.leases.map((lease) => [lease.item, lease.owner]));
  return {
    daemons: rows.daemons.map((row) => ({
      name: row.name,
      host: row.host,
      pid: row.pid,
      tmuxSocket: row.tmuxSocket,
      heartbeatAgeSeconds: Math.max(0, Math.round((nowMs - row.heartbeatAt.getTime()) / 1000)),
      stopped: row.stoppedAt !== null,
      late: isLate(row, rows.now, heartbeatMs),
      leases: held.get(row.name) ?? 0,
      capacity: row.capacity,
    })),
    placementOf: (item) => {
      const owner = owners.get(item);
      if (owner === undefined) return undefined;
      const daemon = byName.get(owner);
      return { daemon: owner, host: daemon?.host ?? "?", tmuxSocket: daemon?.tmuxSocket ?? null };
    },
  };
}

/** What `status` says of a late daemon, and what to do about it. */
export function lateDaemonProblem(daemon: DaemonView, leaseSeconds: number): { readonly message: string; readonly fix: string } {
  const lapse =
    daemon.heartbeatAgeSeconds >= leaseSeconds
      ? `its leases have lapsed (state.leaseSeconds: ${leaseSeconds})`
      : `its leases lapse ${leaseSeconds - daemon.heartbeatAgeSeconds} s from now unless it beats (state.leaseSeconds: ${leaseSeconds})`;
  return {
    message: `the daemon "${daemon.name}" on ${daemon.host} (pid ${daemon.pid}) has not sent a heartbeat for ${daemon.heartbeatAgeSeconds} s: ${lapse}`,
    fix: `on ${daemon.host}: \`the-loop status\` and the daemon's log (logs/daemon.out under its state root); restart it with \`the-loop start\`, or stop it for good with \`the-loop stop\``,
  };
}

/** The status table's heartbeat cell: `3 s ago`, `stopped 40 s ago`, `42 s ago (late)`. */
export function heartbeatCell(daemon: DaemonView): string {
  const ago = `${daemon.heartbeatAgeSeconds} s ago`;
  if (daemon.stopped) return `stopped (last beat ${ago})`;
  return daemon.late ? `${ago} (late)` : ago;
}

/** A daemon as `status` lists it: its view, and the live sessions it runs (those whose item's lease it owns, lapsed or not). */
export interface DaemonLoad extends DaemonView {
  readonly liveSessions: number;
}

/**
 * Each daemon's live sessions, counted from the session rows status already reads (`liveRefs`,
 * every host's on a shared database) by where `placementOf` says each runs; a session whose item
 * no daemon holds counts toward the fleet, not toward any daemon.
 */
export function daemonLoads(view: FleetView, liveRefs: readonly string[]): DaemonLoad[] {
  const running = new Map<string, number>();
  for (const ref of liveRefs) {
    const owner = view.placementOf(ref)?.daemon;
    if (owner !== undefined) running.set(owner, (running.get(owner) ?? 0) + 1);
  }
  return view.daemons.map((daemon) => ({ ...daemon, liveSessions: running.get(daemon.name) ?? 0 }));
}

/** A live count against its cap: `2 of 3`, or `2` with no cap set. */
export function liveOfCap(live: number, cap: number | undefined): string {
  return cap === undefined ? String(live) : `${live} of ${cap}`;
}

/** The status table's sessions cell of a daemon: against its own capacity (`2 of 3`), `2` with none set, or saying it is not known. */
export function daemonSessionsCell(daemon: Pick<DaemonLoad, "liveSessions" | "capacity">): string {
  if (daemon.capacity === null) return `${daemon.liveSessions} (capacity unknown)`;
  return liveOfCap(daemon.liveSessions, daemon.capacity.perDaemon ?? undefined);
}

/** The line under status's daemons table: every daemon's live sessions, against routing.limits.maxLiveSessions when set. */
export function fleetSessionsLine(live: number, maxLiveSessions: number | undefined): string {
  const cap = maxLiveSessions === undefined ? "" : " (routing.limits.maxLiveSessions)";
  return `live sessions across the fleet: ${liveOfCap(live, maxLiveSessions)}${cap}`;
}

/** The view of the database whose pool is given, read now (three queries). */
export async function readFleetView(pool: LeasePool, heartbeatMs: number): Promise<FleetView> {
  return fleetView(await new PostgresLeases(pool).fleet(), heartbeatMs);
}

/** The fleet's reader a dashboard is given: none on files (no pool), where one daemon runs every item. */
export function fleetReaderOf(pool: LeasePool | undefined, heartbeatSeconds: number): { fleet?: () => Promise<FleetView> } {
  return pool === undefined ? {} : { fleet: () => readFleetView(pool, heartbeatSeconds * 1000) };
}
