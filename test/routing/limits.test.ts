import { describe, expect, it } from "vitest";
import { admit, capText, capUsage, hasLimits, startable, type Limits, type LiveSlot, type QueuedStart } from "../../src/routing/limits.js";

const live = (...pairs: [string, string][]): LiveSlot[] => pairs.map(([ref, harness]) => ({ ref, harness }));
const queued = live as (...pairs: [string, string][]) => QueuedStart[];
const two: Limits = { maxLiveSessions: 2, perHarness: {} };
const codexOne: Limits = { perHarness: { codex: 1 } };

describe("admit: start now, or wait in the queue behind the starts ahead", () => {
  it.each<[string, Limits, LiveSlot[], QueuedStart[], QueuedStart, ReturnType<typeof admit>]>([
    ["no caps: always starts", { perHarness: {} }, live(["a", "claude"], ["b", "claude"]), [], { ref: "c", harness: "claude" }, { kind: "start" }],
    ["under the cap", two, live(["a", "claude"]), [], { ref: "c", harness: "claude" }, { kind: "start" }],
    [
      "at the cap: queued, nobody ahead",
      two,
      live(["a", "claude"], ["b", "claude"]),
      [],
      { ref: "c", harness: "claude" },
      { kind: "queue", ahead: 0, cap: { cap: "maxLiveSessions", limit: 2 } },
    ],
    [
      "a newcomer queues behind the whole queue, even with a slot free (the head takes it)",
      two,
      live(["a", "claude"]),
      queued(["q1", "claude"]),
      { ref: "c", harness: "claude" },
      { kind: "queue", ahead: 1, cap: { cap: "maxLiveSessions", limit: 2 } },
    ],
    [
      "the head of the queue takes a freed slot",
      two,
      live(["a", "claude"]),
      queued(["q1", "claude"], ["q2", "claude"]),
      { ref: "q1", harness: "claude" },
      { kind: "start" },
    ],
    [
      "the second in the queue waits while the first takes the only slot",
      two,
      live(["a", "claude"]),
      queued(["q1", "claude"], ["q2", "claude"]),
      { ref: "q2", harness: "claude" },
      { kind: "queue", ahead: 1, cap: { cap: "maxLiveSessions", limit: 2 } },
    ],
    [
      "a per-harness cap holds only its harness",
      codexOne,
      live(["a", "codex"]),
      [],
      { ref: "c", harness: "codex" },
      { kind: "queue", ahead: 0, cap: { cap: "perHarness", harness: "codex", limit: 1 } },
    ],
    [
      "a start no full cap concerns passes a queued start another cap holds",
      codexOne,
      live(["a", "codex"]),
      queued(["q1", "codex"]),
      { ref: "c", harness: "claude" },
      { kind: "start" },
    ],
    [
      "the item's own live session is not counted against it",
      two,
      live(["a", "claude"], ["c", "claude"]),
      [],
      { ref: "c", harness: "claude" },
      { kind: "start" },
    ],
  ])("%s", (_name, limits, liveSlots, queue, candidate, expected) => {
    expect(admit(limits, liveSlots, queue, candidate)).toEqual(expected);
  });
});

describe("startable: which queued starts a freed slot lets through, in order", () => {
  it.each<[string, Limits, LiveSlot[], QueuedStart[], string[]]>([
    ["none free", two, live(["a", "claude"], ["b", "claude"]), queued(["q1", "claude"]), []],
    ["one free: the head", two, live(["a", "claude"]), queued(["q1", "claude"], ["q2", "claude"]), ["q1"]],
    ["two free: both, in order", two, [], queued(["q1", "claude"], ["q2", "claude"], ["q3", "claude"]), ["q1", "q2"]],
    ["a harness at its cap is skipped, the next one goes", codexOne, live(["a", "codex"]), queued(["q1", "codex"], ["q2", "claude"]), ["q2"]],
    ["an entry already live is not started twice", two, live(["q1", "claude"]), queued(["q1", "claude"], ["q2", "claude"]), ["q2"]],
  ])("%s", (_name, limits, liveSlots, queue, expected) => {
    expect(startable(limits, liveSlots, queue).map((entry) => entry.ref)).toEqual(expected);
  });
});

describe("the caps in words and counts", () => {
  it("names each cap by its config key, with what is live under it", () => {
    expect(hasLimits({ perHarness: {} })).toBe(false);
    expect(hasLimits(codexOne)).toBe(true);
    expect(capText({ cap: "maxLiveSessions", limit: 2 })).toBe("routing.limits.maxLiveSessions 2");
    expect(capText({ cap: "perHarness", harness: "codex", limit: 1 })).toBe("routing.limits.perHarness.codex 1");
    expect(capUsage({ maxLiveSessions: 3, perHarness: { codex: 1 } }, live(["a", "codex"], ["b", "claude"]))).toEqual([
      { cap: "maxLiveSessions", live: 2, limit: 3 },
      { cap: "perHarness.codex", live: 1, limit: 1 },
    ]);
  });
});
