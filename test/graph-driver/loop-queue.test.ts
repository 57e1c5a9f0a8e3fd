import { describe, expect, it } from "vitest";
import { LoopQueue } from "../../src/graph-driver/loop-queue.js";

interface Item {
  readonly run: string;
  readonly n: number;
}

/** A delivery the test releases by hand: nothing here waits on a clock. */
function gated(): { deliver: (item: Item) => Promise<void>; delivered: Item[]; release: () => void; started: Item[] } {
  const delivered: Item[] = [];
  const started: Item[] = [];
  const waiting: (() => void)[] = [];
  return {
    delivered,
    started,
    deliver: (item) =>
      new Promise<void>((resolve) => {
        started.push(item);
        waiting.push(() => {
          delivered.push(item);
          resolve();
        });
      }),
    release: () => {
      for (const next of waiting.splice(0)) next();
    },
  };
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("LoopQueue", () => {
  it("delivers one run's events in order, one at a time, and another run's beside them", async () => {
    const gate = gated();
    const queue = new LoopQueue<Item>(gate.deliver, () => undefined);
    queue.enqueue({ run: "a", n: 1 });
    queue.enqueue({ run: "a", n: 2 });
    queue.enqueue({ run: "b", n: 1 });
    await flush();
    // a's second waits for its first; b does not wait for a.
    expect(gate.started.map((item) => `${item.run}${item.n}`)).toEqual(["a1", "b1"]);
    expect(queue.size).toBe(3);
    gate.release();
    await flush();
    expect(gate.started.map((item) => `${item.run}${item.n}`)).toEqual(["a1", "b1", "a2"]);
    gate.release();
    await queue.drain();
    expect(gate.delivered.filter((item) => item.run === "a").map((item) => item.n)).toEqual([1, 2]);
    expect(queue.size).toBe(0);
  });

  it("drops past the bound with a report, and takes events again once there is room", async () => {
    const gate = gated();
    const dropped: [Item, number][] = [];
    const queue = new LoopQueue<Item>(gate.deliver, (item, waiting) => dropped.push([item, waiting]), undefined, 2);
    expect(queue.enqueue({ run: "a", n: 1 })).toBe(true);
    expect(queue.enqueue({ run: "a", n: 2 })).toBe(true);
    expect(queue.enqueue({ run: "a", n: 3 })).toBe(false);
    expect(queue.enqueue({ run: "b", n: 1 })).toBe(true);
    expect(dropped).toEqual([[{ run: "a", n: 3 }, 2]]);
    await flush();
    gate.release();
    await flush();
    expect(queue.enqueue({ run: "a", n: 4 })).toBe(true);
    const draining = queue.drain();
    for (let i = 0; i < 5; i += 1) {
      gate.release();
      await flush();
    }
    await draining;
    expect(gate.delivered.filter((item) => item.run === "a").map((item) => item.n)).toEqual([1, 2, 4]);
  });

  it("a delivery that fails is reported and the run's chain goes on", async () => {
    const failures: number[] = [];
    const delivered: number[] = [];
    const queue = new LoopQueue<Item>(
      async (item) => {
        if (item.n === 1) throw new Error("hook broke");
        delivered.push(item.n);
      },
      () => undefined,
      (item) => failures.push(item.n),
    );
    queue.enqueue({ run: "a", n: 1 });
    queue.enqueue({ run: "a", n: 2 });
    await queue.drain();
    expect(failures).toEqual([1]);
    expect(delivered).toEqual([2]);
  });

  it("drain waits for events queued while it waits", async () => {
    const delivered: number[] = [];
    const queue: LoopQueue<Item> = new LoopQueue<Item>(
      async (item) => {
        delivered.push(item.n);
        if (item.n === 1) queue.enqueue({ run: "b", n: 2 });
      },
      () => undefined,
    );
    queue.enqueue({ run: "a", n: 1 });
    await queue.drain();
    expect(delivered).toEqual([1, 2]);
  });
});
