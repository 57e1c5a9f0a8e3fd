import { dirname } from "node:path";
import type { CliConfig } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import { HookChain } from "../hooks/chain.js";
import type { LoadHooksOptions } from "../hooks/load.js";

/** Where a process's hooks come from: its config, and the file it was read from. */
export interface HookSource {
  readonly config: CliConfig;
  /** The config file in effect; without one no hooks are declared. */
  readonly configFile?: string | undefined;
  /** The project directory (only used when there is no config file). */
  readonly baseDir: string;
  readonly events: EventSink;
}

/**
 * What loading the `hooks:` declaration needs: `path` entries resolve against the directory of
 * the config file in effect (never the project or a checkout); with no config file there are none.
 */
function hookLoadOptions(input: HookSource): LoadHooksOptions {
  return {
    raw: input.config.hooks,
    configDir: input.configFile !== undefined ? dirname(input.configFile) : input.baseDir,
    ...(input.configFile !== undefined ? { configPath: input.configFile } : {}),
    events: input.events,
  };
}

/**
 * Whether the config declares any hook. Without one the loader and its executors (node:http,
 * node:https, the declaration's schema) are never imported: a process with no hooks pays nothing
 * for them, not even `the-loop ask`, which every agent runs.
 */
function declaresHooks(input: HookSource): boolean {
  const raw: unknown = input.config.hooks;
  return raw !== undefined && raw !== null && !(Array.isArray(raw) && raw.length === 0);
}

/** A daemon's hooks: a declaration that does not load stops the start (HookLoadError, exit 2). */
export async function loadDaemonHooks(input: HookSource): Promise<HookChain> {
  if (!declaresHooks(input)) return HookChain.empty(input.events);
  const { loadHooks } = await import("../hooks/load.js");
  return loadHooks(hookLoadOptions(input));
}

/**
 * A one-shot command's hooks (docs/hooks.md#declaring-hooks): a declaration that does not load is recorded
 * (`hooks.load_failed`), `warn` hears why, and the command runs with no hooks — the daemon
 * holding the same file has refused to start on it already.
 */
export async function loadCommandHooks(input: HookSource, warn: (message: string) => void): Promise<HookChain> {
  if (!declaresHooks(input)) return HookChain.empty(input.events);
  const { loadHooksOrNone } = await import("../hooks/load.js");
  const { chain, error } = await loadHooksOrNone(hookLoadOptions(input));
  if (error !== undefined) warn(`the lifecycle hooks did not load, so this command runs without them: ${error}`);
  return chain;
}
