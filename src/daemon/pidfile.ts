import { z } from "zod";
import { readFile, unlink } from "node:fs/promises";
import { EXIT_FAILURE, ExitError, errnoOf } from "../errors.js";
import { writeJsonAtomic } from "../state/atomic.js";
import { withLock } from "../state/lock.js";
import { isProcessAlive, processStartTicks } from "../state/process.js";
import { askLockSocket, howToFindHolder, lockSocketFor, takeLockSocket } from "./lock-socket.js";
import type { ListeningLockSocket, LockSocket } from "./lock-socket.js";

export { isProcessAlive, processStartTicks } from "../state/process.js";

/**
 * The single-instance lock of a daemon service. Node has no flock(2); the lock is a local socket
 * the holder listens on (lock-socket.ts), which the operating system frees when the holder ends,
 * however it ends, and which answers with the holder's pid — so neither a SIGKILL nor a damaged
 * pidfile makes the lock lie. Beside it the pidfile records the holder for people and scripts;
 * the holder rewrites it whenever it is asked and finds it no longer naming itself. Taking and
 * releasing run under a short-lived proper-lockfile guard (`<pidfile>.lock`), so two starters
 * cannot both replace a leftover socket file or both write the pidfile.
 *
 * The pidfile alone decides only for a holder that does not listen (one started by an earlier
 * version of the-loop, or where listening failed): it is held while the process it names lives.
 * A pid alone can be reused by an unrelated process after a reboot or a wrap-around; on Linux the
 * holder's start time (`startTicks`, field 22 of /proc/<pid>/stat, clock ticks since boot) tells
 * a reused pid apart. A pidfile whose holder listened (`socket`) is stale once nobody listens.
 */

export interface PidfileHolder {
  readonly pid: number;
  readonly service: string;
  readonly startedAt: string;
  readonly startTicks?: number;
  /** The lock socket the holder listens on; absent when the pidfile is its only lock. */
  readonly socket?: string;
}

export interface PidfileLock {
  readonly path: string;
  readonly holder: PidfileHolder;
  /** Why the lock is the pidfile alone, when the socket could not be listened on. */
  readonly unguarded?: string;
  /** Frees the lock and removes the pidfile if it still names this process; safe to call more than once. */
  release(): Promise<void>;
}

/** A held lock as a reader sees it. */
export interface HeldLock {
  /** Who holds it; undefined when the holder says nothing believable and the pidfile names no live holder. */
  readonly holder: PidfileHolder | undefined;
  readonly socket: LockSocket;
}

/** `pid 123 since …`, or what to run to find a holder that names no one. */
export function holderNote(lock: HeldLock): string {
  if (lock.holder) return `pid ${lock.holder.pid} since ${lock.holder.startedAt}`;
  return `a process that does not say which (it listens on ${lock.socket.shown}; find it with ${howToFindHolder(lock.socket)})`;
}

export class PidfileHeldError extends ExitError {
  override readonly name: string = "PidfileHeldError";
  readonly holder: PidfileHolder | undefined;
  constructor(
    readonly path: string,
    readonly service: string,
    lock: HeldLock,
  ) {
    super(`${service} is already running (${holderNote(lock)}; pidfile ${path}); stop it with \`the-loop stop\``, EXIT_FAILURE, "conflict");
    this.holder = lock.holder;
  }
}

/** A pidfile as a holder writes it; other keys are ignored. */
const holderSchema = z.object({
  pid: z.int().positive(),
  service: z.string(),
  startedAt: z.string(),
  startTicks: z.int().optional(),
  socket: z.string().optional(),
});

function holderOf(value: unknown): PidfileHolder | undefined {
  const holder = holderSchema.safeParse(value);
  if (!holder.success) return undefined;
  const { pid, service, startedAt, startTicks, socket } = holder.data;
  return {
    pid,
    service,
    startedAt,
    ...(startTicks === undefined ? {} : { startTicks }),
    ...(socket === undefined ? {} : { socket }),
  };
}

/** Garbage and absence read the same: the pidfile names nobody. */
function parseHolder(text: string | undefined): PidfileHolder | undefined {
  if (text === undefined) return undefined;
  try {
    return holderOf(JSON.parse(text));
  } catch {
    return undefined;
  }
}

