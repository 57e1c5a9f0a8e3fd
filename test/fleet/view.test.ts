import { describe, expect, it } from "vitest";
import { daemonLoads, daemonSessionsCell, fleetSessionsLine, fleetView, heartbeatCell, lateDaemonProblem, liveOfCap } from "../../src/fleet/view.js";
import { capacityOf } from "../../src/state/postgres/leases.js";
import type { DaemonRow, LeaseRow } from "../../src/state/postgres/leases.js";

const NOW = new Date("2026-01-01T00:10:00Z");
const ago = (seconds: number): Date => new Date(NOW.getTime() - seconds * 1000);

function daemon(name: string, fields: Partial<DaemonRow> = {}): DaemonRow {
  return {
    name,
    host: `${name}.example`,
    pid: 7,
    instance: `${name}-1`,
    tmuxSocket: `sock-${name}`,
    startedAt: ago(600),
    heartbeatAt: ago(1),
    stoppedAt: null,
    capacity: null,
    ...fields,
  };
}

const lease = (item: string, owner: string, expiresIn: number): LeaseRow => ({
  item,
  owner,
  takenAt: ago(60),
  expiresAt: new Date(NOW.getTime() + expiresIn * 1000),
});

describe("fleetView", () => {
  const view = fleetView(
    {
      daemons: [
        daemon("a", { capacity: { perDaemon: 2 } }),
        daemon("b", { heartbeatAt: ago(25), capacity: { perDaemon: null } }),
        daemon("c", { heartbeatAt: ago(300), stoppedAt: ago(300) }),
      ],
      leases: [lease("local:demo#1", "a", 20), lease("local:demo#2", "b", 5), lease("local:demo#3", "b", -1), lease("local:demo#4", "gone", 10)],
      now: NOW,
    },
    10_000,
  );

  it.each([
    ["a", { late: false, stopped: false, leases: 1, heartbeatAgeSeconds: 1, capacity: { perDaemon: 2 } }],
    ["b", { late: true, stopped: false, leases: 1, heartbeatAgeSeconds: 25, capacity: { perDaemon: null } }],
    ["c", { late: false, stopped: true, leases: 0, heartbeatAgeSeconds: 300, capacity: null }],
  ])("judges the daemon %s: late after two silent heartbeats, a stopped one never, counting only unlapsed leases, with its own capacity", (name, expected) => {
    expect(view.daemons.find((entry) => entry.name === name)).toMatchObject(expected);
  });

  it.each([
    ["local:demo#1", { daemon: "a", host: "a.example", tmuxSocket: "sock-a" }],
    ["local:demo#3", { daemon: "b", host: "b.example", tmuxSocket: "sock-b" }],
    ["local:demo#4", { daemon: "gone", host: "?", tmuxSocket: null }],
    ["local:demo#9", undefined],
  ])("places %s under its lease's owner (a lapsed lease's session still runs there)", (item, expected) => {
    expect(view.placementOf(item)).toEqual(expected);
  });

  it("says what a late daemon means and how long its leases have", () => {
    const [, late] = view.daemons;
    if (late === undefined) throw new Error("no daemon");
    expect(lateDaemonProblem(late, 30).message).toBe(
      'the daemon "b" on b.example (pid 7) has not sent a heartbeat for 25 s: its leases lapse 5 s from now unless it beats (state.leaseSeconds: 30)',
    );
    expect(lateDaemonProblem(late, 20).message).toMatch(/its leases have lapsed \(state\.leaseSeconds: 20\)$/);
    expect(view.daemons.map(heartbeatCell)).toEqual(["1 s ago", "25 s ago (late)", "stopped (last beat 300 s ago)"]);
  });

  it("counts each daemon's live sessions by its leases, lapsed ones included; an item no daemon holds counts toward none", () => {
    const loads = daemonLoads(view, ["local:demo#1", "local:demo#2", "local:demo#3", "local:demo#9"]);
    expect(loads.map((load) => [load.name, load.liveSessions])).toEqual([
      ["a", 1],
      ["b", 2],
      ["c", 0],
    ]);
    // Each against its own capacity: a's cap, b's none, c's not known (a row from before daemons wrote it).
    expect(loads.map(daemonSessionsCell)).toEqual(["1 of 2", "2", "0 (capacity unknown)"]);
  });
});

describe("capacityOf (the daemons table's capacity column)", () => {
  it.each([
    ["a cap", { perDaemon: 3 }, { perDaemon: 3 }],
    ["no cap", { perDaemon: null }, { perDaemon: null }],
    ["NULL: a row from before migration 8", null, null],
    ["a column the row does not have", undefined, null],
    ["no perDaemon", {}, null],
    ["a cap that is no count", { perDaemon: 0 }, null],
    ["a fraction", { perDaemon: 1.5 }, null],
    ["a string", { perDaemon: "3" }, null],
    ["not an object", "3", null],
  ])("reads %s", (_case, raw, expected) => {
    expect(capacityOf(raw)).toEqual(expected);
  });
});

describe("the status figures of live sessions against their caps", () => {
  it.each([
    [0, undefined, "0"],
    [2, undefined, "2"],
    [2, 3, "2 of 3"],
    [4, 3, "4 of 3"],
  ])("shows %s live under a cap of %s as %j", (live, cap, expected) => {
    expect(liveOfCap(live, cap)).toBe(expected);
  });

  it.each([
    [2, undefined, "live sessions across the fleet: 2"],
    [5, 8, "live sessions across the fleet: 5 of 8 (routing.limits.maxLiveSessions)"],
  ])("says the fleet's %s live sessions under maxLiveSessions %s", (live, cap, expected) => {
    expect(fleetSessionsLine(live, cap)).toBe(expected);
  });
});
