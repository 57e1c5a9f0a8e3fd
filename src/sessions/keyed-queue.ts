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
