import { isMap, isScalar } from "yaml";
import type { YAMLMap } from "yaml";
import { DEFAULT_CLOSE_AFTER_MINUTES } from "../graph-schema.js";

/**
 * `upgrade-config` and the graph: with the graph on, a run's session now closes
 * `graph.closeAfterMinutes` after the run ends, so the key is made visible, with its default, in
 * a `graph` block that turns the graph on — and reported as a decision, as requireStartCommand is.
 */

export function graphDefaults(): { readonly closeAfterMinutes: number } {
  return { closeAfterMinutes: DEFAULT_CLOSE_AFTER_MINUTES };
}

export const CLOSE_AFTER_KEY = "graph.closeAfterMinutes";

export const CLOSE_AFTER_COMMENT = " A run's session closes this long after the run ends; 0: at once, never: kept (added by `the-loop upgrade-config`).";

export const CLOSE_AFTER_WHY =
  `its default changes behaviour: when a graph run ends, its session is now told so and closed ${DEFAULT_CLOSE_AFTER_MINUTES} minutes later (the transcript kept). ` +
  "Set it to never to keep a session open after its run ends, as before, or 0 to close it at once.";

/** The file's `graph` block when it is a plain (block-style) mapping that turns the graph on. */
export function graphOn(top: YAMLMap): YAMLMap | undefined {
  const graph: unknown = top.get("graph", true);
  if (!isMap(graph) || graph.flow) return undefined;
  const enabled: unknown = graph.get("enabled", true);
  return isScalar(enabled) && enabled.value === true ? graph : undefined;
}
