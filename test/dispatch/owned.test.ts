import { describe, expect, it } from "vitest";
import { whereOwned } from "../../src/dispatch/owned.js";
import type { TakeoverOutcome } from "../../src/dispatch/owned.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { OwnedElsewhereError } from "../../src/fleet/ownership.js";
import type { Ownership, TakenLease } from "../../src/fleet/ownership.js";

const ITEM = "local:demo#1";
const NOW = new Date("2026-12-03T08:00:00Z");

/** An ownership whose takes answer `answers` in turn: the leases taken from a lost daemon, or the owner that refuses. */
function ownership(answers: (readonly TakenLease[] | string)[]): Ownership & { takes: number } {
  const subject = {
    name: "box-b",
    shared: true,
    takes: 0,
    holds: () => true,
    acquire: async () => {
      const answer = answers[subject.takes++] ?? [];
      if (typeof answer === "string") throw new OwnedElsewhereError(ITEM, answer, undefined, NOW);
      return answer;
    },
  };
  return subject;
}

describe("whereOwned with a takeover", () => {
  const fromLost = [{ item: ITEM, from: "box-a" }];

  it.each<[string, TakeoverOutcome, (readonly TakenLease[] | string)[], boolean, string]>([
    ["adopted here: the job runs on the adopted session", "adopted", [fromLost, []], true, "job"],
    ["nothing to adopt (no active session): the job runs", "none", [fromLost, []], true, "job"],
    ["adopted into the start queue: an event waits, tried again later", "queued", [fromLost], true, "held"],
    ["adopted into the start queue, no event: taken again, and the job runs", "queued", [fromLost, []], false, "job"],
    ["adopted into the start queue and taken by the daemon with room: its work now", "queued", [fromLost, "box-c"], false, "elsewhere"],
  ])("%s", async (_case, outcome, answers, isEvent, expected) => {
    const owner = ownership(answers);
    const adopted: string[] = [];
    const answer = await whereOwned(
      owner,
      new MemoryEventSink(),
      [ITEM],
      async () => "job",
      { value: "elsewhere", ...(isEvent ? { work: "event" as const, held: () => "held" } : {}) },
      async (taken) => {
        adopted.push(`${taken.item} from ${taken.from}`);
        return outcome;
      },
    );
    expect(answer).toBe(expected);
    expect(adopted).toEqual([`${ITEM} from box-a`]);
    expect(owner.takes).toBe(answers.length);
  });

  it("runs no takeover for a lease renewed or taken free", async () => {
    const owner = ownership([[]]);
    let called = false;
    const answer = await whereOwned(
      owner,
      new MemoryEventSink(),
      [ITEM],
      async () => "job",
      undefined,
      async () => {
        called = true;
        return "adopted";
      },
    );
    expect(answer).toBe("job");
    expect(called).toBe(false);
  });
});
