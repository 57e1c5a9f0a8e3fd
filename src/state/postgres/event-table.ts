import type { Client, Notification } from "pg";
import type { PostgresDatabase } from "./database.js";
import { EVENTS_CHANNEL, EVENTS_TABLE } from "./event-migration.js";

/**
 * The event log as a table (state.store: postgres). Each event is one row holding the line the
 * event log's sink wrote (already scrubbed and bounded there: this module never sees an unredacted
 * field), the name of the process that wrote it, and the envelope's keys as columns for the
 * readers' filters. A statement that inserts rows announces the newest id on EVENTS_CHANNEL: the
 * announcement carries an id, never an event, so it stays far below NOTIFY's 8000-byte payload
 * limit, and a follower reads the rows after the id it holds.
 *
 * Appends are queued and written in one INSERT per turn of the event loop (and at once when the
 * queue reaches APPEND_BATCH), so recording an event costs its caller an array push; `flush()`
 * resolves once every event appended before the call is in the table (or failed to be).
 */

/** The rows a query wants: every condition given must hold (the event log's filter, as SQL can say it). */
export interface EventRowFilter {
  /** POSIX regular expressions over the event type; any may match. */
  readonly eventPatterns?: readonly string[];
  /** A work item, in lower case: one of the row's items. */
  readonly item?: string;
  readonly source?: string;
  /** The levels wanted. */
  readonly levels?: readonly string[];
  readonly since?: Date;
  /** Only rows with an id above this one. */
  readonly afterId?: bigint;
  /** Only rows with an id below this one. */
  readonly beforeId?: bigint;
}

export interface EventRow {
  readonly id: bigint;
  readonly host: string;
  /** The event as its writer recorded it. */
  readonly body: Record<string, unknown>;
}

/** Rows per INSERT: a burst beyond it goes out in several. */
const APPEND_BATCH = 500;

interface RawRow {
  readonly id: string;
  readonly host: string;
  readonly body: Record<string, unknown>;
}

function whereOf(filter: EventRowFilter, values: unknown[]): string {
  const conditions: string[] = [];
  const bind = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  if (filter.eventPatterns !== undefined && filter.eventPatterns.length > 0) conditions.push(`event ~ ANY(${bind(filter.eventPatterns)}::text[])`);
  if (filter.item !== undefined) conditions.push(`items @> ARRAY[${bind(filter.item)}::text]`);
  if (filter.source !== undefined) conditions.push(`source = ${bind(filter.source)}`);
  if (filter.levels !== undefined) conditions.push(`level = ANY(${bind(filter.levels)}::text[])`);
  if (filter.since !== undefined) conditions.push(`ts >= ${bind(filter.since)}`);
  if (filter.afterId !== undefined) conditions.push(`id > ${bind(filter.afterId.toString())}::bigint`);
  if (filter.beforeId !== undefined) conditions.push(`id < ${bind(filter.beforeId.toString())}::bigint`);
  return conditions.length === 0 ? "" : `WHERE ${conditions.join(" AND ")}`;
}

const toRow = (raw: RawRow): EventRow => ({ id: BigInt(raw.id), host: raw.host, body: raw.body });

export interface PostgresEventTableOptions {
  readonly database: PostgresDatabase;
  /** Who writes: the daemon's name (its host by default), `cli` for a command. */
  readonly host: string;
  /** Told of a failed write (the rows of that INSERT are lost; later appends are tried again). */
  readonly onWriteError?: (error: unknown) => void;
}

