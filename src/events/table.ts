import type { FollowOptions } from "./follow.js";
import type { EventFilter, EventRecord } from "./reader.js";
import type { ReadLatestResult } from "./tail.js";

/**
 * The event log as a table of the state's database (state.store: postgres, docs/scale.md), which
 * every host on that database writes and reads. The event log's sink (log.ts) hands it the lines
 * it would have appended to the file — scrubbed and bounded by the same code — and the readers
 * (`events`, `why`, the dashboard, the notifier) ask it what they would have read from the file,
 * with the same filters. Each record read carries `recorded_by`, the name of the host (or daemon) that wrote it.
 */
/** The key a record read from the table names its writer by (the daemon's name, its host by default), after the envelope. */
export const RECORDED_BY = "recorded_by";

export interface SharedEventLog {
  /** How messages name it. */
  readonly where: string;
  /** The name this process's rows carry (`recorded_by`): with its pid, what tells its own events from another host's. */
  readonly writer: string;
  /** Queues whole event lines for the table; never throws, never waits (a failed write is reported once). */
  append(lines: readonly string[]): void;
  /** Resolves once every line appended before the call is in the table (or its write failed). */
  flush(): Promise<void>;
  /** The last `limit` matches (0: every match), oldest first, and how many match in all. */
  read(filter: EventFilter, limit: number): Promise<{ readonly events: EventRecord[]; readonly matched: number }>;
  /** The last `limit` matches, newest first, as readLatestEvents answers for the file. */
  readLatest(filter: EventFilter, limit: number): Promise<ReadLatestResult>;
  /** As followEvents: the backlog, then each new match as it is committed, until the signal aborts. */
  follow(filter: EventFilter, onEvent: (record: EventRecord) => void, signal: AbortSignal, options?: FollowOptions): Promise<void>;
}
