import { describe, expect, it } from "vitest";
import {
  admit,
  capText,
  capUsage,
  hasLimits,
  placeInQueue,
  repositoryKey,
  startable,
  type Limits,
  type LiveSlot,
  type QueuedStart,
} from "../../src/routing/limits.js";

const live = (...pairs: [string, string][]): LiveSlot[] => pairs.map(([ref, harness]) => ({ ref, harness }));
const queued = live as (...pairs: [string, string][]) => QueuedStart[];
const two: Limits = { maxLiveSessions: 2, perHarness: {} };
const codexOne: Limits = { perHarness: { codex: 1 } };
const apiOne: Limits = { perHarness: {}, perRepository: { "Acme/API": 1, demo: 2 } };
const paused = (ref: string, harness = "claude"): QueuedStart => ({ ref, harness, paused: true });
/** Sessions another daemon on the shared database runs. */
const elsewhere = (...pairs: [string, string][]): LiveSlot[] => live(...pairs).map((slot) => ({ ...slot, here: false }));
const oneHere: Limits = { perHarness: {}, perDaemon: 1 };
const fleetThreeOneHere: Limits = { maxLiveSessions: 3, perHarness: {}, perDaemon: 1 };
const urgent = (ref: string, harness = "claude"): QueuedStart => ({ ref, harness, priority: true });

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
      "a repository at its cap holds its items (named without regard to case)",
      apiOne,
      live(["github:acme/api#1", "claude"]),
      [],
      { ref: "github:acme/api#2", harness: "claude" },
      { kind: "queue", ahead: 0, cap: { cap: "perRepository", repository: "acme/api", limit: 1 } },
    ],
    [
      "another repository is not held by it",
      apiOne,
      live(["github:acme/api#1", "claude"]),
      [],
      { ref: "github:acme/web#2", harness: "claude" },
      { kind: "start" },
    ],
    [
      "a local project is capped by its name",
      apiOne,
      live(["local:demo#1", "claude"], ["local:demo#2", "claude"]),
      [],
      { ref: "local:demo#3", harness: "claude" },
      { kind: "queue", ahead: 0, cap: { cap: "perRepository", repository: "demo", limit: 2 } },
    ],
    ["a paused start ahead keeps its place but takes no slot", two, live(["a", "claude"]), [paused("q1")], { ref: "c", harness: "claude" }, { kind: "start" }],
    [
      "a priority newcomer waits only behind the priority starts",
      two,
      live(["a", "claude"], ["b", "claude"]),
      [urgent("u1"), ...queued(["q1", "claude"], ["q2", "claude"])],
      urgent("c"),
      { kind: "queue", ahead: 1, cap: { cap: "maxLiveSessions", limit: 2 } },
    ],
    [
      "a priority newcomer takes a free slot before the starts without priority",
      two,
      live(["a", "claude"]),
      queued(["q1", "claude"]),
      urgent("c"),
      { kind: "start" },
    ],
    [
      "perDaemon: another daemon's sessions leave this one's capacity free",
      oneHere,
      elsewhere(["a", "claude"], ["b", "claude"]),
      [],
      { ref: "c", harness: "claude" },
      { kind: "start" },
    ],
    [
      "perDaemon: this daemon at its capacity queues the start for another",
      oneHere,
      [...live(["a", "claude"]), ...elsewhere(["b", "claude"])],
      [],
      { ref: "c", harness: "claude" },
      { kind: "queue", ahead: 0, cap: { cap: "perDaemon", limit: 1 } },
    ],
    [
      "perDaemon with room here, but the fleet's cap counts every daemon's sessions",
      fleetThreeOneHere,
      elsewhere(["a", "claude"], ["b", "claude"], ["d", "claude"]),
      [],
      { ref: "c", harness: "claude" },
      { kind: "queue", ahead: 0, cap: { cap: "maxLiveSessions", limit: 3 } },
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
    ["a paused entry is passed over and keeps its place", two, live(["a", "claude"]), [paused("q1"), ...queued(["q2", "claude"])], ["q2"]],
    [
      "a repository at its cap is skipped, another repository's start goes",
      apiOne,
      live(["github:acme/api#1", "claude"]),
      queued(["github:acme/api#2", "claude"], ["local:demo#1", "claude"]),
      ["local:demo#1"],
    ],
    ["perDaemon: a daemon at its capacity takes nothing from the queue", oneHere, live(["a", "claude"]), queued(["q1", "claude"]), []],
    ["perDaemon: a daemon with room takes as many as it has room for", oneHere, elsewhere(["a", "claude"]), queued(["q1", "claude"], ["q2", "claude"]), ["q1"]],
    [
      "perDaemon and the fleet's cap: room here, but only one slot left in the fleet",
      { maxLiveSessions: 3, perHarness: {}, perDaemon: 2 },
      elsewhere(["a", "claude"], ["b", "claude"]),
      queued(["q1", "claude"], ["q2", "claude"]),
      ["q1"],
    ],
  ])("%s", (_name, limits, liveSlots, queue, expected) => {
    expect(startable(limits, liveSlots, queue).map((entry) => entry.ref)).toEqual(expected);
  });
});