export class PostgresEventTable {
  private queue: string[] = [];
  private scheduled = false;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly options: PostgresEventTableOptions) {}

  /** Queues whole event lines (JSON objects, a trailing newline allowed); never throws. */
  append(lines: readonly string[]): void {
    for (const line of lines) this.queue.push(line);
    if (this.queue.length >= APPEND_BATCH) this.writeQueued();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.writeQueued());
    }
  }

  /** Resolves once every line appended before the call was written (or its write failed and was reported). */
  async flush(): Promise<void> {
    this.writeQueued();
    await this.writing;
  }

  /** The newest matching rows, newest first, and how many rows match in all. */
  async latest(filter: EventRowFilter, limit: number): Promise<{ readonly rows: EventRow[]; readonly matched: number }> {
    const values: unknown[] = [];
    const where = whereOf(filter, values);
    const limited = limit > 0 ? `LIMIT ${Math.floor(limit)}` : "";
    const [page, count] = await Promise.all([
      this.options.database.pool.query<RawRow>(`SELECT id::text AS id, host, body FROM ${EVENTS_TABLE} ${where} ORDER BY id DESC ${limited}`, values),
      this.options.database.pool.query<{ count: string }>(`SELECT count(*)::text AS count FROM ${EVENTS_TABLE} ${where}`, values),
    ]);
    return { rows: page.rows.map(toRow), matched: Number(count.rows[0]?.count ?? 0) };
  }

  /** The matching rows after `filter.afterId`, oldest first, at most `limit`. */
  async after(filter: EventRowFilter, limit: number): Promise<EventRow[]> {
    const values: unknown[] = [];
    const { rows } = await this.options.database.pool.query<RawRow>(
      `SELECT id::text AS id, host, body FROM ${EVENTS_TABLE} ${whereOf(filter, values)} ORDER BY id ASC LIMIT ${Math.max(1, Math.floor(limit))}`,
      values,
    );
    return rows.map(toRow);
  }

  /** The newest id in the table (0 when it is empty). */
  async newestId(): Promise<bigint> {
    const { rows } = await this.options.database.pool.query<{ id: string | null }>(`SELECT max(id)::text AS id FROM ${EVENTS_TABLE}`);
    return BigInt(rows[0]?.id ?? "0");
  }

  /** Rows in the table. */
  async count(): Promise<number> {
    const { rows } = await this.options.database.pool.query<{ count: string }>(`SELECT count(*)::text AS count FROM ${EVENTS_TABLE}`);
    return Number(rows[0]?.count ?? 0);
  }

  /**
   * The rows after `cursor` (and the ids in `gaps`: ids below the cursor not seen yet), oldest
   * first, at most `limit`: every row's id, and its body only when it matches `filter`.
   */
  async scan(cursor: bigint, gaps: readonly bigint[], filter: EventRowFilter, limit: number): Promise<{ id: bigint; row?: EventRow }[]> {
    const values: unknown[] = [cursor.toString(), gaps.map(String)];
    const where = whereOf(filter, values);
    const matches = where === "" ? "true" : where.slice("WHERE ".length);
    const { rows } = await this.options.database.pool.query<RawRow & { matches: boolean }>(
      `SELECT id::text AS id, host, body, (${matches}) AS matches FROM ${EVENTS_TABLE}
       WHERE id > $1::bigint OR id = ANY($2::bigint[]) ORDER BY id ASC LIMIT ${Math.max(1, Math.floor(limit))}`,
      values,
    );
    return rows.map((raw) => (raw.matches ? { id: BigInt(raw.id), row: toRow(raw) } : { id: BigInt(raw.id) }));
  }

  /**
   * Listens on the channel on a connection of its own; `onAppended` is called with each announced
   * id, and with undefined when a lost connection is back (a row may have gone unannounced
   * meanwhile). Resolves once listening; the answer stops it.
   */
  async listen(onAppended: (newest: bigint | undefined) => void, onLost: (error: unknown) => void): Promise<() => Promise<void>> {
    let client: Client | undefined;
    let stopped = false;
    let retry: NodeJS.Timeout | undefined;
    const connect = async (): Promise<void> => {
      const next = this.options.database.client("events");
      next.on("notification", (message: Notification) => {
        if (message.channel !== EVENTS_CHANNEL) return;
        const text = message.payload ?? "";
        if (/^\d+$/.test(text)) onAppended(BigInt(text));
      });
      const lost = (error: unknown): void => {
        if (client !== next || stopped) return;
        client = undefined;
        onLost(error);
        // Ending a connection that is already broken: nothing is left to end.
        next.end().catch(() => undefined);
        retry = setTimeout(reconnect, 1_000);
      };
      next.on("error", lost);
      next.on("end", () => lost(new Error("the listening connection ended")));
      await next.connect();
      try {
        await next.query(`LISTEN ${EVENTS_CHANNEL}`);
      } catch (error) {
        // Ending a connection that failed while it was set up: its error is the one thrown.
        await next.end().catch(() => undefined);
        throw error;
      }
      client = next;
    };
    const reconnect = (): void => {
      if (stopped) return;
      connect().then(
        () => onAppended(undefined),
        (error: unknown) => {
          onLost(error);
          retry = setTimeout(reconnect, 1_000);
        },
      );
    };
    await connect();
    return async () => {
      stopped = true;
      clearTimeout(retry);
      const held = client;
      client = undefined;
      // Ending the listener at a stop: an error on a connection being given up says nothing.
      await held?.end().catch(() => undefined);
    };
  }

  /** Writes every queued line (one INSERT per APPEND_BATCH), after the writes already under way. */
  private writeQueued(): void {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const lines = this.queue;
    this.queue = [];
    this.writing = this.writing.then(async () => {
      for (let start = 0; start < lines.length; start += APPEND_BATCH) {
        try {
          await this.insert(lines.slice(start, start + APPEND_BATCH));
        } catch (error) {
          this.options.onWriteError?.(error);
        }
      }
    });
  }

  /**
   * Copies lines of a file log, each with its key (the same line copied again has the same key):
   * a line whose key the table holds is not copied again. Answers how many were copied.
   */
  async importLines(lines: readonly { readonly key: string; readonly line: string }[]): Promise<number> {
    if (lines.length === 0) return 0;
    const { rowCount } = await this.options.database.pool.query(`${INSERT_SELECT.replace("$KEY", "k")} ON CONFLICT (imported) DO NOTHING`, [
      this.options.host,
      lines.map((entry) => entry.line),
      lines.map((entry) => entry.key),
    ]);
    return rowCount ?? 0;
  }

  /** How many of these import keys the table holds. */
  async countImported(keys: readonly string[]): Promise<number> {
    const { rows } = await this.options.database.pool.query<{ count: string }>(
      `SELECT count(*)::text AS count FROM ${EVENTS_TABLE} WHERE imported = ANY($1::text[])`,
      [keys],
    );
    return Number(rows[0]?.count ?? 0);
  }

  private async insert(lines: readonly string[]): Promise<void> {
    await insertEventLines(this.options.database.pool, this.options.host, lines);
  }
}

