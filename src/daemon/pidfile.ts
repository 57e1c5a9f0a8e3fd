import { readFile, unlink } from "node:fs/promises";
import { EXIT_FAILURE, ExitError, errnoOf } from "../errors.js";
import { readTextIfPresent, writeJsonAtomic } from "../state/atomic.js";
import { withLock } from "../state/lock.js";
import { isProcessAlive, processStartTicks } from "../state/process.js";

export { isProcessAlive, processStartTicks } from "../state/process.js";

/**
 * The single-instance lock of a daemon service. Node has no flock(2), so the lock is a pidfile
 * whose holder is checked for life: a daemon killed with SIGKILL leaves its pidfile behind, and
 * the next start must take it over at once rather than wait for anything to expire. The check
 * and the takeover run under a short-lived proper-lockfile guard (`<pidfile>.lock`), so two
 * starters finding the same stale file cannot both take it over.
 *
 * A pid alone can be reused by an unrelated process after a reboot or a wrap-around; on Linux the
 * holder's start time (`startTicks`, field 22 of /proc/<pid>/stat, clock ticks since boot) tells
 * a reused pid apart. Where /proc is missing the pid check stands alone.
 */

export interface PidfileHolder {
  readonly pid: number;
  readonly service: string;
  readonly startedAt: string;
  readonly startTicks?: number;
}

export interface PidfileLock {
  readonly path: string;
  readonly holder: PidfileHolder;
  /** Removes the pidfile if it still names this process; safe to call more than once. */
  release(): Promise<void>;
}

export class PidfileHeldError extends ExitError {
  override readonly name: string = "PidfileHeldError";
  constructor(
    readonly path: string,
    readonly holder: PidfileHolder,
  ) {
    super(
      `${holder.service} is already running (pid ${holder.pid} since ${holder.startedAt}; pidfile ${path}); stop it with \`the-loop stop\``,
      EXIT_FAILURE,
      "conflict",
    );
  }
}

function holderOf(value: unknown): PidfileHolder | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { pid, service, startedAt, startTicks } = value as Record<string, unknown>;
  if (typeof pid !== "number" || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  if (typeof service !== "string" || typeof startedAt !== "string") return undefined;
  if (startTicks !== undefined && (typeof startTicks !== "number" || !Number.isSafeInteger(startTicks))) return undefined;
  return startTicks === undefined ? { pid, service, startedAt } : { pid, service, startedAt, startTicks };
}

/** Garbage and absence read the same: nobody holds the file. */
function parseHolder(text: string | undefined): PidfileHolder | undefined {
  if (text === undefined) return undefined;
  try {
    return holderOf(JSON.parse(text));
  } catch {
    return undefined;
  }
}

function isAliveHolder(holder: PidfileHolder | undefined): holder is PidfileHolder {
  return holder !== undefined && isProcessAlive(holder.pid, holder.startTicks);
}

async function readPidfile(path: string): Promise<PidfileHolder | undefined> {
  try {
    return parseHolder(await readFile(path, "utf8"));
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
}

/** The holder of the pidfile while it is alive; undefined for an absent, stale or garbage file. */
export function readLiveHolder(path: string): PidfileHolder | undefined {
  const text = readTextIfPresent(path);
  if (text === undefined) return undefined;
  const holder = parseHolder(text);
  return isAliveHolder(holder) ? holder : undefined;
}

/**
 * Takes the pidfile for this process, or throws PidfileHeldError naming the live holder. A file
 * naming this very process (a pid reused across a container restart) is ours to take.
 */
export async function acquirePidfile(path: string, service: string): Promise<PidfileLock> {
  const startTicks = processStartTicks(process.pid);
  const ours: PidfileHolder = {
    pid: process.pid,
    service,
    startedAt: new Date().toISOString(),
    ...(startTicks === undefined ? {} : { startTicks }),
  };
  await withLock(path, async () => {
    const current = await readPidfile(path);
    if (isAliveHolder(current) && current.pid !== process.pid) throw new PidfileHeldError(path, current);
    await writeJsonAtomic(path, ours);
  });
  let released = false;
  return {
    path,
    holder: ours,
    async release() {
      if (released) return;
      await withLock(path, async () => {
        // Another process may have taken the file over (if ours was judged stale): leave theirs.
        if ((await readPidfile(path))?.pid !== process.pid) return;
        await unlink(path).catch((error: unknown) => {
          if (errnoOf(error) !== "ENOENT") throw error;
        });
      });
      released = true;
    },
  };
}
