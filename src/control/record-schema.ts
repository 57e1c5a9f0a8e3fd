import { z } from "zod";
import { CONTROL_COMMANDS } from "./types.js";
import type { ControlEffect, ControlRecord, ControlSource } from "./types.js";
import { CONTROL_RECENT_DELIVERIES_MAX } from "./store.js";

/**
 * The validation of control records (`<state.root>/sessions/control/<slug>.json`), kept apart
 * from the store so that reading records (`sessions list` shows each item's last command) never
 * loads the schema library: the store checks what it reads by hand (controlRecordProblem in
 * store.ts, pinned to this schema by test/control/store.test.ts) and loads this on its first write.
 */

const CONTROL_SOURCES = ["comment", "cli", "hook"] as const satisfies readonly ControlSource[];

const CONTROL_EFFECTS = [
  "started",
  "start-pending",
  "resumed",
  "paused",
  "stopped",
  "recorded",
  "noop",
  "refused",
] as const satisfies readonly ControlEffect[];

/** ISO 8601 in UTC with seconds (`2025-03-01T10:00:00Z`, `…:00.000Z`): what toISOString() writes. */
const timestamp = z.iso.datetime();

export const controlRecordSchema = z
  .strictObject({
    version: z.literal(1),
    ref: z.string().min(1),
    command: z.enum(CONTROL_COMMANDS),
    source: z.enum(CONTROL_SOURCES),
    /** R1.6: a command always has a named actor. */
    actor: z.string().min(1),
    requestedAt: timestamp,
    effect: z.enum(CONTROL_EFFECTS),
    note: z.string().optional(),
    deliveryId: z.string().optional(),
    recentDeliveries: z.array(z.string()).max(CONTROL_RECENT_DELIVERIES_MAX).optional(),
    clearedAt: timestamp.optional(),
    clearedBy: z.string().min(1).optional(),
  })
  .refine((record) => (record.clearedAt === undefined) === (record.clearedBy === undefined), {
    message: "clearedAt and clearedBy go together",
  });

// The schema and the hand-written type must describe the same record (every command, source and
// effect included: a missing enum member narrows the output type and fails this check).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaMatchesType: Same<z.output<typeof controlRecordSchema>, ControlRecord> = true;
void schemaMatchesType;
