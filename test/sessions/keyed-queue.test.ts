import { describe, expect, it } from "vitest";
import { KeyedQueue, Semaphore } from "../../src/sessions/keyed-queue.js";

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe("KeyedQueue", () => {
  it("runs one key's jobs in arrival order, one at a time", async () => {
    const queue = new KeyedQueue();
    const order: string[] = [];
    const gate = deferred();
    const first = queue.run("a", async () => {
      order.push("a1 start");
      await gate.promise;
      order.push("a1 end");
    });
    const second = queue.run("a", async () => {
      order.push("a2");
    });
    await Promise.resolve();
    expect(order).toEqual(["a1 start"]);
    gate.resolve();
    await Promise.all([first, second]);
    expect(order).toEqual(["a1 start", "a1 end", "a2"]);
  });

  it("does not hold one key behind another", async () => {
    const queue = new KeyedQueue();
    const gate = deferred();
    const slow = queue.run("slow", () => gate.promise);
    await expect(queue.run("fast", async () => "done")).resolves.toBe("done");
    gate.resolve();
    await slow;
  });

  it("keeps going after a failed job and reports idleness", async () => {
    const queue = new KeyedQueue();
    const failed = queue.run("a", () => Promise.reject(new Error("boom")));
    const next = queue.run("a", async () => 2);
    await expect(failed).rejects.toThrow("boom");
    await expect(next).resolves.toBe(2);
    await queue.idle();
    expect(queue.size).toBe(0);
  });
});

describe("Semaphore", () => {
  it("admits at most `limit` holders and hands slots over in order", async () => {
    const semaphore = new Semaphore(2);
    let active = 0;
    let peak = 0;
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const order: number[] = [];
    const runs = gates.map((gate, index) =>
      semaphore.use(async () => {
        active += 1;
        peak = Math.max(peak, active);
        order.push(index);
        await gate.promise;
        active -= 1;
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([0, 1]);
    for (const gate of gates) gate.resolve();
    await Promise.all(runs);
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3]);
  });
});
