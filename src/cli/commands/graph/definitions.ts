import { dirname } from "node:path";
import { NotFoundError, UsageError } from "../../../errors.js";
import type { LoadedGraphs } from "../../../graph/registry.js";
import type { Graph, GraphCheck, GraphNode } from "../../../graph/types.js";
import { displayPath, loadCommandConfig, printConfigWarnings } from "../../context.js";
import type { GlobalOptions } from "../../context.js";
import type { LoadedConfig } from "../../../config/load.js";
import { formatTable, stderr, stdout } from "../../output.js";

export interface GraphListOptions {
  readonly json: boolean;
}

export interface GraphShowOptions {
  readonly json: boolean;
  readonly mermaid: boolean;
}

const DOCS = "docs/graph.md";

/** The config's graphs, every one compiled: a bad file is exit 2 naming the file and the node. */
async function openGraphs(globals: GlobalOptions): Promise<LoadedGraphs> {
  return (await openConfigGraphs(globals)).graphs;
}

async function openConfigGraphs(globals: GlobalOptions): Promise<{ readonly loaded: LoadedConfig; readonly graphs: LoadedGraphs }> {
  const loaded = await loadCommandConfig(globals);
  printConfigWarnings(loaded);
  const configDir = loaded.source.path ? dirname(loaded.source.path) : loaded.baseDir;
  const { loadGraphs } = await import("../../../graph/registry.js");
  return { loaded, graphs: await loadGraphs(loaded.config, configDir, loaded.source.path ? { configFile: loaded.source.path } : {}) };
}

/**
 * The graph settings the file changed and the running daemon has not loaded (it runs what it
 * started with until a restart): said on stderr, since the daemon, not this listing, decides
 * which graph a started item runs.
 */
async function unloadedGraphSettings(loaded: LoadedConfig): Promise<readonly string[]> {
  const { readRunningConfig, unloadedSettings } = await import("../../../daemon/running-config.js");
  const { isProcessAlive } = await import("../../../state/process.js");
  const pid = readRunningConfig(loaded.paths)?.pid;
  if (pid === undefined || !isProcessAlive(pid)) return [];
  const unloaded = unloadedSettings(loaded.paths, loaded.config, [pid]);
  return [...(unloaded?.restartRequired ?? []), ...(unloaded?.reloads ?? [])].filter(
    (key) => key === "graphs" || key.startsWith("graph.") || key.startsWith("graphs."),
  );
}

const sourceText = (graph: Graph): string => (graph.source === "built-in" ? graph.source : displayPath(graph.source));

/** `the-loop graph list`: every graph the config can run, and which one a started item runs. */
export async function runGraphList(globals: GlobalOptions, options: GraphListOptions): Promise<void> {
  const opened = await openConfigGraphs(globals);
  const loaded = opened.graphs;
  const unloaded = await unloadedGraphSettings(opened.loaded);
  if (unloaded.length > 0) {
    stderr.line(
      `note: the running daemon has not loaded ${unloaded.join(", ")} from this file: it runs, and starts items with, the values it started with; ` +
        "this listing is the file's. Run the file's with `the-loop stop && the-loop start` (`the-loop status` lists every setting not loaded)",
    );
  }
  const graphs = [...loaded.graphs.values()];
  const listings = graphs.map((graph) => ({
    name: graph.name,
    source: graph.source,
    start: graph.start,
    nodes: graph.nodes.size,
    edges: graph.edges.length,
    default: graph === loaded.defaultGraph,
  }));
  if (options.json) {
    stdout.json({ enabled: loaded.enabled, default: loaded.defaultGraph.name, graphs: listings, notLoaded: unloaded });
    return;
  }
  const rows = graphs.map((graph) => [graph.name, String(graph.nodes.size), graph === loaded.defaultGraph ? "yes" : "", sourceText(graph)]);
  stdout.line(formatTable(["name", "nodes", "default", "source"], rows));
  stdout.line("");
  stdout.line(
    loaded.enabled
      ? `graphs are on: a started work item runs ${loaded.defaultGraph.name} (graph.default)`
      : `graphs are off (graph.enabled: false): a started work item is one session; ${DOCS} shows how to turn them on`,
  );
}

function checkText(check: GraphCheck): string {
  const files = (anyOf: readonly string[]): string => anyOf.join(" or ");
  if (check.kind === "artifact-exists") return `${files(check.anyOf)} exists`;
  if (check.kind === "checklist-complete") return `the checklist of ${files(check.anyOf)} is complete`;
  return `${JSON.stringify(check.argv)} exits 0 within ${check.timeoutSeconds} s`;
}

function nodeKind(node: GraphNode): string {
  const kind = node.terminal ? "terminal" : node.actor === "human" ? "human gate" : "agent";
  return node.phase === undefined ? kind : `${kind}, loop:${node.phase}`;
}

function describeNode(graph: Graph, node: GraphNode): string[] {
  const lines = [`  ${stdout.paint("bold", node.id)} (${nodeKind(node)})${node.id === graph.start ? " — start" : ""}`];
  if (node.description) lines.push(`    ${node.description}`);
  if (node.points.length > 0) lines.push(`    loop points: ${node.points.join(", ")}`);
  if (node.terminal) return lines;
  if (node.taskPlan !== undefined) lines.push(`    task plan: ${node.taskPlan} (each task's content resolved by the capabilities, execute:task)`);
  if (node.produces.length > 0) lines.push(`    produces: ${node.produces.map((anyOf) => anyOf.join(" or ")).join("; ")}`);
  if (node.actor === "agent") {
    if (node.checks.length > 0) lines.push(`    a claim passes when: ${node.checks.map(checkText).join("; ")}`);
    lines.push(`    blocked after ${node.maxAttempts} failed claim${node.maxAttempts === 1 ? "" : "s"}`);
  }
  return lines;
}

/** The graph as data, for `--json`: nodes in their declared order. */
export function graphJson(graph: Graph, isDefault: boolean): object {
  return {
    name: graph.name,
    source: graph.source,
    start: graph.start,
    default: isDefault,
    nodes: [...graph.nodes.values()],
    edges: graph.edges,
  };
}

/** `the-loop graph show NAME`: the nodes and edges in words, as JSON, or as a Mermaid flowchart. */
export async function runGraphShow(globals: GlobalOptions, name: string, options: GraphShowOptions): Promise<void> {
  if (options.json && options.mermaid) throw new UsageError("--json and --mermaid each print the whole answer; choose one");
  const loaded = await openGraphs(globals);
  const graph = loaded.graphs.get(name);
  if (!graph) throw new NotFoundError(`no graph is named "${name}"; known: ${[...loaded.graphs.keys()].join(", ")} (the-loop graph list)`);
  if (options.mermaid) {
    const { graphMermaid } = await import("../../../graph/mermaid.js");
    stdout.line(graphMermaid(graph));
    return;
  }
  if (options.json) {
    stdout.json(graphJson(graph, graph === loaded.defaultGraph));
    return;
  }
  stdout.line(`${stdout.paint("bold", graph.name)} (${sourceText(graph)})${graph === loaded.defaultGraph ? " — the default" : ""}`);
  stdout.line("");
  stdout.line("nodes:");
  for (const node of graph.nodes.values()) stdout.line(describeNode(graph, node).join("\n"));
  stdout.line("");
  stdout.line("edges:");
  const width = Math.max(...graph.edges.map((edge) => `${edge.from} → ${edge.to}`.length));
  for (const edge of graph.edges) stdout.line(`  ${`${edge.from} → ${edge.to}`.padEnd(width)}  on ${edge.on}`);
}
