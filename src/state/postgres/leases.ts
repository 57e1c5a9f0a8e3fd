/**
 * The daemons that share one database, and which of them owns each work item (docs/scale.md,
 * "Many daemons, one database"). A daemon's row says who it is, where it runs (its host and tmux
 * socket) and when it last beat; a lease row says which daemon owns an item until when. The
 * decisions (who may take a name, a lease) are pure functions in src/fleet/; this module runs
 * them inside one transaction under the row's advisory lock and writes what they decided.
 */

// The tables' names spelled out (TABLE_PREFIX is migrations.ts's, which lists this migration).
export const DAEMONS_TABLE = "the_loop_daemons";
export const LEASES_TABLE = "the_loop_leases";

/** The queries this module sends: a pg pool or client. */
export interface SqlClient {
  query<R extends object = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<{ rows: R[] }>;
}

/** Migration 3 (migrations.ts lists it in order). */
export const LEASES_MIGRATION: { readonly version: number; readonly name: string; readonly sql: string } = {
  version: 3,
  name: "daemons and the leases of their work items",
  sql: `
    CREATE TABLE ${DAEMONS_TABLE} (
      name text PRIMARY KEY,
      host text NOT NULL,
      pid integer NOT NULL,
      -- A fresh id per start: a heartbeat of a start that lost its name changes nothing.
      instance text NOT NULL,
      tmux_socket text,
      started_at timestamptz NOT NULL DEFAULT now(),
      heartbeat_at timestamptz NOT NULL DEFAULT now(),
      stopped_at timestamptz
    );
    CREATE TABLE ${LEASES_TABLE} (
      item text PRIMARY KEY,
      owner text NOT NULL,
      taken_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX ${LEASES_TABLE}_owner ON ${LEASES_TABLE} (owner);
  `,
};

/**
 * Migration 8: each daemon's own capacity on its row, so `status` on any host shows every daemon's
 * figure rather than its own config's. NULL — a row no daemon has written since — is a capacity
 * not known: a daemon that ran before this migration, still beating, never writes it.
 */
export const DAEMON_CAPACITY_MIGRATION: { readonly version: number; readonly name: string; readonly sql: string } = {
  version: 8,
  name: "each daemon's own capacity on its row",
  sql: `
    -- {"perDaemon": n}, or {"perDaemon": null} for a daemon with no cap of its own.
    ALTER TABLE ${DAEMONS_TABLE} ADD COLUMN capacity jsonb;
  `,
};

/** The two-key advisory lock class of leases and daemon names (records use the one-key form, migrations class 0x7e100b). */
export const LEASE_LOCK_CLASS = 0x7e_10_0c;

/** What a daemon publishes of its own caps: routing.limits.perDaemon as it runs (null: none set). */
export interface DaemonCapacity {
  readonly perDaemon: number | null;
}

export interface DaemonRow {
  readonly name: string;
  readonly host: string;
  readonly pid: number;
  readonly instance: string;
  readonly tmuxSocket: string | null;
  readonly startedAt: Date;
  readonly heartbeatAt: Date;
  readonly stoppedAt: Date | null;
  /** Null: not known (a row a daemon from before migration 8 wrote, or one that does not read). */
  readonly capacity: DaemonCapacity | null;
}

/** What a start writes into its row: who it is, and its capacity (absent: written as not known). */
export type DaemonWrite = Omit<DaemonRow, "startedAt" | "heartbeatAt" | "stoppedAt" | "capacity"> & { readonly capacity?: DaemonCapacity };

export interface LeaseRow {
  readonly item: string;
  readonly owner: string;
  readonly takenAt: Date;
  readonly expiresAt: Date;
}

/** A pooled connection's client, released after use. */
export interface LeaseClient extends SqlClient {
  release(): void;
}

export interface LeasePool extends SqlClient {
  connect(): Promise<LeaseClient>;
}

interface RawDaemon {
  name: string;
  host: string;
  pid: number;
  instance: string;
  tmux_socket: string | null;
  started_at: Date;
  heartbeat_at: Date;
  stopped_at: Date | null;
  capacity?: unknown;
}

interface RawLease {
  item: string;
  owner: string;
  taken_at: Date;
  expires_at: Date;
}

/** The capacity column as read: a cap, no cap, or — NULL, or anything else — not known. */
export function capacityOf(raw: unknown): DaemonCapacity | null {
  if (typeof raw !== "object" || raw === null || !("perDaemon" in raw)) return null;
  const perDaemon = raw.perDaemon;
  if (perDaemon === null) return { perDaemon: null };
  return typeof perDaemon === "number" && Number.isInteger(perDaemon) && perDaemon > 0 ? { perDaemon } : null;
}

const capacityParam = (capacity: DaemonCapacity | undefined): string | null =>
  capacity === undefined ? null : JSON.stringify({ perDaemon: capacity.perDaemon });

const daemonOf = (row: RawDaemon): DaemonRow => ({
  name: row.name,
  host: row.host,
  pid: row.pid,
  instance: row.instance,
  tmuxSocket: row.tmux_socket,
  startedAt: row.started_at,
  heartbeatAt: row.heartbeat_at,
  stoppedAt: row.stopped_at,
  capacity: capacityOf(row.capacity),
});

const leaseOf = (row: RawLease): LeaseRow => ({ item: row.item, owner: row.owner, takenAt: row.taken_at, expiresAt: row.expires_at });

/** What a locked read hands the decision: the row as it stands, and the database's clock. */
export interface Locked<R> {
  readonly row: R | undefined;
  readonly now: Date;
}

