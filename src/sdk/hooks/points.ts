/**
 * Every hook point of every family: what a declaration's `on` is checked against, what the
 * loader hands the executors, and what `handleRequest` serves.
 */
import { LIFECYCLE_POINTS } from "./catalog.js";
import type { HookPoint } from "./catalog.js";
import { LOOP_POINTS } from "./loop-catalog.js";

export const HOOK_FAMILIES = ["lifecycle", "loop"] as const;
export type HookFamily = (typeof HOOK_FAMILIES)[number];

/** The lifecycle points, then the loop events: the order `the-loop hooks points` lists them in. */
export const HOOK_POINTS: readonly HookPoint[] = [...LIFECYCLE_POINTS, ...LOOP_POINTS];

export const HOOK_POINT_NAMES: readonly string[] = HOOK_POINTS.map((point) => point.name);

/** The point of a name, whatever its family; undefined for any other name. */
export function hookPoint(name: string): HookPoint | undefined {
  return HOOK_POINTS.find((point) => point.name === name);
}

/** The points of one family, in catalog order. */
export function pointsOfFamily(family: HookFamily): readonly HookPoint[] {
  return HOOK_POINTS.filter((point) => point.family === family);
}
