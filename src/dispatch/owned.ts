import type { EventSink } from "../events/log.js";
import { OwnedElsewhereError } from "../fleet/ownership.js";
import type { Ownership } from "../fleet/ownership.js";

/**
 * Work on work items runs only where their owner is (docs/scale.md, "Many daemons, one
 * database"): before a job of an item's queue runs, this daemon takes or renews the lease of each
 * item it names. Work for an item another live daemon owns is not run here: an event or a
 * command says so (`lease.refused`; a command's caller gets the error, naming the owner's host),
 * and the periodic looks (the start queue, the stall check) pass it by quietly with `otherwise`.
 * On the file store the lease is a no-op, and the job runs as it always has.
 */
export async function whereOwned<T>(
  ownership: Ownership,
  events: EventSink,
  keys: readonly string[],
  job: () => Promise<T>,
  otherwise?: { readonly value: T; readonly work?: "event" },
): Promise<T> {
  try {
    await ownership.acquire(keys);
  } catch (error) {
    if (!(error instanceof OwnedElsewhereError)) throw error;
    if (otherwise === undefined || otherwise.work !== undefined) {
      events.emit("lease.refused", {
        work_item: error.item,
        daemon: ownership.name,
        owner: error.owner,
        ...(error.host !== undefined ? { host: error.host } : {}),
        work: otherwise?.work ?? "command",
      });
    }
    if (otherwise === undefined) throw error;
    return otherwise.value;
  }
  return job();
}
