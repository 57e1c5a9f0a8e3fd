import { z } from "zod";
import { keysGoTogether, recordShapeModuleText } from "../state/index.js";
import { GRAPH_ACTOR_KINDS, GRAPH_OUTCOMES, GRAPH_STATUSES } from "../graph/types.js";

/**
 * The graph state record's one description (`<state.root>/graphs/<slug>.json`, one per work
 * item): where the item is in its graph, and how it got there. Its TypeScript type is inferred
 * from this schema and every write is validated with it. It lives in the state root, never in a
 * checkout, so the agent the graph judges cannot rewrite it. Reading records loads no schema
 * library (`graph status` answers on a tight budget with thousands of records): the store
 * (store.ts) checks what it reads against the schema's generated shape (state-shape.ts), and
 * loads this module on its first transaction.
 */

/** How many history entries a record keeps: the newest, so a long-lived item's file stays small. */
export const GRAPH_HISTORY_MAX = 200;

/** What a history entry records. */
export const GRAPH_HISTORY_KINDS = [
  /** The run began (at the graph's start node, or where `graph force` put an item without one). */
  "started",
  /** The item entered a node. */
  "entered",
  /** The agent claimed the node and every check passed. */
  "claimed",
  /** The agent claimed the node and a check failed (`reason`: the first failing check's message). */
  "check-failed",
  /** A claim that was not considered: the wrong node, not the agent's turn, a final run. */
  "claim-refused",
  /** An authorized person answered a gate (`outcome`: approved or changes-requested). */
  "gate-decided",
  /** A comment carried both gate answers: recorded, nothing moved. */
  "gate-ambiguous",
  /** A gate answer that does not count (unauthorized, self-authored, nothing waiting). */
  "gate-refused",
  /** An operator put the item on a node (`graph force`, with its reason). */
  "forced",
  /** Automatic progress stopped at the node (`reason` says why). */
  "blocked",
  /** A terminal node was reached. */
  "completed",
  /** The run ended without reaching a terminal node. */
  "failed",
  /** A changes-requested answer would have started a generation past the graph's `maxGenerations`: the run ended. */
  "exhausted",
  /** The run made no progress at an agent node within `graph.stallAfterMinutes`: it ended. */
  "stalled",
  /** The item was closed, or stopped, while its run was under way: the run ended. */
  "canceled",
  /** The edge the run would take leads to a node whose routing.limits.perNode cap is reached: it waits at the edge (`node`: the one it waits to enter). */
  "held",
] as const;
export type GraphHistoryKind = (typeof GRAPH_HISTORY_KINDS)[number];

/** A node id, as the graph file spells it (the loader checks the pattern; a record only needs one). */
const nodeId = z.string().min(1);

/**
 * A reason code: kebab words (`check-failed`, `max-attempts`), stable for scripts to match; the
 * loop family's codes keep the spelling its payloads use (`hook_denied`).
 */
const reasonCode = z.string().regex(/^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$/);

/** ISO 8601 in UTC with seconds (`2025-03-01T10:00:00.000Z`): what toISOString() writes. */
const timestamp = z.iso.datetime();

export const graphActorSchema = z.strictObject({
  kind: z.enum(GRAPH_ACTOR_KINDS),
  /** A tracker login, an OS user, a session id; `the-loop` for the daemon. */
  id: z.string().min(1),
});

export const graphHistoryEntrySchema = z.strictObject({
  at: timestamp,
  kind: z.enum(GRAPH_HISTORY_KINDS),
  /** The node the entry is about: the one entered, claimed, decided or forced to. */
  node: nodeId,
  /** The node the item left, for an entry that moved it. */
  from: nodeId.optional(),
  outcome: z.enum(GRAPH_OUTCOMES).optional(),
  actor: graphActorSchema,
  reason: z.string().optional(),
  /** A block's reason code: whether the block ended the loop run is read from it once a later end replaced the state's own. */
  reasonCode: reasonCode.optional(),
});

