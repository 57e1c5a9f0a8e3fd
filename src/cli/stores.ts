import type { CliConfig } from "../config/schema.js";
import type { Stores } from "../stores/stores.js";
import type { StatePaths } from "../state/layout.js";

/**
 * The stores a command works on (`state.store`), opened once per command and closed when it ends:
 * a database's connections would otherwise keep the process alive. A command on files opens
 * nothing (its stores are objects over the state root's folders).
 */

const opened = new Map<StatePaths, Promise<Stores>>();

export function commandStores(project: { readonly config: Pick<CliConfig, "state">; readonly paths: StatePaths }): Promise<Stores> {
  let stores = opened.get(project.paths);
  if (stores === undefined) {
    const open = async (): Promise<Stores> => {
      const { openStores } = await import("../stores/stores.js");
      return openStores(project.config, project.paths, { name: "cli" });
    };
    stores = open();
    opened.set(project.paths, stores);
  }
  return stores;
}

/** Whether the project keeps its records in a database: then every read goes through its stores. */
export function storesShared(config: Pick<CliConfig, "state">): boolean {
  return config.state.store !== "file";
}

/** Closes what the command opened (main calls it once the command is done). */
export async function closeCommandStores(): Promise<void> {
  const all = [...opened.values()];
  opened.clear();
  // A store that never opened has nothing to close: its failure was the command's to report.
  await Promise.all(all.map((stores) => stores.then((open) => open.close()).catch(() => undefined)));
}
