import type { EventRow, EventRowFilter, PostgresEventTable } from "./event-table.js";

/**
 * `tail -F` for the event table: the newest matching rows already there, then each new one as it
 * is committed, until the signal aborts. It waits on the table's announcements (LISTEN/NOTIFY),
 * never on a timer. Each announcement carries an id only; the rows are read after the follower's
 * cursor.
 *
 * Ids are taken when a row is inserted but become visible when its statement commits, so two
 * writers can commit out of order: a row with a smaller id can appear after a larger one was
 * read. An id skipped over is therefore remembered as a gap and read with the next scan, until it
 * turns up or GAP_WAIT_MS passes (an insert that failed leaves its ids unused for ever). Its
 * commit announces it, so the scan that finds it comes with that announcement.
 */

/** How long an id skipped over is looked for. */
export const GAP_WAIT_MS = 30_000;
/** Ids skipped over that are looked for at once; a larger jump (a failed batch) is let go past it. */
const MAX_GAPS = 2_000;
const SCAN_PAGE = 1_000;

export interface FollowRowsOptions {
  /** How many of the newest matching rows to deliver first (0: only new ones; Infinity: all). */
  readonly backlog: number;
  /** Called once the backlog is delivered. */
  readonly onCaughtUp?: () => void;
  /** Told when the listening connection is lost (it reconnects, and rows appended meanwhile are read then). */
  readonly onLost?: (error: unknown) => void;
  readonly now?: () => number;
}

export async function followEventRows(
  table: PostgresEventTable,
  filter: EventRowFilter,
  onRow: (row: EventRow) => void,
  signal: AbortSignal,
  options: FollowRowsOptions,
): Promise<void> {
  if (signal.aborted) return;
  const now = options.now ?? Date.now;
  let announced = 0;
  let wake: (() => void) | undefined;
  const nudge = (): void => {
    announced += 1;
    wake?.();
  };
  const onAbort = (): void => wake?.();
  signal.addEventListener("abort", onAbort);
  // LISTEN first, then the cursor: a row committed between the two is both announced and after it.
  const stop = await table.listen(nudge, (error) => options.onLost?.(error));
  try {
    let cursor = await table.newestId();
    if (options.backlog > 0) {
      const limit = options.backlog === Infinity ? 0 : options.backlog;
      const { rows } = await table.latest({ ...filter, beforeId: cursor + 1n }, limit);
      for (const row of rows.reverse()) onRow(row);
    }
    options.onCaughtUp?.();
    const gaps = new Map<bigint, number>();
    let seen = 0;
    while (!signal.aborted) {
      if (seen === announced) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      seen = announced;
      for (;;) {
        const found = await table.scan(cursor, [...gaps.keys()], filter, SCAN_PAGE);
        for (const { id, row } of found) {
          if (id > cursor) {
            const skipped = id - cursor - 1n;
            if (skipped > 0n && gaps.size + Number(skipped) <= MAX_GAPS) {
              for (let gap = cursor + 1n; gap < id; gap += 1n) gaps.set(gap, now());
            }
            cursor = id;
          } else {
            gaps.delete(id);
          }
          if (row !== undefined && !signal.aborted) onRow(row);
        }
        if (found.length < SCAN_PAGE) break;
      }
      const oldest = now() - GAP_WAIT_MS;
      for (const [gap, since] of gaps) if (since < oldest) gaps.delete(gap);
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    await stop();
  }
}