export const graphStateSchema = keysGoTogether(
  z.strictObject({
    version: z.literal(1),
    /** Canonical work item ref. */
    ref: z.string().min(1),
    /** The graph's name. The item keeps the graph it started with until its run ends. */
    graph: z.string().min(1),
    /** An id given when the run started, so records, events and hooks of one run can be told from the next. */
    loopRunId: z.string().min(1),
    /** The current node. */
    node: nodeId,
    /**
     * The phase whose `loop:<phase>` label the item carries, from the last node entered that had
     * one; absent until one did. The one label the-loop removes when the phase changes.
     */
    phase: z.string().min(1).optional(),
    status: z.enum(GRAPH_STATUSES),
    /** 1 at the start; each changes-requested answer starts the next. */
    generation: z.number().int().positive(),
    /** Failed claims per node in this generation (a node without an entry has none). */
    attempts: z.record(nodeId, z.number().int().positive()),
    /** The last outcome each node left with. */
    outcomes: z.record(nodeId, z.enum(GRAPH_OUTCOMES)),
    startedAt: timestamp,
    updatedAt: timestamp,
    /** Why the item is waiting, blocked, ended short of a terminal node, or stayed after its last claim (`graph status` shows them as null otherwise). */
    reasonCode: reasonCode.optional(),
    reason: z.string().min(1).optional(),
    /**
     * The assignment the session has not received yet (it was paused, or had no live session):
     * delivered when it resumes or starts, if the item is still on that node in that generation.
     * Entering a node forgets it.
     */
    undelivered: z.strictObject({ node: nodeId, generation: z.number().int().positive() }).optional(),
    /**
     * What the capabilities' hooks gave the node's assignment when the item entered it (each role's
     * contributions, the steps' instructions, the tasks' resolved content): every later delivery of
     * that assignment says the same, without running a hook again. Entering a node forgets it.
     */
    capabilityText: z.strictObject({ node: nodeId, generation: z.number().int().positive(), text: z.string().max(1_000_000) }).optional(),
    /**
     * The effects of the last move (labels, hooks, comments, an assignment), one JSON text each,
     * written with the move and removed once they were carried out: a daemon killed in between
     * carries them out on its next start. So a crash repeats an effect, and never loses a move.
     */
    pendingEffects: z.array(z.string().max(200_000)).max(100).optional(),
    /**
     * The `resolved_network_participation` of the run's loop events, frozen when it started, so a
     * later change of the-loop's channels never changes what a running loop says it is.
     */
    networkParticipation: z.strictObject({ version: z.string().min(1), mode: z.string().min(1), source: z.string().min(1) }).optional(),
    /** What started the run, for the loop events' `origin_kind` and `origin_ref`. */
    origin: z.strictObject({ kind: z.enum(["comment", "cli", "event", "retry"]), ref: z.string().min(1).optional() }).optional(),
    /** The `timestamp` of the run's last loop event: the next one is never earlier (graph-loop/payload.ts). */
    lastLoopAt: timestamp.optional(),
    /** When an attempt at a node last ended (loop.node.terminal): the run's last progress. */
    lastProgressAt: timestamp.optional(),
    /** Attempts ended per node over the whole run, every generation: the `N` of a loop event's `task_id` (`NODE#N`). */
    tasks: z.record(nodeId, z.number().int().positive()).optional(),
    /** The loop hook that denied the run's generation or gate (reason code `hook_denied`): its name, the event, its reason. */
    denial: z.strictObject({ hook: z.string().min(1), point: z.string().min(1), reason: z.string() }).optional(),
    /**
     * The edge the run waits at (status `waiting`, reason code `node-full`): the node it leads to
     * is full under routing.limits.perNode (`cap`: the key that held it). The run stays at the node
     * it would leave until the daemon releases it, oldest `since` first; entering any node forgets it.
     */
    heldEdge: z.strictObject({ to: nodeId, outcome: z.enum(GRAPH_OUTCOMES), since: timestamp, cap: z.string().min(1) }).optional(),
    /** Oldest first, the newest GRAPH_HISTORY_MAX entries. */
    history: z.array(graphHistoryEntrySchema).max(GRAPH_HISTORY_MAX),
  }),
  "reasonCode",
  "reason",
);

export type GraphState = z.output<typeof graphStateSchema>;
export type GraphHistoryEntry = z.output<typeof graphHistoryEntrySchema>;

export const GRAPH_STATE_SHAPE_FILE = "src/graph-run/state-shape.ts";

/** The generated module of the schema's shape (`npm run generate` writes it to GRAPH_STATE_SHAPE_FILE). */
export function graphStateShapeModule(): string {
  return recordShapeModuleText("graphStateShape", "graphStateSchema (src/graph-run/state.ts)", z.toJSONSchema(graphStateSchema, { io: "input" }));
}
