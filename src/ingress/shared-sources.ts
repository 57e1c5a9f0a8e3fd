import { messageOf } from "../errors.js";
import type { EventSink } from "../events/index.js";

/**
 * One poller per source when several daemons share one database (docs/scale.md, "One poller per
 * source"): a source is read only by the process that holds its lock, so the requests a tracker
 * sees — GitHub's rate limit — do not grow with the number of daemons. The lock is held for as long
 * as the holder lives (on PostgreSQL, a session-level advisory lock on a connection of its own,
 * which the server frees with the connection); the others try it again each cycle and take the
 * source over when it is free. On files there is one daemon and no lock.
 */

/** The locks of the poll sources, as the poller needs them (state/postgres/source-locks.ts on PostgreSQL). */
export interface SourceClaims {
  /** This process's name (a daemon's `state.daemonName`), in events and status. */
  readonly name: string;
  /**
   * Whether this process holds the source's lock now: kept if it holds it (its connection checked),
   * taken if it is free, else not. Never waits for the lock.
   */
  claim(key: string): Promise<boolean>;
  /** Whether the lock is still held, as far as this process knows (a lost connection drops every lock). */
  holds(key: string): boolean;
  /** The name of the process holding it, when another does and its name can be told. */
  holderOf(key: string): Promise<string | undefined>;
  /** Lets every lock go (ends the connection holding them). */
  close(): Promise<void>;
}

/** Where a source is polled, for the poller's status file and `status`. */
export interface SourcePlace {
  /** Polled by this daemon. */
  readonly here: boolean;
  /** The daemon polling it: this one's name, or the holder's when it can be told. */
  readonly by?: string;
  /** When this daemon last saw it change hands. */
  readonly since: string;
}

/** What the poller does before reading a source when its locks are shared. */
export type SourceTurn =
  /** Read it; `taken`: it was not held here before this cycle, so its state must be read again from the store (another daemon may have moved its cursor). */
  { readonly read: true; readonly taken: boolean } | { readonly read: false };

/**
 * The sources' locks over the poller's cycles: which it holds, the events when one changes hands
 * (`poll.source_taken`, `poll.source_skipped`, once per change, never per cycle), and where each
 * is polled, for the status file.
 */
export class SharedSources {
  private readonly held = new Set<string>();
  private readonly places = new Map<string, SourcePlace>();

  constructor(
    private readonly claims: SourceClaims,
    private readonly events: EventSink,
    private readonly now: () => Date,
  ) {}

  /** Claims the source: read it (and whether it was just taken), or leave it to its holder. */
  async turn(key: string): Promise<SourceTurn> {
    let holds: boolean;
    try {
      holds = await this.claims.claim(key);
    } catch (error) {
      // The lock cannot be asked for (the database is unreachable): not read here this cycle.
      this.held.delete(key);
      this.events.emit("poll.provider_error", { poll_source: key, error: `cannot take the poll source's lock: ${messageOf(error)}` });
      return { read: false };
    }
    const before = this.places.get(key);
    if (holds) {
      const taken = !this.held.has(key);
      this.held.add(key);
      if (taken) {
        const from = before !== undefined && !before.here ? before.by : undefined;
        this.places.set(key, { here: true, by: this.claims.name, since: this.now().toISOString() });
        this.events.emit("poll.source_taken", { poll_source: key, daemon: this.claims.name, ...(from !== undefined ? { from } : {}) });
      }
      return { read: true, taken };
    }
    this.held.delete(key);
    if (before === undefined || before.here) {
      const holder = await this.holderOf(key);
      this.places.set(key, { here: false, ...(holder !== undefined ? { by: holder } : {}), since: this.now().toISOString() });
      this.events.emit("poll.source_skipped", { poll_source: key, daemon: this.claims.name, ...(holder !== undefined ? { holder } : {}) });
    }
    return { read: false };
  }

  /** Takes the source for not yet read here: the next turn that holds it reads its state again. */
  forget(key: string): void {
    this.held.delete(key);
  }

  /** The sources this process holds now. */
  heldKeys(): string[] {
    return [...this.held].filter((key) => this.claims.holds(key));
  }

  /** Where each source seen so far is polled. */
  placesNow(): Record<string, SourcePlace> {
    return Object.fromEntries(this.places);
  }

  close(): Promise<void> {
    this.held.clear();
    return this.claims.close();
  }

  private async holderOf(key: string): Promise<string | undefined> {
    try {
      return await this.claims.holderOf(key);
    } catch {
      // Who holds it is for the operator's eyes only: unknown, the skip stands as it is.
      return undefined;
    }
  }
}