describe("placeInQueue: FIFO within priority, priority first", () => {
  it.each<[string, QueuedStart[], boolean, number]>([
    ["without priority: at the end", [urgent("u1"), ...queued(["q1", "claude"])], false, 2],
    ["with priority: after the last priority start", [urgent("u1"), ...queued(["q1", "claude"]), urgent("u2")], true, 3],
    ["with priority and none before it: first", queued(["q1", "claude"], ["q2", "claude"]), true, 0],
    ["an empty queue", [], true, 0],
  ])("%s", (_name, queue, priority, expected) => {
    expect(placeInQueue(queue, priority)).toBe(expected);
  });
});

describe("repositoryKey: the perRepository key of a ref", () => {
  it.each<[string, string | undefined]>([
    ["github:Acme/API#3", "acme/api"],
    ["github:ghe.example.com/acme/api#3", "ghe.example.com/acme/api"],
    ["local:demo#1", "demo"],
    ["not a ref", undefined],
  ])("%s → %s", (ref, expected) => {
    expect(repositoryKey(ref)).toBe(expected);
  });
});

describe("the caps in words and counts", () => {
  it("names each cap by its config key, with what is live under it", () => {
    expect(hasLimits({ perHarness: {} })).toBe(false);
    expect(hasLimits(codexOne)).toBe(true);
    expect(capText({ cap: "maxLiveSessions", limit: 2 })).toBe("routing.limits.maxLiveSessions 2");
    expect(capText({ cap: "perHarness", harness: "codex", limit: 1 })).toBe("routing.limits.perHarness.codex 1");
    expect(capText({ cap: "perRepository", repository: "acme/api", limit: 1 })).toBe("routing.limits.perRepository.acme/api 1");
    expect(hasLimits({ perHarness: {}, perRepository: { demo: 1 } })).toBe(true);
    expect(hasLimits(oneHere)).toBe(true);
    expect(capText({ cap: "perDaemon", limit: 1 })).toBe("routing.limits.perDaemon 1 (this daemon's capacity)");
    expect(capUsage(apiOne, live(["github:acme/api#1", "codex"], ["local:demo#4", "claude"], ["local:other#1", "claude"]))).toEqual([
      { cap: "perRepository.Acme/API", live: 1, limit: 1 },
      { cap: "perRepository.demo", live: 1, limit: 2 },
    ]);
    expect(capUsage({ maxLiveSessions: 3, perHarness: { codex: 1 } }, live(["a", "codex"], ["b", "claude"]))).toEqual([
      { cap: "maxLiveSessions", live: 2, limit: 3 },
      { cap: "perHarness.codex", live: 1, limit: 1 },
    ]);
  });
});
