import { z } from "zod";
import { GRAPH_NAME_MAX, GRAPH_NAME_PATTERN } from "../config/graph-schema.js";
import { CONTROL_COMMANDS } from "../config/schema.js";
import { keysGoTogether, recordShapeModuleText } from "../state/index.js";

/**
 * The control record's one description (`<state.root>/sessions/control/<slug>.json`): its
 * TypeScript types (types.ts) are inferred from this schema and every write is validated with
 * it. It is kept apart from the store so that reading records (`sessions list` shows each item's
 * last command) never loads the schema library: the store checks what it reads against the
 * schema's generated shape (record-shape.ts), and loads this on its first transaction.
 */

/**
 * Where a command came from: a comment on the tracker, `the-loop sessions <command>`, a
 * lifecycle hook that refused a start (its record disarms the item; the actor is the hook's
 * name), the dashboard (its actor is dashboard.operator), or a budget's limit that paused the
 * item (actor `the-loop`, docs/fleet.md#budgets).
 */
export const CONTROL_SOURCES = ["comment", "cli", "hook", "dashboard", "budget"] as const;

/** What an applied command did (the `effect` of `control.command`). */
export const CONTROL_EFFECTS = [
  /** A session was spawned for the item. */
  "started",
  /** The start was honoured and recorded but the spawn failed; the next event or daemon start retries it. */
  "start-pending",
  /** A paused session is active again and was told to re-read the thread. */
  "resumed",
  "paused",
  /** The live session was closed through the normal close path. */
  "stopped",
  /** No live session: the command is remembered as the item's control state (pause, stop). */
  "recorded",
  /** Already in the state asked for. */
  "noop",
  /** A lifecycle hook refused the start (`proceed: false`): the item is disarmed until the next start. */
  "refused",
] as const;

/** Delivery ids (and content keys) of the commands an item took that its record keeps, newest last. */
const RECENT_DELIVERIES_MAX = 50;

/** ISO 8601 in UTC with seconds (`2025-03-01T10:00:00Z`, `…:00.000Z`): what toISOString() writes. */
const timestamp = z.iso.datetime();

/**
 * The last command recorded for a work item, written atomically under its lock. Arming commands
 * are recorded only when they acted; disarming ones always, so a stopped item stays stopped.
 */
export const controlRecordSchema = keysGoTogether(
  z.strictObject({
    version: z.literal(1),
    /** Canonical work item ref. */
    ref: z.string().min(1),
    command: z.enum(CONTROL_COMMANDS),
    source: z.enum(CONTROL_SOURCES),
    /** The tracker login (comment) or the local OS user (cli). A command always has a named actor (docs/control.md#who-may-give-a-command). */
    actor: z.string().min(1),
    /** ISO 8601 UTC. */
    requestedAt: timestamp,
    effect: z.enum(CONTROL_EFFECTS),
    /** The comment's URL, or the CLI command that was run. */
    note: z.string().optional(),
    /**
     * The graph a start chose for the item (`graph=NAME` after the keyword, `sessions start
     * --graph NAME`): the run the item begins next is on it, when the config has it. Kept on the
     * pause and the resume of a start waiting in the start queue (docs/fleet.md).
     */
    graph: z.string().max(GRAPH_NAME_MAX).regex(new RegExp(GRAPH_NAME_PATTERN)).optional(),
    /**
     * The harness an operator's start chose (`sessions start --agent NAME`): the item's next
     * session runs it, while the config allows it. Never set from a comment. Kept on the pause
     * and the resume of a start waiting in the start queue (docs/fleet.md).
     */
    harness: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,31}$/)
      .optional(),
    deliveryId: z.string().optional(),
    /**
     * Delivery ids and content keys of the commands the item took (this one included), newest
     * last: a command redelivered, or seen again by the other ingress path, is not taken twice.
     */
    recentDeliveries: z.array(z.string()).max(RECENT_DELIVERIES_MAX).optional(),
    /**
     * Set when the item's session ended for another reason (the item closed, `sessions close`): the
     * command is kept for the record but no longer governs whether the item may start.
     */
    clearedAt: timestamp.optional(),
    clearedBy: z.string().min(1).optional(),
  }),
  "clearedAt",
  "clearedBy",
);

export const CONTROL_RECORD_SHAPE_FILE = "src/control/record-shape.ts";

/** The generated module of the schema's shape (`npm run generate` writes it to CONTROL_RECORD_SHAPE_FILE). */
export function controlRecordShapeModule(): string {
  return recordShapeModuleText(
    "controlRecordShape",
    "controlRecordSchema (src/control/record-schema.ts)",
    z.toJSONSchema(controlRecordSchema, { io: "input" }),
  );
}
