import { levelRank } from "./catalog.js";
import type { EventLevel } from "./catalog.js";
import { LogCursor } from "./cursor.js";
import { globToRegExp } from "./glob.js";

/**
 * Reading the event log: parsing its lines, deciding which events a query wants, and keeping
 * only the last N matches of a file of any size. Deciding is pure (`parseEventLine`,
 * `eventMatcher`); `readEvents` is the one function here that touches the file.
 */

/** One line of the log: the envelope, then whatever fields the event carries. */
export interface EventRecord {
  readonly ts: string;
  readonly source: string;
  readonly event: string;
  readonly level: string;
  readonly pid?: number;
  readonly [field: string]: unknown;
}

/**
 * The record on one line, or undefined when the line is not an event (not JSON, not an object,
 * or without the string envelope keys). Blank lines are not events either; callers that count
 * malformed lines check for them first.
 */
export function parseEventLine(line: string): EventRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  return isEventRecord(value) ? value : undefined;
}

/** What a query asks for; every condition given must hold. */
export interface EventFilter {
  /** fnmatch globs over the event type; any may match. Empty or absent: every type. */
  readonly types?: readonly string[];
  /** A canonical work item ref (`formatWorkItemRef`): matches `work_item` or an entry of `work_items`. */
  readonly workItem?: string;
  readonly source?: string;
  /** The least severe level wanted. */
  readonly minLevel?: EventLevel;
  /** Only events at or after this instant. */
  readonly since?: Date;
}

export type EventPredicate = (record: EventRecord) => boolean;

function mentionsWorkItem(record: EventRecord, ref: string): boolean {
  // Refs are canonical in lower case; a writer that slipped still names the same item.
  const same = (value: unknown): boolean => typeof value === "string" && value.toLowerCase() === ref;
  if (same(record.work_item)) return true;
  const many = record.work_items;
  return Array.isArray(many) && many.some(same);
}

/** Compiles a filter once (globs, ranks, the instant) into a predicate for many records. */
export function eventMatcher(filter: EventFilter): EventPredicate {
  const checks: EventPredicate[] = [];
  const types = (filter.types ?? []).map(globToRegExp);
  if (types.length > 0) checks.push((record) => types.some((glob) => glob.test(record.event)));
  const workItem = filter.workItem?.toLowerCase();
  if (workItem !== undefined) checks.push((record) => mentionsWorkItem(record, workItem));
  const source = filter.source;
  if (source !== undefined) checks.push((record) => record.source === source);
  if (filter.minLevel !== undefined) {
    const least = levelRank(filter.minLevel);
    // An unknown level ranks below every known one, so any minimum leaves it out.
    checks.push((record) => levelRank(record.level) >= least);
  }
  const since = filter.since?.getTime();
  if (since !== undefined) {
    // An unparsable ts is no instant, so it is not "since" anything.
    checks.push((record) => Date.parse(record.ts) >= since);
  }
  return (record) => checks.every((check) => check(record));
}

/** Keeps the last `capacity` values pushed (all of them when capacity is Infinity). */
export class RingBuffer<T> {
  private readonly items: T[] = [];
  private start = 0;

  constructor(readonly capacity: number) {
    if (!(capacity >= 0)) throw new RangeError(`capacity must be 0 or more, not ${capacity}`);
  }

  push(item: T): void {
    if (this.capacity === 0) return;
    if (this.items.length < this.capacity) {
      this.items.push(item);
      return;
    }
    this.items[this.start] = item;
    this.start = (this.start + 1) % this.capacity;
  }

  get size(): number {
    return this.items.length;
  }

  /** Oldest first. */
  toArray(): T[] {
    return [...this.items.slice(this.start), ...this.items.slice(0, this.start)];
  }
}

/**
 * Counts what a pass over lines skipped and routes each event to `onEvent`. A blank line is
 * nothing; an unparsable one is counted, never fatal: one torn line must not hide the rest.
 */
export class LineReader {
  malformed = 0;

  constructor(
    private readonly matches: EventPredicate,
    private readonly onEvent: (record: EventRecord) => void,
  ) {}

  readonly onLine = (line: string): void => {
    const text = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (text.trim() === "") return;
    const record = parseEventLine(text);
    if (!record) {
      this.malformed += 1;
      return;
    }
    if (this.matches(record)) this.onEvent(record);
  };

  readonly onOverlong = (): void => {
    this.malformed += 1;
  };

  /** The malformed count since the last call. */
  takeMalformed(): number {
    const count = this.malformed;
    this.malformed = 0;
    return count;
  }
}

export interface ReadEventsOptions {
  /** Keep the last N matches; 0 keeps every match. */
  readonly limit: number;
}

export interface ReadEventsResult {
  /** The matches, oldest first. */
  readonly events: EventRecord[];
  /** Lines that were not events (a partial last line is not counted: its writer is mid-append). */
  readonly malformed: number;
  /** True when there is no file at the path: no events yet, not an error. */
  readonly missing: boolean;
}

/** Reads the log once, streaming, holding at most `limit` matches in memory. */
export async function readEvents(path: string, filter: EventFilter, options: ReadEventsOptions): Promise<ReadEventsResult> {
  const kept = new RingBuffer<EventRecord>(options.limit === 0 ? Infinity : options.limit);
  const reader = new LineReader(eventMatcher(filter), (record) => kept.push(record));
  const change = await new LogCursor(path).poll(reader);
  return { events: kept.toArray(), malformed: reader.malformed, missing: change === "missing" };
}

/**
 * Whether a parsed line is an event record: an object whose envelope (ts, source, event, level)
 * is text. Its fields are the writer's; readers take them as they find them.
 */
function isEventRecord(value: unknown): value is EventRecord {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const envelope: { ts?: unknown; source?: unknown; event?: unknown; level?: unknown } = value;
  return typeof envelope.ts === "string" && typeof envelope.source === "string" && typeof envelope.event === "string" && typeof envelope.level === "string";
}
