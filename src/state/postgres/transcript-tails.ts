import type { SqlClient } from "./leases.js";

/**
 * A capped, redacted tail of each session's transcript, per work item (docs/scale.md, "The
 * transcript tail"): what the daemon that adopts an item after its owner was lost hands the new
 * agent. A table of its own, not a record kind: a tail changes every few seconds and is read only
 * at an adoption, so no process mirrors it and no change is announced. The writer caps and redacts
 * it before it comes here.
 */

// The table's name spelled out (TABLE_PREFIX is migrations.ts's, which lists this migration).
export const TRANSCRIPT_TAILS_TABLE = "the_loop_transcript_tails";

/** Migration 6 (migrations.ts lists it in order). */
export const TRANSCRIPT_TAILS_MIGRATION: { readonly version: number; readonly name: string; readonly sql: string } = {
  version: 6,
  name: "a capped tail of each session's transcript",
  sql: `
    CREATE TABLE ${TRANSCRIPT_TAILS_TABLE} (
      item text PRIMARY KEY,
      daemon text NOT NULL,
      tmux_target text NOT NULL,
      tail text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};

export interface TranscriptTail {
  readonly item: string;
  /** The daemon whose session it was read from, and the session's tmux target there. */
  readonly daemon: string;
  readonly tmuxTarget: string;
  readonly tail: string;
  readonly updatedAt: Date;
}

interface RawTail {
  item: string;
  daemon: string;
  tmux_target: string;
  tail: string;
  updated_at: Date;
}

export class PostgresTranscriptTails {
  constructor(private readonly pool: SqlClient) {}

  /** Keeps `tail` as the item's, replacing the one before. */
  async write(item: string, daemon: string, tmuxTarget: string, tail: string): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${TRANSCRIPT_TAILS_TABLE} (item, daemon, tmux_target, tail) VALUES ($1, $2, $3, $4)
       ON CONFLICT (item) DO UPDATE SET daemon = EXCLUDED.daemon, tmux_target = EXCLUDED.tmux_target, tail = EXCLUDED.tail, updated_at = now()`,
      [item, daemon, tmuxTarget, tail],
    );
  }

  /** The item's tail, if a session of it ever had one. */
  async read(item: string): Promise<TranscriptTail | undefined> {
    const { rows } = await this.pool.query<RawTail>(`SELECT * FROM ${TRANSCRIPT_TAILS_TABLE} WHERE item = $1`, [item]);
    const row = rows[0];
    return row === undefined ? undefined : { item: row.item, daemon: row.daemon, tmuxTarget: row.tmux_target, tail: row.tail, updatedAt: row.updated_at };
  }
}
