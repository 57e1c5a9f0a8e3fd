import { EXIT_FAILURE, ExitError, messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import type { DaemonCapacity, PostgresLeases } from "../state/postgres/leases.js";
import { leaseDecision, lostAfterBeat, nameDecision, reclaimCandidates, reclaimDecision, releasable } from "./decide.js";
import type { FleetBounds, LeaseDecision } from "./decide.js";

/**
 * Which daemon owns each work item (docs/scale.md, "Many daemons, one database"). On the file
 * store one daemon serves the state root and owns everything: its ownership is a no-op. On a
 * shared database a daemon owns an item while it holds the item's lease, taken in one
 * transaction under the lease's advisory lock and renewed by its heartbeat; only the owner
 * spawns, delivers and closes.
 */
export interface Ownership {
  /** This daemon's name (the host's name on files). */
  readonly name: string;
  /** Whether other daemons may share the state (a database). */
  readonly shared: boolean;
  /**
   * Takes or renews the lease of every item for this daemon before it acts on them; throws an
   * OwnedElsewhereError for the first one another live daemon owns (nothing is acted on then).
   * Answers the leases it took from another daemon, lapsed past the grace: that daemon is lost,
   * and what it ran is to be adopted before anything else is done with the item.
   */
  acquire(items: readonly string[]): Promise<readonly TakenLease[]>;
  /** Whether this daemon holds the item's lease, as of its last take or beat (always, on files). */
  holds(item: string): boolean;
  /** Gives the item's lease up now, so another daemon may act on it at once (a no-op on files). */
  release?(item: string): Promise<void>;
}

/** An item's lease this daemon took from the daemon `from`, which let it lapse past the grace. */
export interface TakenLease {
  readonly item: string;
  readonly from: string;
}

/** The file store's: one daemon, which owns every item. */
export function soleOwner(name: string): Ownership {
  return { name, shared: false, acquire: async () => [], holds: () => true };
}

/** Work for an item another live daemon owns: it is that daemon's to do. */
export class OwnedElsewhereError extends ExitError {
  override readonly name: string = "OwnedElsewhereError";
  constructor(
    readonly item: string,
    readonly owner: string,
    readonly host: string | undefined,
    expiresAt: Date,
  ) {
    super(
      `${item} is owned by the daemon "${owner}"${host !== undefined ? ` on ${host}` : ""} (its lease runs until ${expiresAt.toISOString()}): ` +
        `its sessions run there, so give the command on that host${host !== undefined ? ` (ssh ${host} the-loop …)` : ""}; ` +
        "another daemon takes the item only once that lease lapses",
      EXIT_FAILURE,
      "conflict",
    );
  }
}

/** Who this start is, as the daemons table keeps it. */
export interface DaemonIdentity {
  readonly name: string;
  readonly host: string;
  readonly pid: number;
  /** A fresh id for this start. */
  readonly instance: string;
  /** The tmux socket its sessions run on (routing.tmux.socketName), for `sessions attach` elsewhere. */
  readonly tmuxSocket: string | null;
}

export interface LeasedOwnershipOptions {
  readonly leases: PostgresLeases;
  readonly self: DaemonIdentity;
  readonly bounds: FleetBounds;
  readonly events: EventSink;
  readonly warn: (message: string) => void;
  /** The items with a live session record in the shared state (any daemon's). */
  readonly liveItems: () => readonly string[];
  /** The items whose session record closed because another daemon adopted them. */
  readonly adoptedItems?: () => readonly string[];
  /** Whether the item's session runs on this daemon's own tmux server. */
  readonly runsHere: (item: string) => Promise<boolean>;
  /** Closes this daemon's own tmux session of the item (another daemon owns it now); whether one was there. */
  readonly closeStale: (item: string) => Promise<boolean>;
  /** This daemon's capacity as it runs now (routing.limits.perDaemon, which a reload may move), written at the join and every beat. */
  readonly capacity?: () => DaemonCapacity;
  readonly nowMs?: () => number;
}

/** A daemon's ownership on a shared database: its name, its leases, its heartbeat. */
export class LeasedOwnership implements Ownership {
  readonly shared = true;
  /** Each held item, with when this daemon last acted on it. */
  private readonly held = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> = Promise.resolve();
  private failing = false;

  private constructor(private readonly options: LeasedOwnershipOptions) {}

  get name(): string {
    return this.options.self.name;
  }

  /**
   * Takes the daemon's name (refusing the start while a live daemon has it), then goes over the
   * items it may still run a session of (reclaimCandidates, reclaimDecision) — closing its own stale
   * tmux sessions before anything is resumed or dispatched — and starts the heartbeat.
   */
  static async join(options: LeasedOwnershipOptions): Promise<LeasedOwnership> {
    const { self, bounds } = options;
    const capacity = options.capacity?.();
    const refusal = await options.leases.claimName(self.name, ({ row, now }) => {
      const decided = nameDecision(row, self.name, now, bounds.leaseMs);
      const write = { name: self.name, host: self.host, pid: self.pid, instance: self.instance, tmuxSocket: self.tmuxSocket };
      return "refuse" in decided ? { answer: decided.refuse } : { write: capacity !== undefined ? { ...write, capacity } : write, answer: undefined };
    });
    if (refusal !== undefined) throw new ExitError(refusal, EXIT_FAILURE, "conflict");
    const ownership = new LeasedOwnership(options);
    await ownership.reclaim();
    ownership.timer = setInterval(() => void ownership.beat(), bounds.heartbeatMs);
    ownership.timer.unref();
    return ownership;
  }

  holds(item: string): boolean {
    return this.held.has(item);
  }

  async release(item: string): Promise<void> {
    if (!this.held.delete(item)) return;
    await this.options.leases.release(item, this.name);
    this.options.events.emit("lease.released", { work_item: item, daemon: this.name });
  }

  async acquire(items: readonly string[]): Promise<readonly TakenLease[]> {
    const taken: TakenLease[] = [];
    for (const item of [...new Set(items)]) {
      const decided = await this.options.leases.decideLease<LeaseDecision>(item, this.options.bounds.leaseMs, ({ row, now }) => {
        const decision = leaseDecision(row, this.name, now, this.options.bounds.graceMs);
        return decision.kind === "elsewhere" ? { answer: decision } : { write: { owner: this.name }, answer: decision };
      });
      if (decided.kind === "elsewhere") {
        this.held.delete(item);
        const owner = await this.options.leases.daemon(decided.owner);
        throw new OwnedElsewhereError(item, decided.owner, owner?.host, decided.expiresAt);
      }
      if (decided.kind === "taken") {
        this.options.events.emit("lease.taken", { work_item: item, daemon: this.name, ...(decided.from !== undefined ? { from: decided.from } : {}) });
        if (decided.from !== undefined && decided.from !== this.name) taken.push({ item, from: decided.from });
      }
      this.held.set(item, this.now());
    }
    return taken;
  }

  /** One heartbeat now (the timer's, and a test's). */
  beat(): Promise<void> {
    return (this.beating = this.beating.then(() => this.beatOnce()));
  }

  /** Stops beating and marks the name stopped; the leases stay until they lapse, since the sessions run on. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.beating;
    try {
      await this.options.leases.stopped(this.name, this.options.self.instance);
    } catch (error) {
      this.options.warn(
        `could not mark the daemon "${this.name}" stopped in the database (its name frees once its heartbeat is ${this.options.bounds.leaseMs / 1000} s old): ${messageOf(error)}`,
      );
    }
  }

  private now(): number {
    return (this.options.nowMs ?? Date.now)();
  }

  private async reclaim(): Promise<void> {
    const { leases: rows } = await this.options.leases.fleet();
    const byItem = new Map(rows.map((row) => [row.item, row]));
    const candidates = reclaimCandidates(this.options.liveItems(), this.options.adoptedItems?.() ?? [], rows, this.name);
    for (const { item, live } of candidates) {
      const lease = byItem.get(item);
      const decision = reclaimDecision(lease, this.name, lease?.owner === this.name ? false : await this.options.runsHere(item), live);
      if (decision === "keep" || decision === "take") {
        try {
          await this.acquire([item]);
        } catch (error) {
          // Taken by another daemon between the listing and the take: its session here is stale.
          if (!(error instanceof OwnedElsewhereError)) throw error;
          await this.lose(item, error.owner);
        }
      } else if (decision === "stale") await this.lose(item, lease?.owner);
    }
  }

  private async beatOnce(): Promise<void> {
    const { leases, self, bounds } = this.options;
    // Only what was held before the beat can be missing from it: a lease taken meanwhile may have come after its renewal.
    const startedAt = this.now();
    const before = [...this.held].filter(([, at]) => at < startedAt).map(([item]) => item);
    let renewed: { readonly named: boolean; readonly items: readonly string[] };
    try {
      renewed = await leases.beat(self.name, self.instance, bounds.leaseMs, this.options.capacity?.());
    } catch (error) {
      if (!this.failing)
        this.options.warn(
          `the heartbeat could not renew this daemon's leases: ${messageOf(error)}; they lapse ${bounds.leaseMs / 1000} s after the last beat that did`,
        );
      this.failing = true;
      return;
    }
    this.failing = false;
    if (!renewed.named) {
      this.options.warn(`another start took the daemon name "${self.name}" after this daemon missed its heartbeats: this daemon owns nothing now; stop it`);
    }
    for (const item of lostAfterBeat(before, renewed.items)) {
      const owner = await leases.decideLease(item, bounds.leaseMs, ({ row }) => ({ answer: row?.owner }));
      // Taken again by this daemon since (an acquire that ran beside the beat).
      if (owner === self.name) continue;
      await this.lose(item, owner);
    }
    const live = new Set(this.options.liveItems());
    for (const item of releasable(this.held, live, this.now(), bounds.leaseMs)) {
      this.held.delete(item);
      try {
        await leases.release(item, self.name);
        this.options.events.emit("lease.released", { work_item: item, daemon: self.name });
      } catch (error) {
        this.options.warn(`could not give up the lease of ${item}: ${messageOf(error)}; it lapses on its own`);
      }
    }
  }

  /** The lease is gone: this daemon's own tmux session of the item is closed, never pasted into again. */
  private async lose(item: string, owner: string | undefined): Promise<void> {
    this.held.delete(item);
    let closed = false;
    try {
      closed = await this.options.closeStale(item);
    } catch (error) {
      this.options.warn(`could not close this daemon's stale tmux session of ${item} (another daemon owns it now): ${messageOf(error)}`);
    }
    this.options.events.emit("lease.lost", { work_item: item, daemon: this.name, ...(owner !== undefined && owner !== this.name ? { owner } : {}), closed });
  }
}
