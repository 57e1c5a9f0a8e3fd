import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { EXIT_USAGE, ExitError } from "../errors.js";
import { LeasedOwnership, soleOwner } from "../fleet/ownership.js";
import type { Ownership } from "../fleet/ownership.js";
import { fleetBounds } from "../fleet/decide.js";
import { adoptGraceProblem } from "../fleet/adopt-decide.js";
import { ADOPTED_REASON, stateRootTag, tmuxTargetFor } from "../registry/record.js";
import { PostgresLeases } from "../state/postgres/leases.js";
import type { DaemonCapacity } from "../state/postgres/leases.js";
import { parseWorkItemRef, workItemSlug } from "../workitem/index.js";
import type { Runtime, RuntimeInput } from "./runtime.js";

/** The daemon's name: state.daemonName, else the host's. */
export function daemonNameOf(input: Pick<RuntimeInput, "config">): string {
  return input.config.state.daemonName ?? hostname();
}

/**
 * This daemon's ownership of work items (docs/scale.md, "Many daemons, one database"): on files,
 * every item is its own; on a shared database it takes its name (refused while a live daemon has
 * it), closes its own stale tmux sessions (items another daemon owns or adopted), and beats,
 * publishing its capacity (`capacity`: routing.limits.perDaemon as it runs) on its row at each beat. Called before any lock is taken.
 */
export async function joinFleet(
  input: RuntimeInput,
  runtime: Runtime,
  warn: (message: string) => void,
  capacity: () => DaemonCapacity = () => ({ perDaemon: input.config.routing.limits.perDaemon ?? null }),
): Promise<Ownership & { stop?(): Promise<void> }> {
  const name = daemonNameOf(input);
  const database = runtime.stores.backend.database;
  if (database === undefined) return soleOwner(name);
  const bounds = fleetBounds(input.config.state);
  if ("problem" in bounds) throw new ExitError(bounds.problem, EXIT_USAGE, "config");
  const grace = adoptGraceProblem(input.config.state.adoptGraceSeconds, input.config.routing.tmux.harnessKillGraceSeconds);
  if (grace !== undefined) throw new ExitError(grace, EXIT_USAGE, "config");
  const tag = stateRootTag(input.paths.root);
  const targetOf = (item: string): string => tmuxTargetFor(workItemSlug(parseWorkItemRef(item)), tag);
  return LeasedOwnership.join({
    leases: new PostgresLeases(database.pool),
    self: { name, host: hostname(), pid: process.pid, instance: randomUUID(), tmuxSocket: input.config.routing.tmux.socketName ?? null },
    bounds,
    capacity,
    events: input.events,
    warn,
    liveItems: () => runtime.registry.list({ status: "live" }).records.map((record) => record.workItem.ref),
    adoptedItems: () =>
      runtime.registry
        .list({ status: "closed" })
        .records.filter((record) => record.closeReason === ADOPTED_REASON)
        .map((record) => record.workItem.ref),
    runsHere: async (item) => (await runtime.runner.probe(targetOf(item))) !== "absent",
    closeStale: async (item) => {
      const target = targetOf(item);
      if ((await runtime.runner.probe(target)) === "absent") return false;
      await runtime.runner.terminate(target, { killHarness: true, graceMs: 2_000, killSession: true });
      return true;
    },
  });
}
