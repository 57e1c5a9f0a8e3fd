import { describe, expect, it } from "vitest";
import { lookEvery } from "../../src/supervision/looks.js";
import { waitFor } from "../support/wait.js";

/** The daemon's periodic looks (supervision/looks.ts): a run of failures reported once, again after a success, the loop gone at abort. */

describe("lookEvery", () => {
  it("reports a run of failures once, again after a success, and ends at abort", async () => {
    const outcomes = [new Error("queue damaged"), new Error("queue damaged"), undefined, new Error("gone again"), new Error("gone again")];
    let looks = 0;
    const stop = new AbortController();
    const look = async (): Promise<void> => {
      const outcome = outcomes[looks];
      looks += 1;
      if (looks === outcomes.length) stop.abort();
      if (outcome !== undefined) throw outcome;
    };
    const warned: string[] = [];
    await lookEvery(1, look, stop.signal, (message) => warned.push(message), "could not start the queued sessions");
    expect(looks).toBe(outcomes.length);
    expect(warned).toEqual(["could not start the queued sessions: queue damaged", "could not start the queued sessions: gone again"]);
  });

  it("waits its interval before the first look, and an abort during the wait ends it without a look", async () => {
    const stop = new AbortController();
    let looks = 0;
    const running = lookEvery(
      60_000,
      async () => {
        looks += 1;
      },
      stop.signal,
      () => undefined,
      "never",
    );
    let ended = false;
    void running.then(() => (ended = true));
    stop.abort();
    await waitFor("the loop to end at the abort", () => ended);
    expect(looks).toBe(0);
  });
});
