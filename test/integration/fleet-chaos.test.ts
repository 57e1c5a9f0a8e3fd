import { describe, expect, inject, it } from "vitest";
import { chaosBreaches, runFleetChaos } from "../support/fleet-chaos.js";
import { RUN_KEY, RUN_MARKER } from "../support/processes.js";
import { postgresServer } from "../support/postgres.js";

/**
 * The chaos run (docs/scale.md, "The chaos run"): three real daemons, each with a state folder and
 * a tmux server of its own, on one real PostgreSQL server and one local project; 20 items started,
 * commented on and closed through the CLI; `kill -9` of the daemon running the most agents halfway
 * through, then its restart. No item is ever live on two tmux servers at once, every item
 * finishes, every comment reaches an agent, and every orphaned item is adopted within the lease
 * bound plus 5 s. bench/fleet-chaos.ts prints the same run's figures.
 */

const server = postgresServer();

describe("three daemons on one database through kill -9 and a restart", () => {
  it("never runs an item twice, loses no item or comment, and adopts every orphan within the lease bound plus 5 s", async () => {
    const figures = await runFleetChaos({
      url: await server.freshDatabase(),
      items: 20,
      workers: 8,
      daemons: 3,
      maxLiveSessions: 6,
      perDaemon: 3,
      env: { [RUN_MARKER]: inject(RUN_KEY) },
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify(figures));
    expect(chaosBreaches(figures)).toEqual([]);
    expect(figures.finished).toBe(20);
    expect(figures.samples).toBeGreaterThan(20);
    for (const daemon of ["box-a", "box-b", "box-c"]) expect(figures.eventsBy[daemon]).toBeGreaterThan(0);
  }, 240_000);
});
