import { userInfo } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import type { ControlRequest } from "../../src/control/types.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { Forwarder } from "../../src/forwarding/forwarder.js";
import { ownerHandlers } from "../../src/forwarding/owner.js";
import { PostgresDatabase } from "../../src/state/postgres/database.js";
import { PostgresInbox } from "../../src/state/postgres/inbox.js";
import { PostgresLeases } from "../../src/state/postgres/leases.js";
import { jsonOf } from "../support/cli.js";
import { postgresProjects } from "../support/postgres-project.js";

/**
 * The built CLI's session commands on an item another live daemon owns (docs/scale.md, "Many
 * daemons, one database: events and commands reach the owner"): on a real PostgreSQL server, the
 * daemon "box-a" — its name, its lease of the item, and its inbox served here — gets the command
 * with the operator's name, runs it, and the CLI prints its answer; nothing is run by the CLI.
 */

const postgres = postgresProjects();
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const ITEM = "local:demo#1";

/** The daemon "box-a" on far.example, owning ITEM, whose inbox records the commands it is given and answers them. */
async function owner(url: string): Promise<{ controlled: ControlRequest[]; closed: string[] }> {
  const database = await PostgresDatabase.open({ url, name: "box-a", lockTimeoutMs: 2_000 });
  const leases = new PostgresLeases(database.pool);
  await leases.claimName("box-a", () => ({
    write: { name: "box-a", host: "far.example", pid: 4242, instance: "box-a-1", tmuxSocket: "sock-a" },
    answer: undefined,
  }));
  await leases.decideLease(ITEM, 300_000, () => ({ write: { owner: "box-a" }, answer: undefined }));
  const controlled: ControlRequest[] = [];
  const closed: string[] = [];
  const forwarder = new Forwarder({
    inbox: new PostgresInbox(database.pool),
    fleet: leases,
    name: "box-a",
    leaseMs: 300_000,
    sweepMs: 500,
    events: new MemoryEventSink(),
    warn: () => undefined,
    listener: () => database.client("inbox"),
  });
  await forwarder.serve(
    ownerHandlers({
      handle: async () => ({ settled: true }),
      control: async (request) => {
        controlled.push(request);
        return { applied: true, effect: "paused", session: { tmuxTarget: "the-loop-demo-1", status: "paused" } };
      },
      graphClaim: async () => {
        throw new Error("no claims here");
      },
      close: async (ref) => {
        closed.push(ref);
        return "the-loop-demo-1";
      },
      unserved: () => undefined,
      harnessOf: () => undefined,
      configFile: null,
    }),
  );
  cleanups.push(async () => {
    await forwarder.stop();
    await database.close();
  });
  return { controlled, closed };
}

describe("session commands on an item another daemon owns (a real server, the built CLI)", () => {
  it("are carried out by the owner, with the operator's name, and its answer printed", async () => {
    const url = await postgres.database();
    const p = await postgres.project({ state: { store: "postgres", url } });
    const a = await owner(url);

    const paused = await p.cli(["sessions", "pause", "--work-item", ITEM, "--no-comment", "--json"]);
    expect(paused.code, paused.stderr).toBe(0);
    expect(jsonOf(paused)).toMatchObject({ workItem: ITEM, command: "pause", applied: true, effect: "paused" });
    expect(a.controlled).toEqual([expect.objectContaining({ ref: ITEM, command: "pause", source: "cli", actor: userInfo().username })]);

    const closed = await p.cli(["sessions", "close", "--work-item", ITEM]);
    expect(closed.code, closed.stderr).toBe(0);
    expect(closed.stdout).toMatch(/closed the session of local:demo#1 \(the-loop-demo-1\)/);
    expect(a.closed).toEqual([ITEM]);

    const events = await p.cli(["events", "--type", "forward.sent", "--json"]);
    const sent = jsonOf<{ work_item: string; owner: string; kind: string; outcome: string }[]>(events);
    expect(sent.map((event) => [event.work_item, event.owner, event.kind, event.outcome])).toEqual([
      [ITEM, "box-a", "command", "recorded"],
      [ITEM, "box-a", "command", "recorded"],
    ]);
  });
});
