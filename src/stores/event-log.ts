import { messageOf } from "../errors.js";
import { redactKnownSecrets } from "../secrets.js";
import { EVENT_LEVELS, levelRank } from "../events/catalog.js";
import type { FollowOptions } from "../events/follow.js";
import { globToRegExp } from "../events/glob.js";
import { eventMatcher } from "../events/reader.js";
import type { EventFilter, EventRecord } from "../events/reader.js";
import { RECORDED_BY } from "../events/table.js";
import type { SharedEventLog } from "../events/table.js";
import type { ReadLatestResult } from "../events/tail.js";
import type { PostgresDatabase } from "../state/postgres/database.js";
import { followEventRows } from "../state/postgres/event-follow.js";
import { PostgresEventTable } from "../state/postgres/event-table.js";
import type { EventRow, EventRowFilter } from "../state/postgres/event-table.js";

/**
 * The event log on the state's database: the events/ reader's filters said in SQL (the table
 * answers them with its indexes), each answer checked again by the file readers' own predicate,
 * and every record given the name of the process that wrote it (`recorded_by`).
 */

/** The filter as the table's query says it: the same conditions eventMatcher checks. */
export function rowFilterOf(filter: EventFilter): EventRowFilter {
  const least = filter.minLevel === undefined ? undefined : levelRank(filter.minLevel);
  return {
    ...(filter.types !== undefined && filter.types.length > 0 ? { eventPatterns: filter.types.map((glob) => globToRegExp(glob).source) } : {}),
    ...(filter.workItem !== undefined ? { item: filter.workItem.toLowerCase() } : {}),
    ...(filter.source !== undefined ? { source: filter.source } : {}),
    // An unknown level ranks below every known one, so any minimum leaves it out (as eventMatcher does).
    ...(least !== undefined ? { levels: EVENT_LEVELS.filter((level) => levelRank(level) >= least) } : {}),
    ...(filter.since !== undefined ? { since: filter.since } : {}),
  };
}

export { RECORDED_BY };

/** The row as an event record: the line its writer recorded, and the name of the process that wrote it. */
export function recordOf(row: EventRow): EventRecord {
  const { ts, source, event, level, pid, ...fields } = row.body;
  return { ts, source, event, level, ...(pid !== undefined ? { pid } : {}), [RECORDED_BY]: row.host, ...fields } as unknown as EventRecord;
}

export interface TableEventLogOptions {
  readonly database: PostgresDatabase;
  readonly host: string;
  /** Told once, on the first write that fails (default: a line on stderr). */
  readonly onWriteError?: (message: string) => void;
}

export function tableEventLog(options: TableEventLogOptions): SharedEventLog {
  let warned = false;
  const table = new PostgresEventTable({
    database: options.database,
    host: options.host,
    onWriteError: (error) => {
      if (warned) return;
      warned = true;
      const message = `cannot write the event log to the state database: ${redactKnownSecrets(messageOf(error))}; some events were not recorded`;
      (options.onWriteError ?? ((text: string) => process.stderr.write(`warning: ${text}\n`)))(message);
    },
  });
  return {
    where: "the state database's event table",
    writer: options.host,
    append: (lines) => table.append(lines),
    flush: () => table.flush(),
    async read(filter, limit) {
      const matches = eventMatcher(filter);
      const { rows, matched } = await table.latest(rowFilterOf(filter), limit);
      return { events: rows.map(recordOf).filter(matches).reverse(), matched };
    },
    async readLatest(filter, limit): Promise<ReadLatestResult> {
      const matches = eventMatcher(filter);
      const { rows, matched } = await table.latest(rowFilterOf(filter), limit);
      const events = rows.map(recordOf).filter(matches);
      return { events, malformed: 0, scannedBytes: 0, reachedStart: matched <= rows.length, missing: false };
    },
    async follow(filter, onEvent, signal, followOptions: FollowOptions = {}) {
      const matches = eventMatcher(filter);
      await followEventRows(
        table,
        rowFilterOf(filter),
        (row) => {
          const record = recordOf(row);
          if (matches(record)) onEvent(record);
        },
        signal,
        {
          backlog: followOptions.backlog ?? 0,
          ...(followOptions.onCaughtUp !== undefined ? { onCaughtUp: followOptions.onCaughtUp } : {}),
          onLost: (error) => followOptions.onNotice?.({ kind: "unreadable", message: redactKnownSecrets(messageOf(error)) }),
        },
      );
    },
  };
}
