/**
 * The observe-only `loop.*` events, off the dispatch path: a run's events are delivered one after
 * another in the order they were queued, each run on its own chain, so a hook that takes 30 s
 * holds up that run's later events and nothing else — never an advance, a claim's answer or
 * another run. A run with `bound` events waiting drops the next one (reported through `dropped`)
 * rather than growing without end behind a hook that never answers. `drain()` (the daemon's
 * shutdown) waits for every chain, events queued meanwhile included.
 */

/** How many events one run may have waiting: past it, the next is dropped. */
export const LOOP_QUEUE_BOUND = 256;

export interface LoopQueueItem {
  /** The run the event belongs to: its chain. */
  readonly run: string;
}

interface Chain {
  waiting: number;
  tail: Promise<void>;
}

export class LoopQueue<T extends LoopQueueItem> {
  private readonly chains = new Map<string, Chain>();

  constructor(
    /** Delivers one event; a rejection is reported as `failed` and the chain goes on. */
    private readonly handOn: (item: T) => Promise<void>,
    private readonly dropped: (item: T, waiting: number) => void,
    private readonly failed: (item: T, error: unknown) => void = () => undefined,
    private readonly bound: number = LOOP_QUEUE_BOUND,
  ) {}

  /** Queues the event behind its run's earlier ones; false when the run's queue was full and it was dropped. */
  enqueue(item: T): boolean {
    const chain = this.chains.get(item.run) ?? { waiting: 0, tail: Promise.resolve() };
    if (chain.waiting >= this.bound) {
      this.safely(() => this.dropped(item, chain.waiting));
      return false;
    }
    chain.waiting += 1;
    chain.tail = chain.tail.then(async () => {
      try {
        await this.handOn(item);
      } catch (error) {
        this.safely(() => this.failed(item, error));
      } finally {
        chain.waiting -= 1;
        if (chain.waiting === 0 && this.chains.get(item.run) === chain) this.chains.delete(item.run);
      }
    });
    this.chains.set(item.run, chain);
    return true;
  }

  /** Events queued and not yet delivered, over every run. */
  get size(): number {
    let waiting = 0;
    for (const chain of this.chains.values()) waiting += chain.waiting;
    return waiting;
  }

  /** Resolves once every queued event was delivered (or failed), those queued while it waits included. */
  async drain(): Promise<void> {
    while (this.chains.size > 0) await Promise.all([...this.chains.values()].map((chain) => chain.tail));
  }

  private safely(report: () => void): void {
    try {
      report();
    } catch {
      // A report that throws must not break the chain it reports on.
    }
  }
}
