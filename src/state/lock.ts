import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { EXIT_FAILURE, ExitError } from "../errors.js";

/**
 * A cross-process lock on one path (a record, a directory's worth of records). The lock is a
 * `<path>.lock` directory created with mkdir, which is atomic; the holder refreshes its mtime, so
 * a lock left by a killed process goes stale and is taken over after `staleMs`.
 */

export interface LockOptions {
  /** How long to wait for another holder before giving up (default 10 s). */
  readonly timeoutMs?: number;
  /** A lock not refreshed for this long belongs to a dead process (default 10 s, minimum 2 s). */
  readonly staleMs?: number;
}

/** `250ms`, `10s`: a sub-second wait must not read as "0s". */
function formatWait(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Math.round(ms / 1000)}s`;
}

/** What frees a lock file's lock, for its timeout's message. */
const fileLockRemedy = (target: string): string => `if none is running, the lock goes stale by itself within seconds; or remove ${target}.lock`;

export class LockTimeoutError extends ExitError {
  override readonly name: string = "LockTimeoutError";
  /** `remedy` says what frees the lock when it is not a lock file (a database's advisory lock). */
  constructor(target: string, timeoutMs: number, remedy: string = fileLockRemedy(target)) {
    super(
      `timed out after ${formatWait(timeoutMs)} waiting for the lock on ${target}: another the-loop process holds it (${remedy})`,
      EXIT_FAILURE,
      "lock-timeout",
    );
  }
}

export class LockCompromisedError extends Error {
  override readonly name: string = "LockCompromisedError";
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `critical` while holding the lock on `target`; the target itself need not exist. */
export async function withLock<T>(target: string, critical: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const staleMs = Math.max(options.staleMs ?? 10_000, 2_000);
  await mkdir(dirname(target), { recursive: true, mode: 0o700 });
  // Loaded on first use: read-only commands never pay for it at start-up.
  const { default: lockfile } = await import("proper-lockfile");
  let compromised: Error | undefined;
  const deadline = Date.now() + timeoutMs;
  let delay = 5;
  let release: () => Promise<void>;
  for (;;) {
    try {
      release = await lockfile.lock(target, {
        realpath: false,
        stale: staleMs,
        update: Math.floor(staleMs / 2),
        retries: 0,
        onCompromised: (error) => {
          compromised = error;
        },
      });
      break;
    } catch (error) {
      if (!(error instanceof Error && "code" in error && error.code === "ELOCKED")) throw error;
      if (Date.now() >= deadline) throw new LockTimeoutError(target, timeoutMs);
      await sleep(Math.min(delay, Math.max(deadline - Date.now(), 1)));
      delay = Math.min(delay * 2, 100);
    }
  }
  try {
    const result = await critical();
    if (compromised) {
      throw new LockCompromisedError(`the lock on ${target} was lost while held (${compromised.message}); retry the operation`);
    }
    return result;
  } finally {
    // The work is done (or its failure is being thrown); a lock that cannot be released is stale after
    // proper-lockfile's stale time, and the next holder takes it over.
    await release().catch(() => undefined);
  }
}