/** Writes event lines (each as the event log's sink makes it) as rows written by `writer`, in one statement. */
export async function insertEventLines(
  queryable: { query(text: string, values: unknown[]): Promise<unknown> },
  writer: string,
  lines: readonly string[],
): Promise<void> {
  await queryable.query(INSERT_SELECT.replace("$KEY", "NULL::text"), [writer, lines, []]);
}

/**
 * One INSERT of many lines, in their order: the envelope's keys as columns, the work items the
 * event names in lower case, the line as its body. $1 is the writer's name, $2 the lines, $3 their
 * import keys (`$KEY` is replaced by the key's expression).
 */
const INSERT_SELECT = `INSERT INTO ${EVENTS_TABLE} (ts, host, source, event, level, items, body, imported)
       SELECT (j->>'ts')::timestamptz, $1, j->>'source', j->>'event', j->>'level',
              ARRAY(SELECT lower(x) FROM (
                SELECT j->>'work_item' AS x WHERE json_typeof(j->'work_item') = 'string'
                UNION ALL
                SELECT e FROM json_array_elements_text(CASE WHEN json_typeof(j->'work_items') = 'array' THEN j->'work_items' ELSE '[]'::json END) AS e
              ) named WHERE x IS NOT NULL),
              j, $KEY
       FROM (SELECT line::json AS j, k, n FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS given(line, k, n)) parsed
       ORDER BY n`;
