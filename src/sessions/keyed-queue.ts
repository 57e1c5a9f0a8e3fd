/**
 * Work serialized per key (one work item's events run one after another, in arrival order) and
 * parallel across keys. A key's chain is dropped once it runs empty, so a long-running daemon
 * keeps no state for work items that have gone quiet.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();
  private pending = 0;
  private idleWaiters: (() => void)[] = [];

  /** Queues `job` behind every earlier job of `key`; the returned promise settles with it. */
  run<T>(key: string, job: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    this.pending += 1;
    // Counted down inside the job, so a caller that saw the job settle also sees it gone.
    const counted = async (): Promise<T> => {
      try {
        return await job();
      } finally {
        this.settled();
      }
    };
    const result = previous.then(counted, counted);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  private settled(): void {
    this.pending -= 1;
    if (this.pending > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Jobs queued or running. */
  get size(): number {
    return this.pending;
  }

  /** Resolves once every queued job has settled. */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}

/** A counting semaphore: at most `limit` holders at once, the rest wait in FIFO order. */
export class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async use<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active += 1;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active -= 1;
    }
  }
}

/**
 * One slot of a Semaphore, held by one piece of heavy work, that can be let go of and taken back
 * in the middle of it. The Semaphore hands slots out through use(); a slot here is a use() whose
 * work is waiting to be released, so the pool's order and bound stay the Semaphore's own.
 */
export class PoolSlot {
  private give: (() => void) | undefined;

  private constructor(private readonly pool: Semaphore) {}

  static async take(pool: Semaphore): Promise<PoolSlot> {
    const slot = new PoolSlot(pool);
    await slot.acquire();
    return slot;
  }

  /** Lets the slot go; again, or without holding it, changes nothing. */
  release(): void {
    const give = this.give;
    this.give = undefined;
    give?.();
  }

  /** `work` without the slot, which is taken back (waiting for it as anyone would) afterwards. */
  async without<T>(work: () => Promise<T>): Promise<T> {
    this.release();
    try {
      return await work();
    } finally {
      await this.acquire();
    }
  }

  private acquire(): Promise<void> {
    return new Promise<void>((entered) => {
      void this.pool.use(() => {
        const held = new Promise<void>((release) => (this.give = release));
        entered();
        return held;
      });
    });
  }
}
