import { join } from "node:path";
import { CorruptFileError } from "../state/atomic.js";
import { FILE_BACKEND } from "../state/backend.js";
import type { RecordBackend } from "../state/backend.js";
import type { DocumentStore } from "../state/document.js";
import type { LockOptions } from "../state/lock.js";

/**
 * The queue of authorized starts waiting for a slot under routing.limits (docs/fleet.md): one
 * document of the state (state/document.ts) — the file `queue/starts.json` under the state root,
 * or the `start-queue` row of the database — in order. It is written whole and atomically
 * (state/atomic.ts), so a `kill -9` at any instant leaves the old queue or the new one, and every
 * change runs under the file's lock, so two processes never both take the last slot: the
 * admission (count the live sessions, read the queue, claim or append) happens inside it. Lock
 * order: the item's control record, then this queue, then the item's session record.
 */

/** One start waiting for a slot. */
export interface QueueEntry {
  readonly ref: string;
  /** The harness it will run: the per-harness caps weigh it by this. */
  readonly harness: string;
  readonly queuedAt: string;
  /** It carried routing.limits.priorityLabel when it was queued: it stands ahead of every entry without it. */
  readonly priority?: true;
  /** What its session's boot prompt ends with when it starts (an adoption's note, with the transcript tail). */
  readonly bootNote?: string;
  /** The branch its session's checkout is made on (an adoption's: the lost host's pull request branch). */
  readonly branch?: string;
}

interface QueueFile {
  readonly version: 1;
  readonly entries: readonly QueueEntry[];
}

/** Where a state root keeps its queue. */
export function startQueueFile(stateRoot: string): string {
  return join(stateRoot, "queue", "starts.json");
}

/** A queue file that is not one: named, with how to mend it. */
export class StartQueueError extends Error {
  override readonly name: string = "StartQueueError";
  constructor(file: string, why: string) {
    super(
      `the start queue ${file} is damaged (${why}): fix it by hand, or remove it (the starts it held stay standing and are queued again at the daemon's next start)`,
    );
  }
}

function entryOf(file: string, value: unknown, index: number): QueueEntry {
  const entry = value as Partial<Record<keyof QueueEntry, unknown>> | null;
  if (typeof entry !== "object" || entry === null) throw new StartQueueError(file, `entry ${index} is not an object`);
  const { ref, harness, queuedAt, priority, bootNote, branch } = entry;
  if (typeof ref !== "string" || typeof harness !== "string" || typeof queuedAt !== "string") {
    throw new StartQueueError(file, `entry ${index} needs ref, harness and queuedAt as strings`);
  }
  if (priority !== undefined && priority !== true)
    throw new StartQueueError(file, `entry ${index} has priority ${JSON.stringify(priority)}: true, or leave it out`);
  if (bootNote !== undefined && typeof bootNote !== "string") throw new StartQueueError(file, `entry ${index} has a bootNote that is not a string`);
  if (branch !== undefined && typeof branch !== "string") throw new StartQueueError(file, `entry ${index} has a branch that is not a string`);
  return {
    ref,
    harness,
    queuedAt,
    ...(priority === true ? { priority } : {}),
    ...(bootNote !== undefined ? { bootNote } : {}),
    ...(branch !== undefined ? { branch } : {}),
  };
}

/** The entries of a stored queue; none when there is none yet. Throws StartQueueError on one that is not a queue. */
function entriesOf(where: string, parsed: unknown): QueueEntry[] {
  // No queue stored: nothing has queued yet.
  if (parsed === undefined) return [];
  const data = parsed as Partial<QueueFile> | null;
  if (typeof data !== "object" || data === null || data.version !== 1 || !Array.isArray(data.entries)) {
    throw new StartQueueError(where, "not { version: 1, entries: [...] }");
  }
  return data.entries.map((entry, index) => entryOf(where, entry, index));
}

export class StartQueue {
  /** Where the queue is, in messages: its file, or its row. */
  readonly file: string;
  /** The queue as stored, for what copies a state whole (`state migrate`). */
  readonly document: DocumentStore;

  /** `backend`: where the queue is (the file when omitted; state/backend.ts). */
  constructor(options: { readonly file: string; readonly lock?: LockOptions; readonly backend?: RecordBackend }) {
    this.document = (options.backend ?? FILE_BACKEND).document({ name: "start-queue", file: options.file, ...(options.lock ? { lock: options.lock } : {}) });
    this.file = this.document.where;
  }

  /** The queue in order; empty when there is no file. Throws StartQueueError on a damaged one. */
  read(): QueueEntry[] {
    let parsed: unknown;
    try {
      parsed = this.document.readSync();
    } catch (error) {
      throw new StartQueueError(this.file, error instanceof Error ? error.message : String(error));
    }
    return entriesOf(this.file, parsed);
  }

  /** The 1-based place of `ref` in the queue, or undefined when it is not queued. */
  positionOf(ref: string): number | undefined {
    const index = this.read().findIndex((entry) => entry.ref === ref);
    return index === -1 ? undefined : index + 1;
  }

  /**
   * Read → decide → write under the queue's lock. `decide` returns the new queue (undefined: no
   * change) and its result; the file is rewritten only when the queue changed.
   */
  async transaction<T>(decide: (entries: readonly QueueEntry[]) => Promise<{ readonly entries?: readonly QueueEntry[]; readonly result: T }>): Promise<T> {
    try {
      return await this.document.transaction(async (current) => {
        const before = entriesOf(this.file, current);
        const { entries, result } = await decide(before);
        const changed = entries !== undefined && !sameEntries(before, entries);
        return { ...(changed ? { value: { version: 1, entries } satisfies QueueFile } : {}), result };
      });
    } catch (error) {
      if (error instanceof CorruptFileError) throw new StartQueueError(this.file, error.message);
      throw error;
    }
  }

  /** Takes `ref` out of the queue; whether it was in it. */
  remove(ref: string): Promise<boolean> {
    return this.transaction(async (entries) => {
      const kept = entries.filter((entry) => entry.ref !== ref);
      return { entries: kept, result: kept.length !== entries.length };
    });
  }
}

function sameEntries(a: readonly QueueEntry[], b: readonly QueueEntry[]): boolean {
  return (
    a.length === b.length &&
    a.every((entry, index) => entry.ref === b[index]?.ref && entry.harness === b[index]?.harness && entry.priority === b[index]?.priority)
  );
}
