/**
 * Turns at one advisory lock among the callers of one process. A caller waiting for a database
 * lock holds a pooled connection while it waits; when more callers of one process wait for one
 * key than the pool has connections, the holder itself cannot get a connection for the queries it
 * makes under the lock, and everything stalls until the waiters' lock_timeout. So the callers of a
 * process queue here first, holding nothing, and only the first of them takes a connection and
 * waits at the server. That also shares a hot lock fairly between processes: the server grants
 * its waiters in order, and each process has at most one waiter per key there.
 */
export class LockTurns {
  private readonly tails = new Map<string, Promise<void>>();

  /**
   * Waits for every earlier caller for `key` in this process to be done (at most `timeoutMs`, then
   * `timedOut()` is thrown and the turn given up), and returns the function that ends this turn.
   */
  async take(key: string, timeoutMs: number, timedOut: () => Error): Promise<() => void> {
    const before = this.tails.get(key);
    let end!: () => void;
    const mine = new Promise<void>((resolve) => (end = resolve));
    // The next caller waits for this turn and every earlier one, even when this one gives up early.
    const tail = before === undefined ? mine : before.then(() => mine);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    if (before !== undefined && !(await settlesWithin(before, timeoutMs))) {
      end();
      throw timedOut();
    }
    return end;
  }

  /** Keys with a turn taken or waited for (a key leaves once its last turn ends). */
  get size(): number {
    return this.tails.size;
  }
}

async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise.then(() => true as const), expired]);
  } finally {
    clearTimeout(timer);
  }
}
