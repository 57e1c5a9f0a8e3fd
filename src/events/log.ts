import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { errnoOf, messageOf } from "../errors.js";
import { redactKnownSecrets } from "../secrets.js";
import { levelOf } from "./catalog.js";
import type { EventFields, EventSource, EventType } from "./catalog.js";
import type { SharedEventLog } from "./table.js";

/** Where code records events. Tests and one-shot tools may pass a sink that keeps them in memory. */
export interface EventSink {
  emit<T extends EventType>(type: T, fields: EventFields<T>): void;
  /**
   * Runs `work`, and writes the lines of every event it emits together, in order, when it
   * returns or throws (a sink without it writes each at once). For a burst of events in one
   * synchronous pass, such as the webhook receiver's acknowledgements.
   */
  batch?<R>(work: () => R): R;
}

export interface EventLogOptions {
  /** The JSONL file; null when the event log is disabled. */
  readonly path: string | null;
  readonly source: EventSource;
  /** Told once, on the first write that fails (default: a line on stderr). */
  readonly onWriteError?: (message: string) => void;
  readonly now?: () => Date;
  /**
   * The table the lines go to instead of the file (state.store: postgres): the same lines,
   * scrubbed and bounded here, queued and written in batches by the table.
   */
  readonly table?: SharedEventLog;
}

const MAX_STRING = 4_000;
const MAX_LIST = 200;
// Tokens must never reach the log, even when a caller passes text that quotes one: the secrets
// this process read, in every spelling they come back in (src/secrets.ts), and text shaped like a token.
const SECRET_PATTERNS = [/\bgh[pousr]_[A-Za-z0-9]{20,}\b/g, /\bgithub_pat_[A-Za-z0-9_]{20,}\b/g, /\b(Bearer|token)\s+[A-Za-z0-9._~+/=-]{16,}/gi];

/**
 * What every text SECRET_PATTERNS can match contains (case aside): one test of it spares the three
 * replaces for the text of nearly every event, which has none (the webhook receiver writes a few
 * strings per acknowledgement).
 */
const SECRET_HINT = /gh[pousr]_|github_pat_|bearer|token/i;

export function scrubSecrets(text: string): string {
  const known = redactKnownSecrets(text);
  return SECRET_HINT.test(known) ? SECRET_PATTERNS.reduce((current, pattern) => current.replace(pattern, "[redacted]"), known) : known;
}

/** The last timestamp written and its text: the events of one millisecond (a burst of acknowledgements) format it once. */
let lastStampMs = Number.NaN;
let lastStamp = "";

function timestampOf(ms: number): string {
  if (ms !== lastStampMs) {
    // toISOString throws on an invalid time, as it did for every event before this cache; nothing is cached then.
    lastStamp = new Date(ms).toISOString();
    lastStampMs = ms;
  }
  return lastStamp;
}

/** Scrubbed before it is cut: a secret cut in two would leave its first part unmatched. */
function boundedValue(value: unknown): unknown {
  if (typeof value === "string") {
    const scrubbed = scrubSecrets(value);
    return scrubbed.length > MAX_STRING ? `${scrubbed.slice(0, MAX_STRING)}…[truncated]` : scrubbed;
  }
  if (Array.isArray(value)) return value.slice(0, MAX_LIST).map(boundedValue);
  return value;
}

/**
 * One event as the log's line: the envelope, then the fields, each bounded and scrubbed. For a
 * process that records an event without a sink of its own (a session's watchdog).
 */
export function eventLine<T extends EventType>(type: T, fields: EventFields<T>, source: EventSource, atMs: number = Date.now()): string {
  const record: Record<string, unknown> = { ts: timestampOf(atMs), source, event: type, level: levelOf(type, fields), pid: process.pid };
  // Keys, not entries: no pair array per field (the receiver writes a line per acknowledgement).
  const given = fields as Readonly<Record<string, unknown>>;
  for (const key of Object.keys(given)) {
    const value = given[key];
    if (value !== undefined && !(key in record)) record[key] = boundedValue(value);
  }
  return `${JSON.stringify(record)}\n`;
}

/**
 * Appends events to the JSONL log. Each event is one `write` of one whole line to a file opened
 * with O_APPEND, so lines from concurrent processes never interleave; the file is opened per
 * write, so an external logrotate needs no signal. Inside batch(), the lines of one synchronous
 * pass go out in one such `write` when it ends: still whole lines, in emit order, and nothing is
 * held past the pass (a kill -9 can only lose the pass under way). Recording an event never
 * throws into the caller: a failed write is reported once and the operation carries on.
 */
export class EventLog implements EventSink {
  private warned = false;
  private directoryReady = false;
  /** The lines of the batch under way, or undefined outside batch(). */
  private held: string[] | undefined;

  constructor(private readonly options: EventLogOptions) {}

  get path(): string | null {
    return this.options.path;
  }

  /** The table the events go to, when they go to one. */
  get table(): SharedEventLog | undefined {
    return this.options.table;
  }

  /** Resolves once every event emitted before the call is written (at once for the file: each write is synchronous). */
  async flush(): Promise<void> {
    await this.options.table?.flush();
  }

  emit<T extends EventType>(type: T, fields: EventFields<T>): void {
    const path = this.options.path;
    if (!path) return;
    try {
      const line = eventLine(type, fields, this.options.source, this.options.now === undefined ? Date.now() : this.options.now().getTime());
      if (this.held !== undefined) this.held.push(line);
      else this.append(path, line);
    } catch (error) {
      this.reportOnce(`cannot write the event log ${path}: ${messageOf(error)}; events are not being recorded`);
    }
  }

  batch<R>(work: () => R): R {
    // A batch inside a batch joins it: its lines go out with the outer one's.
    if (this.held !== undefined) return work();
    this.held = [];
    try {
      return work();
    } finally {
      const lines = this.held;
      this.held = undefined;
      if (lines.length > 0 && this.options.path) this.appendLines(this.options.path, lines);
    }
  }

  private appendLines(path: string, lines: readonly string[]): void {
    try {
      if (this.options.table !== undefined) this.options.table.append(lines);
      else this.append(path, lines.length === 1 ? (lines[0] ?? "") : lines.join(""));
    } catch (error) {
      this.reportOnce(`cannot write the event log ${path}: ${messageOf(error)}; events are not being recorded`);
    }
  }

  private append(path: string, line: string): void {
    const table = this.options.table;
    if (table !== undefined) {
      table.append([line]);
      return;
    }
    if (!this.directoryReady) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      this.directoryReady = true;
    }
    try {
      // Private: events quote what people wrote and what hooks answered.
      appendFileSync(path, line, { encoding: "utf8", mode: 0o600 });
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") throw error;
      // The directory went away under us (a wiped state root): recreate it once and retry.
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      appendFileSync(path, line, { encoding: "utf8", mode: 0o600 });
    }
  }

  private reportOnce(message: string): void {
    if (this.warned) return;
    this.warned = true;
    (this.options.onWriteError ?? ((text: string) => process.stderr.write(`warning: ${text}\n`)))(message);
  }
}

/** An event sink that keeps events in memory, for tests and dry runs. */
export class MemoryEventSink implements EventSink {
  readonly events: { type: EventType; fields: Record<string, unknown> }[] = [];
  emit<T extends EventType>(type: T, fields: EventFields<T>): void {
    this.events.push({ type, fields: { ...fields } });
  }
}
