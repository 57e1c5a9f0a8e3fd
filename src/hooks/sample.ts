import type { FieldSpec, HookPoint, WorkItemEntity } from "../sdk/hooks/catalog.js";
import { LOCAL_NETWORK_PARTICIPATION } from "../sdk/hooks/loop-catalog.js";
import type { HookContext } from "./types.js";

/**
 * A payload for `the-loop hooks test` when the operator gives none: every fact the point always
 * carries, with a value of its kind, and every decision at the value the-loop would offer. Keys a
 * point omits where they have no value (agh's `omitempty`) are omitted here too, so a hook sees
 * the leanest payload it must cope with. Values of agh's vocabularies are agh's words.
 */

const WORK_ITEM: WorkItemEntity = {
  ref: "local:sample#1",
  tracker: "local",
  host: "local",
  repository: "sample",
  number: 1,
  kind: "issue",
  url: "local:sample#1",
  id: "local:sample#1",
};

/** Values a bare kind would say nothing with: the loop context and agh's enums. */
const NAMED: Readonly<Record<string, unknown>> = {
  loop_run_id: "sample-run-1",
  workspace_id: "sample",
  loop_name: "default",
  generation: 1,
  node_id: "implement",
  resolved_network_participation: LOCAL_NETWORK_PARTICIPATION,
  actor_kind: "daemon",
  actor_id: "the-loop",
  origin_kind: "cli",
  status: "running",
  cause: "start",
  harness: "claude",
  deliveryId: "cli-sample",
  work_item: WORK_ITEM,
};

function sampleOf(name: string, spec: FieldSpec): unknown {
  if (Object.hasOwn(NAMED, name)) return structuredClone(NAMED[name]);
  switch (spec.kind) {
    case "string":
      return `sample ${name.replaceAll("_", " ")}`;
    case "boolean":
      return false;
    case "integer":
      return 1;
    case "string[]":
      return [];
    case "work-item":
      return structuredClone(WORK_ITEM);
    case "json-object":
    case "string-map":
      return {};
  }
}

/** What a decision is offered as before any hook answers: go ahead, nothing said. */
function offeredOf(name: string, spec: FieldSpec): unknown {
  if (spec.nullable === true) return null;
  if (name === "proceed") return true;
  switch (spec.kind) {
    case "string":
      return "";
    case "boolean":
      return false;
    case "integer":
      return 0;
    case "string[]":
      return [];
    default:
      return {};
  }
}

export function samplePayload(point: HookPoint, now: Date = new Date()): HookContext {
  const payload: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(point.facts)) {
    if (spec.optional === true) continue;
    payload[name] = name === "event" ? point.name : name === "timestamp" ? now.toISOString() : sampleOf(name, spec);
  }
  for (const [name, spec] of Object.entries(point.decisions)) {
    if (spec.optional === true || Object.hasOwn(payload, name)) continue;
    // A loop event's decisions are answered, never offered: agh sends none of them.
    if (point.family === "loop") continue;
    payload[name] = offeredOf(name, spec);
  }
  return payload;
}