async function readPidfile(path: string): Promise<PidfileHolder | undefined> {
  try {
    return parseHolder(await readFile(path, "utf8"));
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
}

/** The pidfile's holder, when the pidfile is what holds the lock: it never listened and it lives. */
function pidfileOnlyHolder(holder: PidfileHolder | undefined): holder is PidfileHolder {
  return holder !== undefined && holder.socket === undefined && isProcessAlive(holder.pid, holder.startTicks);
}

/**
 * Whether the lock is held, and by whom: the listener's answer first, then — for a holder that
 * names no one — a live pidfile holder; a pidfile alone only for a holder that never listened.
 */
export async function readLock(path: string): Promise<HeldLock | undefined> {
  const socket = lockSocketFor(path);
  const reply = await askLockSocket(socket);
  // The pidfile is a record: an unreadable one names nobody, as a garbage one does.
  const recorded = await readPidfile(path).catch(() => undefined);
  if (reply.state === "held") {
    const fallback = recorded !== undefined && isProcessAlive(recorded.pid, recorded.startTicks) ? recorded : undefined;
    return { holder: holderOf(reply.answer) ?? fallback, socket };
  }
  return pidfileOnlyHolder(recorded) ? { holder: recorded, socket } : undefined;
}

const sameHolder = (a: PidfileHolder | undefined, b: PidfileHolder): boolean =>
  a !== undefined && a.pid === b.pid && a.startedAt === b.startedAt && a.socket === b.socket;

/**
 * Takes the lock for this process, or throws PidfileHeldError naming the holder. A pidfile naming
 * this very process (a pid reused across a container restart) is ours to take.
 */
export async function acquirePidfile(path: string, service: string): Promise<PidfileLock> {
  const startTicks = processStartTicks(process.pid);
  const socket = lockSocketFor(path);
  const base: PidfileHolder = {
    pid: process.pid,
    service,
    startedAt: new Date().toISOString(),
    ...(startTicks === undefined ? {} : { startTicks }),
  };
  // What the listener answers from its first connection on; the pidfile says the same once written.
  const listened: PidfileHolder = { ...base, socket: socket.shown };
  let ours: PidfileHolder = listened;
  let listening: ListeningLockSocket | undefined;
  let unguarded: string | undefined;
  // Only between taking the lock and letting it go: while taking it, the pidfile may still be an
  // earlier holder's, which is read, not overwritten.
  let holding = false;
  let repairing: Promise<void> | undefined;
  // Whoever asks who holds the lock may have found the pidfile damaged: it is put right, once at a time.
  const repair = (): void => {
    if (!holding || repairing) return;
    repairing = readPidfile(path)
      .then((current) => (!holding || sameHolder(current, ours) ? undefined : writeJsonAtomic(path, ours)))
      // A repair that fails is tried again at the next lock-socket question; the socket, not the file, is the lock.
      .catch(() => undefined)
      .finally(() => (repairing = undefined));
  };
  await withLock(path, async () => {
    const taken = await takeLockSocket(socket, () => {
      repair();
      return JSON.stringify(ours);
    });
    if (taken.state === "held") {
      const recorded = await readPidfile(path).catch(() => undefined);
      const fallback = recorded !== undefined && isProcessAlive(recorded.pid, recorded.startTicks) ? recorded : undefined;
      throw new PidfileHeldError(path, service, { holder: holderOf(taken.answer) ?? fallback, socket });
    }
    if (taken.state === "taken") {
      listening = taken.listening;
    } else {
      unguarded = taken.reason;
      ours = base;
    }
    try {
      const current = await readPidfile(path);
      if (pidfileOnlyHolder(current) && current.pid !== process.pid) throw new PidfileHeldError(path, service, { holder: current, socket });
      await writeJsonAtomic(path, ours);
      holding = true;
    } catch (error) {
      listening?.close();
      throw error;
    }
  });
  let released = false;
  return {
    path,
    holder: ours,
    ...(unguarded === undefined ? {} : { unguarded }),
    async release() {
      if (released) return;
      holding = false;
      await repairing;
      try {
        await withLock(path, async () => {
          // Under the guard, so a starter never finds the socket free and this pidfile still here.
          listening?.close();
          // Another process may have taken the file over (if ours was judged stale): leave theirs.
          if ((await readPidfile(path))?.pid !== process.pid) return;
          await unlink(path).catch((error: unknown) => {
            if (errnoOf(error) !== "ENOENT") throw error;
          });
        });
      } finally {
        listening?.close();
      }
      released = true;
    },
  };
}
