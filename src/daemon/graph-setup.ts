import { dirname, resolve } from "node:path";
import { UsageError } from "../errors.js";
import { compileGateVocabulary } from "../graph/gate.js";
import { loadGraphs } from "../graph/registry.js";
import { openGraphStates } from "../graph/store.js";
import type { Dispatcher } from "../sessions/dispatcher.js";
import type { CapabilityRuntime, GraphSetup } from "../sessions/context.js";
import { CAPABILITY_HOOK_TIMEOUT_MS } from "../sessions/capability-points.js";
import { CLI_ENTRY } from "../sessions/session-env.js";
import { loadCapabilities } from "../capabilities/load.js";
import type { LoadedCapability } from "../capabilities/load.js";
import { allowListedEnv } from "../subprocess/index.js";
import type { RpcHandler } from "./rpc.js";
import type { CliConfig } from "../config/schema.js";
import type { StatePaths } from "../state/layout.js";

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
    states: openGraphStates(input.paths),
    vocabulary: compileGateVocabulary(settings.keywords),
    keywords: settings.keywords,
    allowSelfApproval: settings.allowSelfApproval,
    configFile: input.configFile !== undefined ? resolve(input.configFile) : undefined,
    ...(settings.stallAfterMinutes !== undefined ? { stallAfterMs: Math.round(settings.stallAfterMinutes * 60_000) } : {}),
  };
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

/** Longest text a request field may hold: a reason, a ref, a node id. */
const FIELD_MAX = 2_000;

function field(params: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const value = params[name];
  if (value === undefined || value === null) {
    if (required) throw new UsageError(`the request has no ${name}`);
    return undefined;
  }
  if (typeof value !== "string" || value.length > FIELD_MAX) throw new UsageError(`the request's ${name} is not a string of at most ${FIELD_MAX} characters`);
  return value;
}

function objectOf(params: unknown): Record<string, unknown> {
  if (typeof params !== "object" || params === null || Array.isArray(params)) throw new UsageError("the request's params are not an object");
  return params as Record<string, unknown>;
}

/** The daemon socket's graph methods: `the-loop graph complete` and `the-loop graph force`. */
export function graphHandlers(dispatcher: Dispatcher): Record<string, RpcHandler> {
  return {
    "graph.complete": async (raw) => {
      const params = objectOf(raw);
      return dispatcher.graphClaim({
        ref: field(params, "ref", true) ?? "",
        node: field(params, "node", false),
        actor: field(params, "actor", true) ?? "",
        configFile: field(params, "configFile", false) ?? null,
      });
    },
    "graph.force": async (raw) => {
      const params = objectOf(raw);
      return dispatcher.graphForce({
        ref: field(params, "ref", true) ?? "",
        to: field(params, "to", true) ?? "",
        reason: field(params, "reason", true) ?? "",
        actor: field(params, "actor", true) ?? "",
      });
    },
  };
}
