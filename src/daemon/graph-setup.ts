import { dirname, join, resolve } from "node:path";
import { compileGateVocabulary } from "../graph-run/gate.js";
import { loadGraphs } from "../graph/registry.js";
import { openHeldGateAnswers } from "../graph-run/held.js";
import { openGraphStates } from "../graph-run/store.js";
import type { CapabilityRuntime, GraphSetup } from "../sessions/context.js";
import { CAPABILITY_HOOK_TIMEOUT_MS } from "../graph-driver/capability-points.js";
import { CLI_ENTRY } from "../sessions/session-env.js";
import { loadCapabilities } from "../capabilities/load.js";
import type { LoadedCapability } from "../capabilities/load.js";
import { allowListedEnv } from "../subprocess/index.js";
import type { CliConfig } from "../config/schema.js";
import type { StatePaths } from "../state/layout.js";
import { withNamedLock } from "../state/index.js";

import type { Stores } from "../stores/stores.js";
/**
 * The process graph as the daemon runs it: every graph loaded (a bad file refuses the start, with
 * every problem named, even while the graph is off), and — when `graph.enabled` is on — what the
 * dispatcher needs to run items through it.
 */
export interface GraphSetupInput {
  readonly config: CliConfig;
  readonly paths: StatePaths;
  readonly baseDir: string;
  readonly configFile?: string | undefined;
  /** The state's stores (files under the state root when omitted). */
  readonly stores?: Stores | undefined;
}

/**
 * `capabilities`: the ones the daemon loaded at its start; without them (a CLI command running the
 * dispatcher in-process) the config's are loaded here, checked against their consent the same way.
 */
export async function graphSetupFor(input: GraphSetupInput, capabilities?: readonly LoadedCapability[]): Promise<GraphSetup | undefined> {
  const configDir = input.configFile !== undefined ? dirname(input.configFile) : input.baseDir;
  const loaded = await loadGraphs(input.config, configDir, input.configFile !== undefined ? { configFile: input.configFile } : {});
  if (!loaded.enabled) return undefined;
  const settings = input.config.graph;
  const installed =
    capabilities ??
    (input.config.capabilities.length > 0
      ? await loadCapabilities(input.config, configDir, { checkOnly: true, ...(input.configFile !== undefined ? { configFile: input.configFile } : {}) })
      : []);
  const configFile = input.configFile !== undefined ? resolve(input.configFile) : undefined;
  return {
    ...(installed.length > 0 ? { capabilities: capabilityRuntime(installed, configFile) } : {}),
    graphs: loaded.graphs,
    defaultGraph: loaded.defaultGraph,
    states: input.stores?.graphStates ?? openGraphStates(input.paths),
    held: input.stores?.heldAnswers ?? openHeldGateAnswers(input.paths),
    roomLock: roomLockFor(input.paths, input.stores),
    vocabulary: compileGateVocabulary(settings.keywords),
    keywords: settings.keywords,
    allowSelfApproval: settings.allowSelfApproval,
    configFile: input.configFile !== undefined ? resolve(input.configFile) : undefined,
    ...(settings.stallAfterMinutes !== undefined ? { stallAfterMs: Math.round(settings.stallAfterMinutes * 60_000) } : {}),
    ...(settings.closeAfterMinutes !== "never" ? { closeAfterMs: Math.round(settings.closeAfterMinutes * 60_000) } : {}),
  };
}

/** The name of the perNode lock in a database, and of its file under `<root>/queue/` (`graph-nodes.lock`). */
export const ROOM_LOCK_NAME = "graph-nodes";

/**
 * The lock every move that may follow an edge takes while routing.limits.perNode is set: a file on
 * one host; on PostgreSQL a database lock, so that two daemons on one database count one node's runs
 * under one lock.
 */
export function roomLockFor(paths: Pick<StatePaths, "root">, stores: Stores | undefined): GraphSetup["roomLock"] {
  const database = stores?.backend.database;
  if (database === undefined) return join(paths.root, "queue", ROOM_LOCK_NAME);
  return (work) => withNamedLock(database, ROOM_LOCK_NAME, work);
}

/** How the daemon dispatches capabilities' hooks: `the-loop` itself, under the daemon's own config, with a scrubbed environment. */
function capabilityRuntime(loaded: readonly LoadedCapability[], configFile: string | undefined): CapabilityRuntime {
  return {
    loaded,
    selfArgv: [process.execPath, CLI_ENTRY, ...(configFile !== undefined ? ["--config", configFile] : [])],
    env: { ...allowListedEnv([]), ...(configFile !== undefined ? { THE_LOOP_CLI_CONFIG: configFile } : {}) },
    timeoutMs: CAPABILITY_HOOK_TIMEOUT_MS,
  };
}
