import { dirname } from "node:path";
import { messageOf } from "../../../errors.js";
import { hasNodeCaps, heldAhead, heldText, occupancy, runsAt } from "../../../graph-run/node-caps.js";
import type { GraphState } from "../../../graph-run/state.js";
import { openGraphStates } from "../../../graph-run/store.js";
import type { Graph } from "../../../graph/types.js";
import type { Project } from "../../context.js";
import { stderr } from "../../output.js";

/**
 * routing.limits.perNode as the CLI shows it (docs/fleet.md, "Caps on graph nodes"): where a run
 * waiting at an edge stands — the edge, the cap that holds it as the config sets it now, how many
 * runs wait ahead of it under that cap — for `why` and `graph status`; and each cap with the runs
 * at it, for `status`. Read from the graph state records (one cached listing), never the daemon.
 */

/** A run's wait at an edge: what `graph status --json` gives as `held_edge`. */
export interface EdgeWait {
  readonly to: string;
  readonly outcome: string;
  readonly since: string;
  readonly cap: string;
  /** The cap's limit as the config sets it now; null once it is no longer set. */
  readonly limit: number | null;
  readonly ahead: number;
  /** `waiting at edge A → B: node B full, cap routing.limits.perNode.B = N, K ahead`. */
  readonly text: string;
}

/** Undefined when the run waits at no edge. The listing that counts those ahead is read only then. */
export async function edgeWait(project: Pick<Project, "config" | "paths" | "stores">, state: GraphState): Promise<EdgeWait | undefined> {
  const held = state.heldEdge;
  if (held === undefined || state.status !== "waiting") return undefined;
  const limit = project.config.routing.limits.perNode[held.cap];
  let ahead = 0;
  try {
    ahead = heldAhead(state, (await (project.stores?.graphStates ?? openGraphStates(project.paths)).list()).records);
  } catch (error) {
    // The wait is still told; only the count ahead is unknown (a damaged listing is reported by the commands that list).
    stderr.warn(`could not count the runs waiting ahead: ${messageOf(error)}`);
  }
  return { ...held, limit: limit ?? null, ahead, text: heldText(state, held, limit, ahead) };
}

/** Each perNode cap with how many runs are at it now, as `status` lists the caps: `perNode.review 1/1`. */
export async function nodeCapUsage(project: Pick<Project, "config" | "paths" | "loaded" | "stores">): Promise<{ cap: string; live: number; limit: number }[]> {
  const caps = project.config.routing.limits.perNode;
  if (!hasNodeCaps(caps)) return [];
  let graphs: ReadonlyMap<string, Graph> = new Map();
  try {
    const { loadGraphs } = await import("../../../graph/registry.js");
    const file = project.loaded.source.path;
    graphs = (await loadGraphs(project.config, file ? dirname(file) : project.loaded.baseDir, file ? { configFile: file } : {})).graphs;
  } catch (error) {
    // Without the graphs a phase key counts nothing: said, and the node ids are still counted.
    stderr.warn(`could not load the graphs to count the runs at each phase: ${messageOf(error)}`);
  }
  const { records } = await (project.stores?.graphStates ?? openGraphStates(project.paths)).list();
  const counts = occupancy(caps, runsAt(graphs, records));
  return Object.entries(caps).map(([key, limit]) => ({ cap: `perNode.${key}`, live: counts.get(key) ?? 0, limit }));
}
