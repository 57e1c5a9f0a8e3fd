import { describe, expect, it } from "vitest";
import { MAX_HOPS, commandRoute, eventKey, fleetView, inboxAnnouncement, inboxTurn } from "../../src/forwarding/decide.js";
import type { DaemonRow, LeaseRow } from "../../src/state/postgres/leases.js";

const now = new Date("2026-12-02T12:00:00Z");
const leaseMs = 30_000;
const ago = (ms: number): Date => new Date(now.getTime() - ms);
const daemon = (name: string, beatMsAgo: number, stopped = false): DaemonRow => ({
  name,
  host: `${name}.example`,
  pid: 1,
  instance: `${name}-1`,
  tmuxSocket: null,
  startedAt: ago(3_600_000),
  heartbeatAt: ago(beatMsAgo),
  stoppedAt: stopped ? ago(beatMsAgo) : null,
  capacity: null,
});
const lease = (item: string, owner: string, expiresInMs: number): LeaseRow => ({
  item,
  owner,
  takenAt: ago(60_000),
  expiresAt: new Date(now.getTime() + expiresInMs),
});
const view = (daemons: DaemonRow[], leases: LeaseRow[]) => fleetView({ daemons, leases, now }, leaseMs);
const ITEM = "local:demo#1";

describe("eventKey", () => {
  it("keys an event by its delivery id, so one delivery is one row wherever it arrives", () => {
    expect(eventKey("local:demo:7")).toBe("event:local:demo:7");
  });
});

describe("inboxTurn", () => {
  const row = (addressee: string, hops = 0) => ({ addressee, item: ITEM, hops });
  it.each([
    ["a row addressed to this daemon runs here", row("b"), [daemon("a", 1_000)], [], { kind: "run" }],
    ["its addressee holds the item's lease: wait", row("a"), [daemon("a", 60_000)], [lease(ITEM, "a", 5_000)], { kind: "wait" }],
    ["its addressee beats, lease or not: wait", row("a"), [daemon("a", 1_000)], [], { kind: "wait" }],
    ["addressee gone, nobody holds the item: this daemon takes it", row("a"), [daemon("a", 60_000)], [], { kind: "readdress", to: "b" }],
    ["addressee gone, its lease lapsed: this daemon takes it", row("a"), [daemon("a", 60_000)], [lease(ITEM, "a", -1)], { kind: "readdress", to: "b" }],
    ["addressee stopped and its lease lapsed: taken", row("a"), [daemon("a", 60_000, true)], [lease(ITEM, "a", -1)], { kind: "readdress", to: "b" }],
    [
      "addressee gone, a third live daemon owns the item: to it",
      row("a"),
      [daemon("a", 60_000), daemon("c", 1_000)],
      [lease(ITEM, "c", 5_000)],
      { kind: "readdress", to: "c" },
    ],
    [
      "addressee gone, the owner is gone too but its lease runs: wait",
      row("a"),
      [daemon("a", 60_000), daemon("c", 60_000)],
      [lease(ITEM, "c", 5_000)],
      { kind: "wait" },
    ],
    ["addressee gone, this daemon owns the item now: taken", row("a"), [daemon("a", 60_000)], [lease(ITEM, "b", 5_000)], { kind: "readdress", to: "b" }],
    ["handed on too often: given up", row("a", MAX_HOPS), [daemon("a", 60_000)], [], { kind: "give-up" }],
    ["an addressee never seen is gone", row("z"), [], [], { kind: "readdress", to: "b" }],
  ] as const)("%s", (_name, given, daemons, leases, expected) => {
    expect(inboxTurn(given, "b", view([...daemons], [...leases]))).toEqual(expected);
  });
});

describe("inboxTurn with state.adoptGraceSeconds", () => {
  const graced = (leases: LeaseRow[]) => fleetView({ daemons: [daemon("a", 60_000)], leases, now }, leaseMs, 15_000);
  it("leaves a row of a gone daemon while its lapsed lease is within the grace, as leaseDecision leaves the item", () => {
    expect(inboxTurn({ addressee: "a", item: ITEM, hops: 0 }, "b", graced([lease(ITEM, "a", -5_000)]))).toEqual({ kind: "wait" });
  });
  it("takes it past the grace", () => {
    expect(inboxTurn({ addressee: "a", item: ITEM, hops: 0 }, "b", graced([lease(ITEM, "a", -16_000)]))).toEqual({ kind: "readdress", to: "b" });
  });
  it("sends a command to the owner while its lease is within the grace", () => {
    expect(commandRoute(ITEM, "b", graced([lease(ITEM, "a", -5_000)]))).toEqual({ kind: "owner", owner: "a", host: "a.example" });
  });
});

describe("commandRoute", () => {
  it.each([
    ["a free item runs here", [], { kind: "here" }],
    ["an item this host's daemon owns runs here", [lease(ITEM, "b", 5_000)], { kind: "here" }],
    ["a lapsed lease runs here", [lease(ITEM, "a", -1)], { kind: "here" }],
    ["an item another live daemon owns goes to it, with its host", [lease(ITEM, "a", 5_000)], { kind: "owner", owner: "a", host: "a.example" }],
  ] as const)("%s", (_name, leases, expected) => {
    expect(commandRoute(ITEM, "b", view([daemon("a", 1_000), daemon("b", 1_000)], [...leases]))).toEqual(expected);
  });
});

describe("inboxAnnouncement", () => {
  it.each([
    ["the trigger's payload", '{"id" : 7, "addressee" : "box-a", "done" : false}', { id: "7", addressee: "box-a", done: false }],
    ["an answered row", '{"id" : 8, "addressee" : "box-a", "done" : true}', { id: "8", addressee: "box-a", done: true }],
    ["not JSON", "hello", undefined],
    ["not an object", "42", undefined],
    ["a field missing", '{"id" : 7, "done" : false}', undefined],
    ["no payload", undefined, undefined],
  ] as const)("%s", (_name, payload, expected) => {
    expect(inboxAnnouncement(payload)).toEqual(expected);
  });
});
