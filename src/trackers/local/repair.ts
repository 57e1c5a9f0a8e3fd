import { z } from "zod";
import { join } from "node:path";
import { createFileExclusive, fsyncDirectory, writeFileAtomic, writeJsonAtomic } from "../../state/index.js";
import { highestItemNumber, readMeta } from "./files.js";
import type { ProjectFiles } from "./files.js";
import { scanJournal } from "./journal.js";
import type { JournalProblem } from "./journal.js";
import type { ProjectMeta } from "./records.js";

/**
 * `the-loop item repair`: a journal with lines that do not read keeps the ones that do, in their
 * order, and its other lines go to a file next to it, named with the time — never deleted. Run
 * under the project lock; the caller then recovers as any writer does.
 */

export interface JournalRepair {
  readonly kept: number;
  /** Lines moved aside (a torn last line among them), in file order. */
  readonly moved: readonly JournalProblem[];
  readonly torn: boolean;
  readonly aside: string | undefined;
}

const NEWLINE = Buffer.from("\n");

/** `journal.jsonl.damaged-2025-02-03T04-05-06.789Z` (no colons: they trouble some tools and filesystems). */
export function asideName(at: Date): string {
  return `journal.jsonl.damaged-${at.toISOString().replace(/:/g, "-")}`;
}

/** What a line moved aside may still say of itself: its seq, when it holds a usable one. */
const claimSchema = z.object({ seq: z.int().positive() });

/** The seq a line moved aside claims, if it claims one: that seq stays used. */
function claimedSeq(bytes: Buffer): number {
  try {
    const claim = claimSchema.safeParse(JSON.parse(bytes.toString("utf8")));
    if (claim.success) return claim.data.seq;
  } catch {
    // Not JSON: it claims nothing.
  }
  return 0;
}

async function writeAside(files: ProjectFiles, at: Date, moved: readonly JournalProblem[]): Promise<string> {
  const data = Buffer.concat(moved.flatMap((problem) => [problem.bytes, NEWLINE]));
  const base = join(files.dir, asideName(at));
  for (let attempt = 1; ; attempt += 1) {
    const path = attempt === 1 ? base : `${base}-${attempt}`;
    if (await createFileExclusive(path, data)) return path;
  }
}

export async function repairJournal(files: ProjectFiles, at: Date): Promise<JournalRepair> {
  const scan = await scanJournal(files.journal);
  const moved = scan.torn ? [...scan.damaged, scan.torn] : scan.damaged;
  if (moved.length === 0) return { kept: scan.lines.length, moved: [], torn: false, aside: undefined };

  // The lines moved aside are on disk before the journal loses them: a crash in between leaves
  // them in both places, and a second repair sets them aside again (in a file of its own).
  const aside = await writeAside(files, at, moved);
  await writeFileAtomic(files.journal, Buffer.concat(scan.texts.flatMap((text) => [text, NEWLINE])));
  await fsyncDirectory(files.dir);

  // Change ids are `<project>:<seq>` and the poller may have delivered those of the lines moved
  // aside: when they were the journal's last, meta.json keeps their seqs used.
  const meta = await readMeta(files);
  const keptLast = scan.lines.at(-1)?.seq ?? 0;
  const used = Math.max(meta?.lastSeq ?? 0, ...moved.map((problem) => claimedSeq(problem.bytes)));
  if (used > keptLast) {
    const lastNumber = Math.max(meta?.lastNumber ?? 0, await highestItemNumber(files), ...scan.lines.map((line) => line.number));
    await writeJsonAtomic(files.meta, { lastSeq: used, lastNumber, seqFloor: used } satisfies ProjectMeta);
  }
  return { kept: scan.lines.length, moved, torn: scan.torn !== undefined, aside };
}
