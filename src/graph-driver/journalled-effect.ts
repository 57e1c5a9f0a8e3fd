import { z } from "zod";
import { EVENT_CATALOG, isEventType } from "../events/catalog.js";
import type { FieldSpec } from "../events/catalog.js";
import type { GraphEventEffect, GraphEventName } from "../graph-run/effects.js";
import type { RunEffect } from "../graph-loop/plan.js";
import { FINAL_GRAPH_STATUSES, GRAPH_ACTOR_KINDS } from "../graph/types.js";
import { LOOP_POINTS } from "../sdk/hooks/loop-catalog.js";
import type { LoopDecidingPointName, LoopPointName } from "../sdk/hooks/loop-catalog.js";

/**
 * A journalled effect read back from the item's state record (a file another daemon wrote, maybe
 * one killed mid-move, maybe an older version): every kind is parsed with the fields it carries,
 * so what the effect runner reads is what its type says. Text that is no effect is dropped (and
 * reported by the caller) rather than run half-formed.
 */

const observedNames = LOOP_POINTS.filter((point) => !point.canDeny).map((point) => point.name);
const decidingNames = LOOP_POINTS.filter((point) => point.canDeny).map((point) => point.name);

const observedName = z.custom<Exclude<LoopPointName, LoopDecidingPointName>>((name) => observedNames.some((known) => known === name));
const decidingName = z.custom<LoopDecidingPointName>((name) => decidingNames.some((known) => known === name));

const actorSchema = z.object({ kind: z.enum(GRAPH_ACTOR_KINDS), id: z.string() });

const otherEffectSchema = z.union([
  z.object({ kind: z.literal("phase-label"), remove: z.string().nullable(), add: z.string().nullable() }),
  z.object({
    kind: z.literal("hook"),
    point: z.literal("phase_changed"),
    graph: z.string(),
    node: z.string(),
    fromPhase: z.string(),
    toPhase: z.string(),
    terminal: z.boolean(),
  }),
  z.object({ kind: z.literal("hook"), point: z.literal("waiting_for_input"), asker: z.literal("gate"), node: z.string() }),
  z.object({ kind: z.literal("announce-phase"), node: z.string(), phase: z.string().nullable(), terminal: z.boolean() }),
  z.object({ kind: z.literal("deliver-assignment"), node: z.string(), generation: z.number().int() }),
  z.object({ kind: z.literal("request-review"), node: z.string(), generation: z.number().int() }),
  z.object({ kind: z.literal("announce-force"), from: z.string().nullable(), to: z.string(), reason: z.string(), actor: actorSchema }),
  z.object({
    kind: z.literal("announce-answer"),
    node: z.string(),
    decision: z.enum(["approved", "changes-requested"]),
    reason: z.string().nullable(),
    actor: actorSchema,
    via: z.enum(["cli", "dashboard"]),
  }),
  z.object({ kind: z.literal("run-ended"), status: z.enum(FINAL_GRAPH_STATUSES) }),
  z.object({ kind: z.literal("loop"), name: observedName, payload: z.record(z.string(), z.unknown()) }),
  z.object({
    kind: z.literal("loop-denial"),
    point: decidingName,
    hook: z.string(),
    reason: z.string(),
    node: z.string(),
    status: z.enum(["failed", "blocked"]),
  }),
]) satisfies z.ZodType<Exclude<RunEffect, GraphEventEffect>>;

function isGraphEventName(name: unknown): name is GraphEventName {
  return typeof name === "string" && name.startsWith("graph.") && isEventType(name);
}

function fits(spec: FieldSpec, value: unknown): boolean {
  const kind = spec.endsWith("?") ? spec.slice(0, -1) : spec;
  if (value === undefined) return kind !== spec;
  if (kind === "string") return typeof value === "string";
  if (kind === "integer") return Number.isInteger(value);
  if (kind === "boolean") return typeof value === "boolean";
  return Array.isArray(value) && value.every((entry) => typeof entry === "string");
}

/** An event effect whose fields are exactly its catalog entry's, each of its kind. */
function isGraphEventEffect(value: unknown): value is GraphEventEffect {
  if (typeof value !== "object" || value === null || !("kind" in value) || value.kind !== "event") return false;
  const name = "name" in value ? value.name : undefined;
  const fields = "fields" in value ? value.fields : undefined;
  if (!isGraphEventName(name) || typeof fields !== "object" || fields === null || Array.isArray(fields)) return false;
  const specs: Readonly<Record<string, FieldSpec>> = EVENT_CATALOG[name].fields;
  const given = new Map(Object.entries(fields));
  return [...given.keys()].every((key) => Object.hasOwn(specs, key)) && Object.entries(specs).every(([key, spec]) => fits(spec, given.get(key)));
}

/** A journalled effect read back; undefined for text that is not one (it is dropped, reported). */
export function parseJournalledEffect(text: string): RunEffect | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (isGraphEventEffect(value)) return value;
  const parsed = otherEffectSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}
