import { promises as fs } from "node:fs";
import { errnoOf } from "../../errors.js";
import { CorruptTrackerFileError } from "./errors.js";
import { journalLineSchema, schemaProblem } from "./records.js";
import type { JournalLine } from "./records.js";

/**
 * The append-only journal of one project. A line is committed once its newline is on disk; a
 * line without one is a torn append (a crash mid-write, or a writer still writing) and every
 * reader ignores it. Only a writer holding the project lock truncates it away.
 */

const NEWLINE = 0x0a;
const TAIL_CHUNK = 64 * 1024;

export interface JournalTail {
  /** The last complete line; undefined when the journal holds none. */
  readonly last: JournalLine | undefined;
  /** Bytes up to and including the last newline. */
  readonly completeLength: number;
  readonly size: number;
}

function parseLine(text: string, path: string, where: string): JournalLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CorruptTrackerFileError(path, `${where} is not JSON`);
  }
  const result = journalLineSchema.safeParse(value);
  if (!result.success) throw new CorruptTrackerFileError(path, `${where} is not a change record (${schemaProblem(result.error)})`);
  return result.data;
}

async function openForReading(path: string): Promise<fs.FileHandle | undefined> {
  try {
    return await fs.open(path, "r");
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * The last complete line, read from the end of the file in chunks: the cost does not grow with
 * the journal, which matters because every write and every unlocked read looks at it.
 */
export async function readJournalTail(path: string): Promise<JournalTail> {
  const handle = await openForReading(path);
  if (!handle) return { last: undefined, completeLength: 0, size: 0 };
  try {
    const size = (await handle.stat()).size;
    let window = Buffer.alloc(0);
    let windowStart = size;
    let lineEnd = -1; // absolute offset of the last newline
    let lineStart = -1;
    while (windowStart > 0) {
      const start = Math.max(0, windowStart - TAIL_CHUNK);
      const chunk = Buffer.alloc(windowStart - start);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, start);
      window = Buffer.concat([chunk.subarray(0, bytesRead), window]);
      windowStart = start;
      if (lineEnd < 0) {
        const index = window.lastIndexOf(NEWLINE);
        if (index < 0) continue;
        lineEnd = windowStart + index;
      }
      const searchFrom = lineEnd - windowStart - 1;
      const previous = searchFrom >= 0 ? window.lastIndexOf(NEWLINE, searchFrom) : -1;
      if (previous >= 0) {
        lineStart = windowStart + previous + 1;
        break;
      }
    }
    if (lineEnd < 0) return { last: undefined, completeLength: 0, size };
    if (lineStart < 0) lineStart = 0;
    const text = window.subarray(lineStart - windowStart, lineEnd - windowStart).toString("utf8");
    return { last: parseLine(text, path, "its last line"), completeLength: lineEnd + 1, size };
  } finally {
    await handle.close();
  }
}

/** Every complete line, oldest first; checks that seqs strictly increase. */
export async function readJournal(path: string): Promise<JournalLine[]> {
  let data: Buffer;
  try {
    data = await fs.readFile(path);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return [];
    throw error;
  }
  const complete = data.subarray(0, data.lastIndexOf(NEWLINE) + 1).toString("utf8");
  if (complete === "") return [];
  const texts = complete.split("\n");
  texts.pop();
  const lines: JournalLine[] = [];
  let previousSeq = 0;
  for (const [index, text] of texts.entries()) {
    const line = parseLine(text, path, `line ${index + 1}`);
    if (line.seq <= previousSeq) {
      throw new CorruptTrackerFileError(path, `line ${index + 1} has seq ${line.seq}, not above the ${previousSeq} before it`);
    }
    previousSeq = line.seq;
    lines.push(line);
  }
  return lines;
}

/** The commit point of a change: one write of one whole line, then fsync. */
export async function appendJournalLine(path: string, line: JournalLine): Promise<void> {
  const data = Buffer.from(`${JSON.stringify(line)}\n`, "utf8");
  const handle = await fs.open(path, "a", 0o644);
  try {
    let offset = 0;
    while (offset < data.length) {
      const { bytesWritten } = await handle.write(data, offset, data.length - offset);
      offset += bytesWritten;
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Cuts a torn append off; only ever called under the project lock. */
export async function truncateJournal(path: string, length: number): Promise<void> {
  const handle = await fs.open(path, "r+");
  try {
    await handle.truncate(length);
    await handle.sync();
  } finally {
    await handle.close();
  }
}
