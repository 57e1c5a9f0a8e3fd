import { relative } from "node:path";
import { loadConfig } from "../config/load.js";
import { formatProblem } from "../config/problem.js";
import type { LoadedConfig } from "../config/load.js";
import type { CliConfig } from "../config/schema.js";
import { EventLog } from "../events/log.js";
import type { EventSource } from "../events/catalog.js";
import type { StatePaths } from "../state/layout.js";
import { stderr } from "./output.js";

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

/** Loads the config (exit 2 when it is invalid), reports its warnings on stderr, opens the event log. */
export async function openProject(globals: GlobalOptions, source: EventSource = "cli"): Promise<Project> {
  const loaded = await loadConfig({ explicitPath: globals.config });
  printConfigWarnings(loaded);
  const events = new EventLog({
    path: loaded.config.eventLog.enabled ? loaded.paths.eventLog : null,
    source,
    onWriteError: (message) => stderr.warn(message),
  });
  return { loaded, config: loaded.config, paths: loaded.paths, events };
}