/** What the decision answers: the row to write (undefined: write nothing), and the caller's answer. */
export interface Written<R, A> {
  readonly write?: R;
  readonly answer: A;
}

export class PostgresLeases {
  constructor(private readonly pool: LeasePool) {}

  /** Decides on the daemon row of `name` under its lock, in one transaction, and writes what was decided. */
  async claimName<A>(name: string, decide: (locked: Locked<DaemonRow>) => Written<DaemonWrite, A>): Promise<A> {
    return this.locked(`daemon:${name}`, async (client, now) => {
      const { rows } = await client.query<RawDaemon>(`SELECT * FROM ${DAEMONS_TABLE} WHERE name = $1`, [name]);
      const first = rows[0];
      const decided = decide({ row: first === undefined ? undefined : daemonOf(first), now });
      const write = decided.write;
      if (write !== undefined) {
        await client.query(
          `INSERT INTO ${DAEMONS_TABLE} (name, host, pid, instance, tmux_socket, capacity) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
           ON CONFLICT (name) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, instance = EXCLUDED.instance,
             tmux_socket = EXCLUDED.tmux_socket, capacity = EXCLUDED.capacity, started_at = now(), heartbeat_at = now(), stopped_at = NULL`,
          [write.name, write.host, write.pid, write.instance, write.tmuxSocket, capacityParam(write.capacity)],
        );
      }
      return decided.answer;
    });
  }

  /** Decides on the lease of `item` under its lock, in one transaction, and writes what was decided (its expiry `leaseMs` from the database's now). */
  async decideLease<A>(item: string, leaseMs: number, decide: (locked: Locked<LeaseRow>) => Written<{ readonly owner: string }, A>): Promise<A> {
    return this.locked(`lease:${item}`, async (client, now) => {
      const { rows } = await client.query<RawLease>(`SELECT * FROM ${LEASES_TABLE} WHERE item = $1`, [item]);
      const first = rows[0];
      const decided = decide({ row: first === undefined ? undefined : leaseOf(first), now });
      if (decided.write !== undefined) {
        await client.query(
          `INSERT INTO ${LEASES_TABLE} (item, owner, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
           ON CONFLICT (item) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at,
             taken_at = CASE WHEN ${LEASES_TABLE}.owner = EXCLUDED.owner THEN ${LEASES_TABLE}.taken_at ELSE now() END`,
          [item, decided.write.owner, leaseMs],
        );
      }
      return decided.answer;
    });
  }

  /**
   * One beat: the daemon's row (only while this start still holds the name) and every lease it
   * owns are pushed `leaseMs` on, and the row's capacity is the one given (a reload may have moved
   * it; absent: left as it is). Answers whether the name is still this start's, and the items
   * whose lease it still owns.
   */
  async beat(
    name: string,
    instance: string,
    leaseMs: number,
    capacity?: DaemonCapacity,
  ): Promise<{ readonly named: boolean; readonly items: readonly string[] }> {
    const named = await this.pool.query(
      `UPDATE ${DAEMONS_TABLE} SET heartbeat_at = now(), capacity = COALESCE($3::jsonb, capacity) WHERE name = $1 AND instance = $2 RETURNING name`,
      [name, instance, capacityParam(capacity)],
    );
    if (named.rows.length === 0) return { named: false, items: [] };
    const { rows } = await this.pool.query<{ item: string }>(
      `UPDATE ${LEASES_TABLE} SET expires_at = now() + $2 * interval '1 millisecond' WHERE owner = $1 RETURNING item`,
      [name, leaseMs],
    );
    return { named: true, items: rows.map((row) => row.item) };
  }

  /** Gives up the lease of `item`, if `owner` still holds it. */
  async release(item: string, owner: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${LEASES_TABLE} WHERE item = $1 AND owner = $2`, [item, owner]);
  }

  /** Marks a start's row stopped (its leases stay: its agents run on, and lapse with them unless it returns). */
  async stopped(name: string, instance: string): Promise<void> {
    await this.pool.query(`UPDATE ${DAEMONS_TABLE} SET stopped_at = now() WHERE name = $1 AND instance = $2`, [name, instance]);
  }

  /** Every daemon and every lease, with the database's clock. */
  async fleet(): Promise<{ readonly daemons: readonly DaemonRow[]; readonly leases: readonly LeaseRow[]; readonly now: Date }> {
    const [daemons, leases, now] = await Promise.all([
      this.pool.query<RawDaemon>(`SELECT * FROM ${DAEMONS_TABLE} ORDER BY name`),
      this.pool.query<RawLease>(`SELECT * FROM ${LEASES_TABLE} ORDER BY item`),
      this.pool.query<{ now: Date }>("SELECT now() AS now"),
    ]);
    return { daemons: daemons.rows.map(daemonOf), leases: leases.rows.map(leaseOf), now: now.rows[0]?.now ?? new Date() };
  }

  /** The row of the daemon called `name`, if one ever ran. */
  async daemon(name: string): Promise<DaemonRow | undefined> {
    const { rows } = await this.pool.query<RawDaemon>(`SELECT * FROM ${DAEMONS_TABLE} WHERE name = $1`, [name]);
    const first = rows[0];
    return first === undefined ? undefined : daemonOf(first);
  }

  private async locked<T>(key: string, work: (client: LeaseClient, now: Date) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      try {
        await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [LEASE_LOCK_CLASS, key]);
        const { rows } = await client.query<{ now: Date }>("SELECT now() AS now");
        const answer = await work(client, rows[0]?.now ?? new Date());
        await client.query("COMMIT");
        return answer;
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      }
    } finally {
      client.release();
    }
  }
}
