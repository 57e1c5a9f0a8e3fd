import { EXIT_USAGE, ExitError, messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import { HOOK_POINTS } from "../sdk/hooks/points.js";
import type { HookPoint } from "../sdk/hooks/catalog.js";
import { HookChain } from "./chain.js";
import type { HookChainOptions } from "./chain.js";
import { parseHookDeclaration, pointsWithoutOn } from "./declaration.js";
import type { HookEntry } from "./declaration.js";
import { loadLocalExecutor } from "./local.js";
import { createRemoteExecutor } from "./remote.js";
import { createSubprocessExecutor } from "./subprocess.js";
import type { HookExecutor } from "./types.js";

/**
 * Loading the `hooks:` declaration: validated whole, every enabled local module imported and
 * constructed, every remote entry built (not contacted), every command's program found (not run).
 * All of it or nothing: a declaration with one bad entry yields no chain at all, never the
 * entries that happened to load.
 *
 * A process loads its hooks once (docs/hooks.md#declaring-hooks). Nothing here caches across calls; Node's module cache
 * does, so a hook module edited while the process runs takes effect at the next start.
 */

export interface LoadHooksOptions {
  /** The config's `hooks` value, as parsed from the file. */
  readonly raw: unknown;
  /** The directory of the config file in effect: paths resolve against it, modules from it. */
  readonly configDir: string;
  /** The config file, named in the events. */
  readonly configPath?: string;
  readonly events: EventSink;
  /** The points a declaration may name (default HOOK_POINTS: every family). */
  readonly points?: readonly HookPoint[];
  /** Where a remote entry's tokenEnv and a command's environment are read at each call (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
  /** What `~/` in a path means (default the user's home). */
  readonly homeDir?: string;
  /** How long one local module's import may take (default DEFAULT_IMPORT_TIMEOUT_MS, local.ts). */
  readonly importTimeoutMs?: number;
  /** How the chain records its calls and who hears each answer (default: the daemon's). */
  readonly chain?: HookChainOptions;
}

/**
 * The declaration does not load: a daemon refuses to start on it (exit 2, a config error), a
 * one-shot command runs with no hooks. The message names the entry and how to fix it.
 */
export class HookLoadError extends ExitError {
  override readonly name: string = "HookLoadError";
  constructor(
    message: string,
    /** The entry that failed, when one did (not for a list that is malformed as a whole). */
    readonly hook?: string,
  ) {
    super(message, EXIT_USAGE, "config");
  }
}

export async function loadHooks(options: LoadHooksOptions): Promise<HookChain> {
  const points = options.points ?? HOOK_POINTS;
  // An entry without `on` is not called at an opt-in point (a loop event): its executor never hears of one.
  const defaultPoints = pointsWithoutOn(points);
  const config = options.configPath === undefined ? {} : { config: options.configPath };
  const fail = (message: string, hook?: string): never => {
    try {
      options.events.emit("hooks.load_failed", { error: message, ...(hook === undefined ? {} : { hook }), ...config });
    } catch {
      // The error is thrown to the caller either way; a sink that fails must not replace it.
    }
    throw new HookLoadError(message, hook);
  };

  let entries: HookEntry[] = [];
  try {
    entries = parseHookDeclaration(options.raw, {
      configDir: options.configDir,
      points: points.map((point) => point.name),
      ...(options.homeDir === undefined ? {} : { homeDir: options.homeDir }),
    });
  } catch (error) {
    fail(messageOf(error));
  }

  const executors: HookExecutor[] = [];
  for (const [index, entry] of entries.entries()) {
    // A disabled entry is declared and listed, never imported or contacted.
    if (!entry.enabled) continue;
    try {
      executors.push(await buildExecutor(entry, entry.on === undefined ? defaultPoints : points, options));
    } catch (error) {
      await Promise.allSettled(executors.map(async (executor) => executor.close?.()));
      fail(`hooks[${index}] "${entry.name}": ${messageOf(error)}`, entry.name);
    }
  }

  if (entries.length > 0) {
    try {
      options.events.emit("hooks.loaded", { hooks: executors.map((executor) => executor.name), ...config });
    } catch {
      // Recording the load is not part of loading it.
    }
  }
  return new HookChain(executors, options.events, options.chain);
}

async function buildExecutor(entry: HookEntry, points: readonly HookPoint[], options: LoadHooksOptions): Promise<HookExecutor> {
  const env = options.env === undefined ? {} : { env: options.env };
  switch (entry.kind) {
    case "url":
      return createRemoteExecutor(entry, { points, ...env });
    case "command":
      return createSubprocessExecutor(entry, { points, configDir: options.configDir, ...env });
    case "module":
    case "path":
      return await loadLocalExecutor(entry, {
        points,
        configDir: options.configDir,
        ...(options.importTimeoutMs === undefined ? {} : { importTimeoutMs: options.importTimeoutMs }),
      });
  }
}

/**
 * For a one-shot command (`the-loop ask`): the hooks, or — when the declaration does not load —
 * no hooks and the reason, already recorded as hooks.load_failed. The daemon holding the same
 * file has refused to start on it; the command still does its job.
 */
export async function loadHooksOrNone(options: LoadHooksOptions): Promise<{ chain: HookChain; error?: string }> {
  try {
    return { chain: await loadHooks(options) };
  } catch (error) {
    return { chain: HookChain.empty(options.events), error: messageOf(error) };
  }
}
