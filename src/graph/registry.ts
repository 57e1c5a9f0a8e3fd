import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { BUILTIN_GRAPH_NAMES } from "../config/graph-schema.js";
import type { CliConfig } from "../config/schema.js";
import { GraphError, displayPath, readGraphFile } from "./load.js";
import type { GraphFileOutcome } from "./load.js";
import type { Graph } from "./types.js";

/**
 * Every graph a config can run: the package's own (`graphs/*.yaml` beside `dist/`) and the
 * operator's (`graphs:` in the config). Graphs come from these two places only — never from a
 * checkout or a work item — so what an agent can edit never decides its own process.
 */

/** The folder of the built-in graph files, in the package (from src/ and from dist/ alike). */
export const BUILTIN_GRAPHS_DIR = fileURLToPath(new URL("../../graphs/", import.meta.url));

export const BUILTIN_SOURCE = "built-in";

export function builtinGraphFile(name: string): string {
  return join(BUILTIN_GRAPHS_DIR, `${name}.yaml`);
}

export interface LoadedGraphs {
  /** Built-in graphs first, then the operator's, in the config's order. */
  readonly graphs: ReadonlyMap<string, Graph>;
  /** The graph a started item runs unless another was chosen for it (`graph.default`). */
  readonly defaultGraph: Graph;
  readonly enabled: boolean;
}

export interface LoadGraphsOptions {
  /** The config file, named in messages about its `graphs` entries. */
  readonly configFile?: string;
  readonly homeDir?: string;
}

/** Where a `graphs[].path` points: absolute, `~`-relative, or relative to the config file's folder. */
export function resolveGraphPath(path: string, configDir: string, homeDir: string = homedir()): string {
  if (path === "~" || path.startsWith("~/")) return join(homeDir, path.slice(1));
  return isAbsolute(path) ? resolve(path) : resolve(configDir, path);
}

/** The built-in graphs alone, compiled (a test and the docs generator read them). */
export async function loadBuiltinGraphs(): Promise<ReadonlyMap<string, Graph>> {
  const outcomes = await Promise.all(
    BUILTIN_GRAPH_NAMES.map((name) => readGraphFile(builtinGraphFile(name), { source: BUILTIN_SOURCE, expectedName: name, namedBy: "the package" })),
  );
  return collect(outcomes, BUILTIN_GRAPH_NAMES.map(builtinGraphFile));
}

function collect(outcomes: readonly GraphFileOutcome[], files: readonly string[]): Map<string, Graph> {
  const problems = outcomes.flatMap((outcome) => outcome.problems);
  if (problems.length > 0) {
    const bad = files.filter((_, index) => (outcomes[index]?.problems.length ?? 0) > 0).map((file) => displayPath(file));
    throw new GraphError(problems, bad);
  }
  return new Map(outcomes.map((outcome) => [outcome.graph?.name ?? "", outcome.graph as Graph]));
}

/**
 * Every built-in and configured graph, compiled. Any problem in any file refuses them all, with
 * every problem of every file at once (`GraphError`, exit 2), so a daemon never runs on part of
 * its graphs.
 */
export async function loadGraphs(config: Pick<CliConfig, "graph" | "graphs">, configDir: string, options: LoadGraphsOptions = {}): Promise<LoadedGraphs> {
  const configFile = options.configFile ? displayPath(options.configFile) : "the config";
  const entries = [
    ...BUILTIN_GRAPH_NAMES.map((name) => ({ name, file: builtinGraphFile(name), source: BUILTIN_SOURCE, namedBy: "the package" })),
    ...config.graphs.map((entry, index) => {
      const file = resolveGraphPath(entry.path, configDir, options.homeDir);
      return { name: entry.name, file, source: file, namedBy: `graphs[${index}] in ${configFile}` };
    }),
  ];
  const outcomes = await Promise.all(
    entries.map((entry) => readGraphFile(entry.file, { source: entry.source, expectedName: entry.name, namedBy: entry.namedBy })),
  );
  const graphs = collect(
    outcomes,
    entries.map((entry) => entry.file),
  );
  const defaultGraph = graphs.get(config.graph.default);
  if (!defaultGraph) {
    // The config's schema refuses this already; a config built in code does not pass through it.
    const known = [...graphs.keys()].join(", ");
    throw new GraphError([`${configFile}: graph.default: no graph is named "${config.graph.default}"; known: ${known}`], [configFile]);
  }
  return { graphs, defaultGraph, enabled: config.graph.enabled };
}
