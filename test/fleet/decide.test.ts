import { describe, expect, it } from "vitest";
import { fleetBounds, leaseDecision, lostAfterBeat, nameDecision, reclaimCandidates, reclaimDecision, releasable } from "../../src/fleet/decide.js";
import type { DaemonRow, LeaseRow } from "../../src/state/postgres/leases.js";

const NOW = new Date("2026-12-02T12:00:00Z");
const ago = (seconds: number): Date => new Date(NOW.getTime() - seconds * 1000);
const daemon = (over: Partial<DaemonRow> = {}): DaemonRow => ({
  name: "box-a",
  host: "host-a",
  pid: 42,
  instance: "i-1",
  tmuxSocket: null,
  startedAt: ago(600),
  heartbeatAt: ago(5),
  stoppedAt: null,
  capacity: null,
  ...over,
});
const lease = (owner: string, expiresInSeconds: number): LeaseRow => ({ item: "local:demo#1", owner, takenAt: ago(60), expiresAt: ago(-expiresInSeconds) });

describe("nameDecision", () => {
  it.each([
    ["no daemon ever had the name", undefined, true],
    ["its daemon stopped", daemon({ stoppedAt: ago(1) }), true],
    ["its daemon has not beaten for longer than a lease", daemon({ heartbeatAt: ago(31) }), true],
    ["its daemon beats", daemon({ heartbeatAt: ago(5) }), false],
  ])("%s: taken = %s", (_, row, taken) => {
    const decided = nameDecision(row, "box-a", NOW, 30_000);
    expect("take" in decided).toBe(taken);
  });

  it("says who has the name and how to fix it", () => {
    const decided = nameDecision(daemon(), "box-a", NOW, 30_000);
    expect(decided).toEqual({ refuse: expect.stringContaining('a daemon named "box-a" already runs on this database (host host-a, pid 42') });
    expect(JSON.stringify(decided)).toContain("state.daemonName");
  });
});

describe("leaseDecision", () => {
  it.each([
    ["a free item is taken", undefined, { kind: "taken" }],
    ["its own lease is renewed, even lapsed", lease("me", -10), { kind: "renewed" }],
    ["a lapsed lease of another is taken from it", lease("other", -1), { kind: "taken", from: "other" }],
    ["a lease expiring now is lapsed", lease("other", 0), { kind: "taken", from: "other" }],
    ["a live lease of another is left to it", lease("other", 20), { kind: "elsewhere", owner: "other", expiresAt: ago(-20) }],
  ])("%s", (_, row, expected) => {
    expect(leaseDecision(row, "me", NOW)).toEqual(expected);
  });

  it.each([
    ["lapsed within the adoption grace: still the lost owner's", lease("other", -10), { kind: "elsewhere", owner: "other", expiresAt: ago(10) }],
    ["lapsed past the grace: taken", lease("other", -15), { kind: "taken", from: "other" }],
    ["its own, within the grace: renewed", lease("me", -10), { kind: "renewed" }],
  ])("with a grace of 15 s, %s", (_, row, expected) => {
    expect(leaseDecision(row, "me", NOW, 15_000)).toEqual(expected);
  });

  it("carries the grace in the bounds", () => {
    expect(fleetBounds({ leaseSeconds: 30, heartbeatSeconds: 10, adoptGraceSeconds: 15 })).toEqual({ leaseMs: 30_000, heartbeatMs: 10_000, graceMs: 15_000 });
  });
});

describe("reclaimDecision", () => {
  it.each([
    ["its own lease", lease("me", 5), false, "keep"],
    ["its own lease, session here", lease("me", -5), true, "keep"],
    ["no lease, the session runs here", undefined, true, "take"],
    ["no lease, the session runs elsewhere", undefined, false, "leave"],
    ["another's lease, the session runs here: stale", lease("other", 5), true, "stale"],
    ["another's lapsed lease, the session runs here: stale", lease("other", -5), true, "stale"],
    ["another's lapsed lease, elsewhere: not adopted", lease("other", -5), false, "leave"],
  ] as const)("%s → %s", (_, row, here, expected) => {
    expect(reclaimDecision(row, "me", here)).toBe(expected);
  });

  // A restart after kill -9: the item's record is no longer live (adopted by another daemon) or only its lease says so.
  it.each([
    ["not live, another's lease, the session runs here: stale", lease("other", 5), true, "stale"],
    ["not live, no lease (its adopter let it go), the session runs here: stale", undefined, true, "stale"],
    ["not live, another's lease, elsewhere", lease("other", 5), false, "leave"],
    ["not live, no lease, elsewhere", undefined, false, "leave"],
    ["not live, its own lease: nothing to keep", lease("me", 5), true, "leave"],
  ] as const)("%s → %s", (_, row, here, expected) => {
    expect(reclaimDecision(row, "me", here, false)).toBe(expected);
  });
});

describe("reclaimCandidates", () => {
  const held = (item: string, owner: string) => ({ item, owner });
  it.each([
    ["nothing at all", [], [], [], []],
    [
      "the live records",
      ["b", "a"],
      [],
      [],
      [
        ["a", true],
        ["b", true],
      ],
    ],
    ["an adopted record", [], ["a"], [], [["a", false]]],
    ["another daemon's lease, no record here", [], [], [held("a", "other")], [["a", false]]],
    ["its own lease, no record: not looked at", [], [], [held("a", "me")], []],
    ["a live record another daemon holds, once", ["a"], ["a"], [held("a", "other")], [["a", true]]],
  ] as const)("%s", (_, live, adopted, leases, expected) => {
    expect(reclaimCandidates(live, adopted, leases, "me").map(({ item, live: isLive }) => [item, isLive])).toEqual(expected);
  });
});

describe("the heartbeat's sums", () => {
  it("finds the held leases a beat did not renew", () => {
    expect(lostAfterBeat(["a", "b", "c"], ["c", "a", "z"])).toEqual(["b"]);
    expect(lostAfterBeat([], ["a"])).toEqual([]);
  });

  it("gives up only idle leases of items with no live session", () => {
    const used = new Map([
      ["idle", 0],
      ["recent", 25_000],
      ["live", 0],
    ]);
    expect(releasable(used, new Set(["live"]), 30_000, 30_000)).toEqual(["idle"]);
  });

  it("wants three beats in a lease", () => {
    expect(fleetBounds({ leaseSeconds: 30, heartbeatSeconds: 10 })).toEqual({ leaseMs: 30_000, heartbeatMs: 10_000 });
    expect(fleetBounds({ leaseSeconds: 30, heartbeatSeconds: 11 })).toEqual({ problem: expect.stringContaining("state.heartbeatSeconds (11)") });
  });
});
