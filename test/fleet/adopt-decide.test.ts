import { describe, expect, it } from "vitest";
import { adoptGraceProblem, adoptionDecision, watchdogReactionMs, watchdogVerdict } from "../../src/fleet/adopt-decide.js";

const NOW = new Date("2026-12-02T12:00:00Z");
const at = (seconds: number): Date => new Date(NOW.getTime() + seconds * 1000);

describe("watchdogVerdict", () => {
  it.each([
    [
      "its owner holds the lease: kept, the deadline at the lease's end as of the look's start",
      { owner: "box-a", remainingMs: 30_000 },
      5_000,
      1_000,
      1_200,
      { keep: true, deadlineMs: 31_000 },
    ],
    ["a renewal never pulls the deadline back", { owner: "box-a", remainingMs: 1_000 }, 5_000, 1_000, 1_200, { keep: true, deadlineMs: 5_000 }],
    ["the lease ran out", { owner: "box-a", remainingMs: -10 }, 5_000, 6_000, 6_100, { end: 'the lease of "box-a" lapsed' }],
    ["another daemon took it", { owner: "box-b", remainingMs: 30_000 }, 5_000, 1_000, 1_200, { end: 'the daemon "box-b" owns the item now' }],
    ["nobody holds it", { owner: undefined }, 5_000, 1_000, 1_200, { end: "the item has no lease" }],
    ["a failed read before the last known end: kept", { failed: "timeout" }, 5_000, 1_000, 4_000, { keep: true, deadlineMs: 5_000 }],
  ] as const)("%s", (_, look, deadline, started, now, verdict) => {
    expect(watchdogVerdict(look, "box-a", deadline, started, now)).toEqual(verdict);
  });

  it("fences when the database cannot be read past the last known end", () => {
    expect(watchdogVerdict({ failed: "connection refused" }, "box-a", 5_000, 5_000, 5_001)).toEqual({ end: expect.stringContaining("connection refused") });
  });
});

describe("the adoption grace", () => {
  it("is the look, its read, the kill grace and the settle", () => {
    expect(watchdogReactionMs(5_000)).toBe(11_000);
  });

  it.each([
    [15, 5, undefined],
    [11, 5, "not longer"],
    [12, 5, undefined],
    [5, 0, "not longer"],
  ])("grace %s s with a kill grace of %s s: %s", (grace, kill, problem) => {
    const found = adoptGraceProblem(grace, kill);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toContain(problem);
  });

  it("says what to set", () => {
    expect(adoptGraceProblem(10, 5)).toMatch(/raise state\.adoptGraceSeconds above 11 or lower the kill grace/);
  });
});

describe("adoptionDecision", () => {
  const lease = (owner: string, expiresInSeconds: number): { owner: string; expiresAt: Date } => ({ owner, expiresAt: at(expiresInSeconds) });
  it.each([
    ["a live lease of another daemon", lease("box-a", 10), "active", "wait"],
    ["lapsed, but within the grace", lease("box-a", -10), "active", "wait"],
    ["lapsed past the grace, an active session", lease("box-a", -16), "active", "adopt"],
    ["exactly at the grace's end", lease("box-a", -15), "active", "adopt"],
    ["lapsed past the grace, a paused session: stays paused", lease("box-a", -60), "paused", "paused"],
    ["no live session", lease("box-a", -60), undefined, "leave"],
    ["its own lease", lease("box-b", -60), "active", "leave"],
    ["no lease at all", undefined, "active", "leave"],
  ] as const)("%s: %s", (_, row, session, decision) => {
    expect(adoptionDecision(row, session, "box-b", NOW, 15_000)).toBe(decision);
  });
});
