import { promises as fs } from "node:fs";
import { basename, dirname } from "node:path";
import { errnoOf } from "../../errors.js";
import { CorruptTrackerFileError, journalRemedy } from "./errors.js";
import { journalLineSchema, schemaProblem } from "./records.js";
import type { JournalLine } from "./records.js";

/**
 * The append-only journal of one project. A line is committed once its newline is on disk; a
 * line without one is a torn append (a crash mid-write, or a writer still writing) and every
 * reader ignores it. Only a writer holding the project lock truncates it away.
 *
 * A complete line that does not read (not JSON, not a change record, a seq not above the one
 * before it) is damage no crash explains: readers and writers refuse the journal, naming the line,
 * until `the-loop item repair` moves such lines aside (see scanJournal).
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

/** The project a journal belongs to: the name of its folder. */
function projectOf(path: string): string {
  return basename(dirname(path));
}

function damaged(path: string, reason: string): CorruptTrackerFileError {
  return new CorruptTrackerFileError(path, reason, journalRemedy(projectOf(path)));
}

/** The line, or why it is not one (a phrase to follow `line N is`/`its last line is`). */
function readLine(text: string): JournalLine | { problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: "not JSON" };
  }
  const result = journalLineSchema.safeParse(value);
  if (!result.success) return { problem: `not a change record (${schemaProblem(result.error)})` };
  return result.data;
}

function parseLine(text: string, path: string, where: string): JournalLine {
  const line = readLine(text);
  if ("problem" in line) throw damaged(path, `${where} is ${line.problem}`);
  return line;
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

/** A line scanJournal could not keep, with its bytes as they were (without the newline). */
export interface JournalProblem {
  /** 1-based. */
  readonly line: number;
  /** e.g. `line 3 is not JSON`, `line 9 is torn (no newline)`. */
  readonly reason: string;
  readonly bytes: Buffer;
}

export interface JournalScan {
  /** The readable lines, oldest first; their seqs strictly increase. */
  readonly lines: JournalLine[];
  /** The bytes of each readable line, without its newline, in the same order. */
  readonly texts: Buffer[];
  /** Complete lines that do not read, in file order. */
  readonly damaged: JournalProblem[];
  /** Bytes after the last newline: a torn append, which no reader counts. */
  readonly torn: JournalProblem | undefined;
  /** Bytes up to and including the last newline. */
  readonly completeLength: number;
  readonly size: number;
}

/**
 * Every line of the journal, sorted into those that read and those that do not; never throws
 * for content. A line reads when it is JSON, a change record, and its seq is above the seq of
 * the last readable line before it.
 */
export async function scanJournal(path: string): Promise<JournalScan> {
  let data: Buffer;
  try {
    data = await fs.readFile(path);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return { lines: [], texts: [], damaged: [], torn: undefined, completeLength: 0, size: 0 };
    throw error;
  }
  const completeLength = data.lastIndexOf(NEWLINE) + 1;
  const lines: JournalLine[] = [];
  const texts: Buffer[] = [];
  const damagedLines: JournalProblem[] = [];
  let previousSeq = 0;
  let start = 0;
  let number = 0;
  while (start < completeLength) {
    const end = data.indexOf(NEWLINE, start);
    const bytes = data.subarray(start, end);
    start = end + 1;
    number += 1;
    const line = readLine(bytes.toString("utf8"));
    if ("problem" in line) {
      damagedLines.push({ line: number, reason: `line ${number} is ${line.problem}`, bytes });
    } else if (line.seq <= previousSeq) {
      damagedLines.push({ line: number, reason: `line ${number} has seq ${line.seq}, not above the ${previousSeq} before it`, bytes });
    } else {
      previousSeq = line.seq;
      lines.push(line);
      texts.push(bytes);
    }
  }
  const torn =
    completeLength < data.length ? { line: number + 1, reason: `line ${number + 1} is torn (no newline)`, bytes: data.subarray(completeLength) } : undefined;
  return { lines, texts, damaged: damagedLines, torn, completeLength, size: data.length };
}

/** Throws for the first damaged line, naming the file, the line and the repair. */
export function requireSound(path: string, scan: JournalScan): JournalScan {
  const first = scan.damaged[0];
  if (first) throw damaged(path, first.reason);
  return scan;
}

/** Every complete line, oldest first; refuses a journal with a line that does not read. */
export async function readJournal(path: string): Promise<JournalLine[]> {
  return requireSound(path, await scanJournal(path)).lines;
}

/** The commit point of a change: one write of one whole line, then fsync. */
export async function appendJournalLine(path: string, line: JournalLine): Promise<void> {
  const data = Buffer.from(`${JSON.stringify(line)}\n`, "utf8");
  const handle = await fs.open(path, "a", 0o600);
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
