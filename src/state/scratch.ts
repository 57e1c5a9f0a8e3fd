import { readdirSync, statSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { isProcessAlive, processStartTicks } from "./process.js";

/**
 * Scratch files: short-lived files a process writes into `<state.root>/tmp` (text on its way into
 * a session, which holds a comment's text) and removes once it is done with them. A process killed
 * in between leaves them behind. Each name says who wrote it — the writer's pid and, where /proc
 * tells, that pid's start time, so a reused pid is not taken for the writer — and a sweep removes
 * every file whose writer no longer runs, however young, while a live writer's files stay.
 *
 *   the-loop-<kind>-<pid>[.<start ticks>]-<nonce>.txt
 */

const PREFIX = "the-loop-";
const WRITTEN_BY = /^the-loop-[a-z]+-(\d+)(?:\.(\d+))?-[0-9a-f]+\.txt$/;
/** Files named without a writer (an earlier version wrote them): left this long for their writer. */
const UNNAMED_WRITER_AGE_MS = 60_000;

let writerTag: string | undefined;

/** This process as a scratch file's writer: its pid, and its start time where /proc tells it. */
function thisWriter(): string {
  if (writerTag === undefined) {
    const ticks = processStartTicks(process.pid);
    writerTag = ticks === undefined ? String(process.pid) : `${process.pid}.${ticks}`;
  }
  return writerTag;
}

/** The name of a scratch file this process writes: `kind` is lower-case letters, `nonce` hex. */
export function scratchFileName(kind: string, nonce: string): string {
  if (!/^[a-z]+$/.test(kind) || !/^[0-9a-f]+$/.test(nonce)) throw new Error(`invalid scratch file kind or nonce: ${kind} ${nonce}`);
  return `${PREFIX}${kind}-${thisWriter()}-${nonce}.txt`;
}

/** The writer a scratch file's name records, or undefined when it records none. */
export function scratchFileWriter(name: string): { readonly pid: number; readonly startTicks?: number } | undefined {
  const match = WRITTEN_BY.exec(name);
  if (!match) return undefined;
  const pid = Number(match[1]);
  return match[2] === undefined ? { pid } : { pid, startTicks: Number(match[2]) };
}

/**
 * Removes the scratch files in `dir` whose writer is gone, and files named without a writer once
 * they are older than a minute. Best-effort: a daemon calls it at start, and nothing depends on its
 * success. Returns how many files it removed.
 */
export function sweepScratchFiles(dir: string, now = Date.now()): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const file = join(dir, name);
    try {
      const writer = scratchFileWriter(name);
      const stale = writer === undefined ? statSync(file).mtimeMs < now - UNNAMED_WRITER_AGE_MS : !isProcessAlive(writer.pid, writer.startTicks);
      if (!stale) continue;
      unlinkSync(file);
      removed += 1;
    } catch {
      // Gone already.
    }
  }
  return removed;
}
