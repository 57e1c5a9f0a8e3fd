import type { GraphNode, LoopPoint } from "./types.js";

/**
 * When a node passes the loop points it binds (docs/graph.md, "Loop points"). Pure: the runtime
 * asks at each moment of a run and dispatches what it gets, in that order; what a point does is
 * the capabilities' (docs/capabilities.md).
 *
 * - `enter`: the item entered the node;
 * - `attempt-end`: an agent's claim at the node, before its checks run (every claim);
 * - `claim-passed`: a claim whose checks passed;
 * - `retry`: a claim failed and the item stays on the node for another attempt.
 */
export type PointMoment = "enter" | "attempt-end" | "claim-passed" | "retry";

export const WAVE_PRE: LoopPoint = "execute:wave:pre";
export const WAVE_POST: LoopPoint = "execute:wave:post";

/** The points that bracket each attempt at an agent node, rather than the node as a whole. */
export function isWavePoint(point: LoopPoint): boolean {
  return point === WAVE_PRE || point === WAVE_POST;
}

export function isPrePoint(point: LoopPoint): boolean {
  return point.endsWith(":pre");
}

export function isPostPoint(point: LoopPoint): boolean {
  return point.endsWith(":post");
}

const bound = (node: GraphNode, point: LoopPoint): LoopPoint[] => (node.points.includes(point) ? [point] : []);

/** The loop points `node` passes at `moment`, in the order the runtime dispatches them. */
export function pointsAt(node: GraphNode, moment: PointMoment): LoopPoint[] {
  // A terminal node is never worked on: everything bound to it passes once, when it is reached.
  if (node.terminal) return moment === "enter" ? [...node.points] : [];
  // A human node passes its points on entry; the compiler keeps its `:post` points off it.
  if (node.actor === "human") return moment === "enter" ? node.points.filter(isPrePoint) : [];
  switch (moment) {
    case "enter":
      // The node's own `:pre` points come before the first attempt's wave opens.
      return [...node.points.filter((point) => isPrePoint(point) && !isWavePoint(point)), ...bound(node, WAVE_PRE)];
    case "attempt-end":
      return bound(node, WAVE_POST);
    case "claim-passed":
      return node.points.filter((point) => isPostPoint(point) && !isWavePoint(point));
    case "retry":
      return bound(node, WAVE_PRE);
  }
}
