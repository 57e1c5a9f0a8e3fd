import { relative } from "node:path";
import { elsewhereNote, loadConfig } from "../config/load.js";
import { formatProblem } from "../config/problem.js";
import type { LoadedConfig } from "../config/load.js";
import type { CliConfig } from "../config/schema.js";
import type { EventLog } from "../events/log.js";
import type { EventSource } from "../events/catalog.js";
import type { StatePaths } from "../state/layout.js";
import type { Stores } from "../stores/stores.js";
import { stderr } from "./output.js";
import { commandStores, storesShared } from "./stores.js";

/** Options every command inherits from the program. */
export interface GlobalOptions {
  readonly config?: string;
}

/** What a command works with: the loaded config, the paths derived from it, the event log. */
export interface Project {
  readonly loaded: LoadedConfig;
  readonly config: CliConfig;
  readonly paths: StatePaths;
  readonly events: EventLog;
  /**
   * The state's stores, when they are in a database (state.store: postgres): every record a
   * command reads or writes goes through them. Undefined on files, where a command reads the state
   * root's folders with no more than it needs (the start-up budget of `sessions list`).
   */
  readonly stores?: Stores;
}

/** A path as short as it can be said from the current directory. */
export function displayPath(path: string, cwd: string = process.cwd()): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith("..") ? rel : path;
}

export function printConfigWarnings(loaded: LoadedConfig): void {
  const file = loaded.source.path ? displayPath(loaded.source.path) : "config";
  for (const warning of loaded.warnings) stderr.warn(formatProblem(warning, file));
}

/**
 * Loads the config (exit 2 when it is invalid). When it belongs to a folder other than the
 * current directory — found above it, or in the home directory — one line on stderr says which,
 * so a command run from `src/deep/` never silently works on another project than the one meant.
 */
export async function loadCommandConfig(globals: GlobalOptions): Promise<LoadedConfig> {
  const loaded = await loadConfig({ explicitPath: globals.config });
  const note = elsewhereNote(loaded, process.cwd());
  if (note !== undefined) stderr.line(note);
  return loaded;
}

/** A project as a command that writes no event sees it: the config and its paths. */
export type ProjectConfig = Omit<Project, "events">;

/**
 * Loads the config (exit 2 when it is invalid) and reports its warnings on stderr, as openProject
 * does, without the event log: a command that only reads (`graph status`) then loads none of the
 * event catalog's modules.
 */
export async function openProjectConfig(globals: GlobalOptions): Promise<ProjectConfig> {
  const loaded = await loadCommandConfig(globals);
  printConfigWarnings(loaded);
  const stores = storesShared(loaded.config) ? await commandStores(loaded) : undefined;
  return { loaded, config: loaded.config, paths: loaded.paths, ...(stores !== undefined ? { stores } : {}) };
}

/** Loads the config (exit 2 when it is invalid), reports its warnings on stderr, opens the event log. */
export async function openProject(globals: GlobalOptions, source: EventSource = "cli"): Promise<Project> {
  const { loaded, stores } = await openProjectConfig(globals);
  return withEventLog(loaded, loaded.config, source, stores);
}

async function withEventLog(loaded: LoadedConfig, config: CliConfig, source: EventSource, stores: Stores | undefined): Promise<Project> {
  const { EventLog } = await import("../events/log.js");
  const events = new EventLog({
    path: config.eventLog.enabled ? loaded.paths.eventLog : null,
    source,
    onWriteError: (message) => stderr.warn(message),
    // state.store: postgres: the events go to the database's table, which every host reads.
    ...(stores?.eventLog !== undefined ? { table: stores.eventLog } : {}),
  });
  return { loaded, config, paths: loaded.paths, events, ...(stores !== undefined ? { stores } : {}) };
}

/**
 * openProject for a command that acts as the running daemon does or through it — `sessions
 * start|stop|pause|resume|close|attach|link-pr`, `graph complete|force|approve|request-changes`, `ask`, `receive`, `why`:
 * its config is the one the daemon runs (its record beside the poller's pidfile), so the CLI never
 * starts, names or routes anything otherwise than the daemon would. A setting the file changed
 * and the daemon has not loaded is said in one note on stderr (`status` makes it a problem, with
 * the fix). The paths stay the file's: they are where the daemon's record was found. Without a
 * running daemon, the file's config, as openProject.
 */
export async function openDaemonProject(globals: GlobalOptions, source: EventSource = "cli"): Promise<Project> {
  const { loaded, stores } = await openProjectConfig(globals);
  const { asTheDaemonRuns } = await import("../daemon/running-config.js");
  const { config, unloaded } = asTheDaemonRuns({ config: loaded.config, paths: loaded.paths });
  if (unloaded.length > 0) {
    const file = loaded.source.path ? displayPath(loaded.source.path) : "the config";
    stderr.line(
      `note: the running daemon has not loaded ${unloaded.join(", ")} from ${file}; this command acts as the daemon runs. ` +
        "`the-loop status` lists every setting not loaded, with the fix",
    );
  }
  return withEventLog(loaded, config, source, stores);
}
