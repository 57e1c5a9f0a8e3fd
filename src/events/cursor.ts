import { promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { errnoOf } from "../errors.js";

/**
 * Byte-level reading of an append-only log that other processes write and an external logrotate
 * may truncate, remove or replace. A cursor remembers how far it has read; each `poll` hands
 * over the complete lines appended since, keeps a partial last line until its newline arrives,
 * and starts again from the top when the file it was reading is no longer the file at `path`.
 */

const CHUNK_BYTES = 64 * 1024;
// A "line" longer than this is not one the-loop wrote (fields are capped far below it): it is
// skipped as malformed instead of being held in memory while we wait for its newline.
export const MAX_LINE_BYTES = 8 * 1024 * 1024;
// Enough of the bytes just before the read position to tell "grew" from "truncated and regrown
// past where we were": event lines start with a millisecond timestamp and end with fields.
const ANCHOR_BYTES = 64;
const NEWLINE = 0x0a;

/** Splits bytes into lines on "\n" (which never occurs inside a multi-byte UTF-8 sequence). */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private overlong = false;

  /** Calls `onLine` for each completed line and `onOverlong` for each line dropped as too long. */
  push(chunk: Buffer, onLine: (line: string) => void, onOverlong: () => void): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, start);
      if (newline < 0) break;
      if (this.overlong) {
        onOverlong();
      } else if (this.pendingBytes > 0) {
        onLine(Buffer.concat([...this.pending, chunk.subarray(start, newline)]).toString("utf8"));
      } else {
        onLine(chunk.toString("utf8", start, newline));
      }
      this.reset();
      start = newline + 1;
    }
    if (start >= chunk.length || this.overlong) return;
    const rest = chunk.subarray(start);
    if (this.pendingBytes + rest.length > MAX_LINE_BYTES) {
      this.overlong = true;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    // Copied: the caller reuses its read buffer.
    this.pending.push(Buffer.from(rest));
    this.pendingBytes += rest.length;
  }

  /** Whether a line has begun and not yet ended. */
  get hasPartialLine(): boolean {
    return this.pendingBytes > 0 || this.overlong;
  }

  reset(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.overlong = false;
  }
}

/** What a poll found, beyond the lines it delivered. */
export type CursorChange =
  | "unchanged" // nothing new (or only part of a line)
  | "read" // new bytes were read
  | "missing" // there is no file at the path (and there was none before)
  | "appeared" // a file exists where there was none; read from its start
  | "removed" // the file we were reading is gone
  | "truncated" // the file shrank under us, or was rewritten; read again from its start
  | "replaced"; // another file now sits at the path (rotation); read from its start

interface FileIdentity {
  readonly dev: number;
  readonly ino: number;
}

export interface CursorLineSink {
  readonly onLine: (line: string) => void;
  /** A line longer than MAX_LINE_BYTES was skipped. */
  readonly onOverlong: () => void;
}

export class LogCursor {
  private identity: FileIdentity | null = null;
  private offset = 0;
  private anchor: Buffer = Buffer.alloc(0);
  private polled = false;
  private readonly splitter = new LineSplitter();
  private readonly buffer = Buffer.allocUnsafe(CHUNK_BYTES);

  constructor(readonly path: string) {}

  /** Bytes consumed so far, including a partial last line. */
  get position(): number {
    return this.offset;
  }

  get hasPartialLine(): boolean {
    return this.splitter.hasPartialLine;
  }

  /**
   * Reads what was appended since the last poll, delivering complete lines. Throws only for a
   * file that exists but cannot be read (permissions, a directory).
   */
  async poll(sink: CursorLineSink): Promise<CursorChange> {
    const first = !this.polled;
    this.polled = true;
    const seen = await statOrNull(this.path);
    if (!seen) return this.lost();
    if (this.identity && sameFile(this.identity, seen) && seen.size === this.offset) return "unchanged";

    let handle: FileHandle;
    try {
      handle = await fs.open(this.path, "r");
    } catch (error) {
      if (errnoOf(error) === "ENOENT") return this.lost(); // removed between the stat and the open
      throw error;
    }
    try {
      const stat = await handle.stat();
      const change = await this.reconcile(handle, { dev: stat.dev, ino: stat.ino }, stat.size, first);
      const grew = await this.readTo(handle, stat.size, sink);
      return change ?? (grew ? "read" : "unchanged");
    } finally {
      await handle.close();
    }
  }

  private lost(): CursorChange {
    if (!this.identity) return "missing";
    this.restart(null);
    return "removed";
  }

  /** Decides where reading resumes in the file now open; returns the change worth reporting. */
  private async reconcile(handle: FileHandle, identity: FileIdentity, size: number, first: boolean): Promise<CursorChange | undefined> {
    if (!this.identity) {
      this.restart(identity);
      return first ? undefined : "appeared";
    }
    if (!sameFile(this.identity, identity)) {
      this.restart(identity);
      return "replaced";
    }
    if (size < this.offset || !(await this.anchorHolds(handle))) {
      this.restart(identity);
      return "truncated";
    }
    return undefined;
  }

  private async anchorHolds(handle: FileHandle): Promise<boolean> {
    if (this.anchor.length === 0) return true;
    const probe = Buffer.alloc(this.anchor.length);
    const { bytesRead } = await handle.read(probe, 0, probe.length, this.offset - this.anchor.length);
    return bytesRead === probe.length && probe.equals(this.anchor);
  }

  private restart(identity: FileIdentity | null): void {
    this.identity = identity;
    this.offset = 0;
    this.anchor = Buffer.alloc(0);
    this.splitter.reset();
  }

  /** Reads from the cursor to `size` (the size seen at open; later appends wait for the next poll). */
  private async readTo(handle: FileHandle, size: number, sink: CursorLineSink): Promise<boolean> {
    let grew = false;
    while (this.offset < size) {
      const want = Math.min(this.buffer.length, size - this.offset);
      const { bytesRead } = await handle.read(this.buffer, 0, want, this.offset);
      if (bytesRead === 0) break; // truncated while we read: the next poll notices
      const chunk = this.buffer.subarray(0, bytesRead);
      this.offset += bytesRead;
      this.anchor = tailOf(this.anchor, chunk);
      this.splitter.push(chunk, sink.onLine, sink.onOverlong);
      grew = true;
    }
    return grew;
  }
}

function tailOf(previous: Buffer, chunk: Buffer): Buffer {
  if (chunk.length >= ANCHOR_BYTES) return Buffer.from(chunk.subarray(chunk.length - ANCHOR_BYTES));
  const joined = Buffer.concat([previous, chunk]);
  return Buffer.from(joined.subarray(Math.max(0, joined.length - ANCHOR_BYTES)));
}

function sameFile(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

async function statOrNull(path: string): Promise<{ dev: number; ino: number; size: number } | null> {
  try {
    const stat = await fs.stat(path);
    return { dev: stat.dev, ino: stat.ino, size: stat.size };
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return null;
    throw error;
  }
}
