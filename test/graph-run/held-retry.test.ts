import { afterEach, describe, expect, it, vi } from "vitest";
import { HeldAnswerRetry } from "../../src/graph-run/held-retry.js";

/** The daemon asking again for its login while gate answers are held: a backoff, doubling to a bound, reset once none are held. */
describe("HeldAnswerRetry", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("asks after firstMs, doubles while answers stay held, caps at maxMs, and starts over once none are", async () => {
    vi.useFakeTimers();
    const held = [true, true, true, true, false];
    const at: number[] = [];
    const start = Date.now();
    const retry = new HeldAnswerRetry(
      async () => {
        at.push(Date.now() - start);
        return held.shift() ?? false;
      },
      { firstMs: 100, maxMs: 400 },
      (error) => {
        throw error;
      },
    );
    retry.arm();
    retry.arm(); // one timer, however often it is armed
    await vi.advanceTimersByTimeAsync(100 + 200 + 400 + 400 + 400);
    expect(at).toEqual([100, 300, 700, 1100, 1500]);
    expect(vi.getTimerCount()).toBe(0);
    // Held again later: the first wait again.
    retry.arm();
    await vi.advanceTimersByTimeAsync(100);
    expect(at).toHaveLength(6);
    retry.stop();
  });

  it("keeps asking after an attempt that threw, and stop() ends it", async () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    let calls = 0;
    const retry = new HeldAnswerRetry(
      async () => {
        calls++;
        throw new Error("the store is unreadable");
      },
      { firstMs: 50, maxMs: 50 },
      (error) => errors.push(error),
    );
    retry.arm();
    await vi.advanceTimersByTimeAsync(150);
    expect(calls).toBe(3);
    expect(errors).toHaveLength(3);
    retry.stop();
    await vi.advanceTimersByTimeAsync(500);
    expect(calls).toBe(3);
    expect(vi.getTimerCount()).toBe(0);
    retry.arm();
    expect(vi.getTimerCount()).toBe(0);
  });
});
