import { promises as fs } from "node:fs";
import { errnoOf } from "../errors.js";
import { MAX_LINE_BYTES } from "./cursor.js";
import { eventMatcher, parseEventLine } from "./reader.js";
import type { EventFilter, EventRecord } from "./reader.js";

/**
 * Reading the newest end of the event log, backwards: what one work item went through lately is
 * at the end of a log that may hold years of every item's events, so a question about it reads
 * from the end until it has enough matches or has read its byte budget, never the whole file.
 */

const CHUNK_BYTES = 256 * 1024;
const NEWLINE = 0x0a;

export interface ReadLatestOptions {
  /** Stop after this many matches. */
  readonly limit: number;
  /** Stop after reading this many bytes from the end. */
  readonly maxBytes: number;
  /** The read size; small values exercise lines split across reads in tests. */
  readonly chunkBytes?: number;
}

export interface ReadLatestResult {
  /** The matches, newest first. */
  readonly events: EventRecord[];
  /** Lines that were not events. */
  readonly malformed: number;
  /** Bytes read from the end. */
  readonly scannedBytes: number;
  /** True when the whole file was read: there is nothing older that matches. */
  readonly reachedStart: boolean;
  /** True when there is no file at the path: no events yet, not an error. */
  readonly missing: boolean;
}

/**
 * The last `limit` events matching `filter`, newest first, read backwards from the end of the
 * log. A partial last line (a writer mid-append) is not an event yet and is passed over. With a
 * work item in the filter, only lines naming it (in any letter case) are parsed at all.
 */
export async function readLatestEvents(path: string, filter: EventFilter, options: ReadLatestOptions): Promise<ReadLatestResult> {
  const matches = eventMatcher(filter);
  const mention = filter.workItem === undefined ? undefined : new RegExp(escapeRegExp(filter.workItem), "i");
  const events: EventRecord[] = [];
  let malformed = 0;
  const onLine = (bytes: Buffer): void => {
    let text = bytes.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return;
    if (mention !== undefined && !mention.test(text)) return;
    const record = parseEventLine(text);
    if (record === undefined) malformed += 1;
    else if (matches(record)) events.push(record);
  };

  let handle;
  try {
    handle = await fs.open(path, "r");
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return { events, malformed, scannedBytes: 0, reachedStart: true, missing: true };
    throw error;
  }
  try {
    const { size } = await handle.stat();
    const lines = new BackwardLines(onLine, () => (malformed += 1));
    const buffer = Buffer.allocUnsafe(Math.max(1, options.chunkBytes ?? CHUNK_BYTES));
    let end = size;
    let scannedBytes = 0;
    let enough = false;
    while (end > 0 && !enough && scannedBytes < options.maxBytes) {
      const start = Math.max(0, end - buffer.length);
      const { bytesRead } = await handle.read(buffer, 0, end - start, start);
      // Truncated under us (an external rotation): what was read stands, the rest is gone.
      if (bytesRead < end - start) break;
      scannedBytes += bytesRead;
      enough = lines.pushBefore(buffer.subarray(0, bytesRead), () => events.length >= options.limit);
      end = start;
    }
    if (end === 0 && !enough) lines.finish();
    return { events, malformed, scannedBytes, reachedStart: end === 0 && !enough, missing: false };
  } finally {
    await handle.close();
  }
}

/**
 * Splits bytes fed from the end of a file towards its start into lines, newest first. The text
 * after the file's last newline is a line still being written and is never delivered.
 */
class BackwardLines {
  /** The end of a line whose start lies before the bytes seen so far, oldest part first. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private overlong = false;
  private seenNewline = false;

  constructor(
    private readonly onLine: (line: Buffer) => void,
    private readonly onOverlong: () => void,
  ) {}

  /**
   * `chunk` is the bytes just before everything pushed so far. Stops as soon as `enough` says so
   * and returns true; the rest of the chunk is then never looked at.
   */
  pushBefore(chunk: Buffer, enough: () => boolean): boolean {
    let lineEnd = chunk.length;
    for (let from = chunk.length - 1; from >= 0;) {
      const newline = chunk.lastIndexOf(NEWLINE, from);
      if (newline < 0) break;
      this.complete(chunk.subarray(newline + 1, lineEnd));
      if (enough()) return true;
      lineEnd = newline;
      from = newline - 1;
    }
    this.prepend(chunk.subarray(0, lineEnd));
    return false;
  }

  /** The file's start was reached: what is pending is its first line. */
  finish(): void {
    if (this.seenNewline) this.complete(Buffer.alloc(0));
  }

  private complete(start: Buffer): void {
    if (!this.seenNewline) {
      // After the last newline: empty, or a line its writer has not finished.
      this.seenNewline = true;
    } else if (this.overlong || start.length + this.pendingBytes > MAX_LINE_BYTES) {
      this.onOverlong();
    } else {
      this.onLine(this.pendingBytes === 0 ? start : Buffer.concat([start, ...this.pending]));
    }
    this.pending = [];
    this.pendingBytes = 0;
    this.overlong = false;
  }

  private prepend(bytes: Buffer): void {
    if (bytes.length === 0 || this.overlong) return;
    if (this.pendingBytes + bytes.length > MAX_LINE_BYTES) {
      // Not a line the-loop wrote: counted as malformed once its start is found, never held.
      this.overlong = true;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    // Copied: the caller reuses its read buffer.
    this.pending.unshift(Buffer.from(bytes));
    this.pendingBytes += bytes.length;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
