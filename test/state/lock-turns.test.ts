import { describe, expect, it } from "vitest";
import { LockTurns } from "../../src/state/postgres/lock-turns.js";

/** Turns at one lock among a process's callers (state/postgres/lock-turns.ts), before any connection is taken. */

const timedOut = (): Error => new Error("timed out");
/** A key leaves the map in a callback of its last turn's end, after the awaits above have resumed. */
const afterCallbacks = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("LockTurns", () => {
  it("gives one key's turns in the order they were asked for, and another key's at once", async () => {
    const turns = new LockTurns();
    const order: string[] = [];
    const endFirst = await turns.take("a", 1_000, timedOut);
    const second = turns.take("a", 1_000, timedOut).then((end) => {
      order.push("a second");
      return end;
    });
    const third = turns.take("a", 1_000, timedOut).then((end) => {
      order.push("a third");
      end();
    });
    (await turns.take("b", 1_000, timedOut))();
    order.push("b");
    expect(order).toEqual(["b"]);
    endFirst();
    (await second)();
    await third;
    expect(order).toEqual(["b", "a second", "a third"]);
    await afterCallbacks();
    expect(turns.size).toBe(0);
  });

  it("throws when the turns before do not end in time, and a later caller still waits for them", async () => {
    const turns = new LockTurns();
    const endFirst = await turns.take("a", 1_000, timedOut);
    await expect(turns.take("a", 20, timedOut)).rejects.toThrow("timed out");
    let third = false;
    const after = turns.take("a", 1_000, timedOut).then((end) => {
      third = true;
      end();
    });
    // The caller that gave up is no longer in line, but the first still holds its turn.
    await Promise.resolve();
    expect(third).toBe(false);
    endFirst();
    await after;
    expect(third).toBe(true);
    await afterCallbacks();
    expect(turns.size).toBe(0);
  });
});
