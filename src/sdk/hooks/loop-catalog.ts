/**
 * The `loop.*` hook family: seven events of a work item's process-graph run, on the same engine,
 * declaration and SDK as the lifecycle points. Pure data with no daemon imports, like catalog.ts.
 *
 * What the words mean in the-loop: a **loop run** is one work item's run of its process graph;
 * a **generation** is one pass through the graph (a changes-requested answer starts the next); a
 * **gate** is a human gate's decision, and the step into a terminal node.
 *
 * The family differs from the lifecycle in three ways, all read from the points themselves:
 * every point is `optIn` (an entry runs at it only when its `on` names it); only the two `.pre`
 * events are `synchronous` and `canDeny`; the others answer an annotate-only patch (`labels`,
 * recorded, never applied). A hook that fails never denies, `required` or not (fail-open).
 */
import type { DecisionSpec, FieldSpec, HookPoint, ValueOfSpec } from "./catalog.js";

export interface LoopPoint extends HookPoint {
  readonly family: "loop";
  readonly optIn: true;
  /** Whether the run waits for the hooks' answer before it goes on (only the `.pre` events). */
  readonly synchronous: boolean;
  /** Whether an answer `denied: true` (or `deny: true`) stops the run (only the `.pre` events). */
  readonly canDeny: boolean;
}

/** `resolved_network_participation` until the-loop has live channels: a local run, decided by the-loop itself. */
export const LOCAL_NETWORK_PARTICIPATION = { version: "network-participation/v1", mode: "local", source: "built_in_local" } as const;

const nullableString = (description: string): FieldSpec & { readonly nullable: true } => ({ kind: "string", description, nullable: true });

/** The standard event base and the loop context: every `loop.*` payload carries these keys, in this order. */
const LOOP_CONTEXT = {
  event: { kind: "string", description: "The event's name (`loop.started`, …)." },
  timestamp: {
    kind: "string",
    description: "When it happened: RFC 3339 in UTC with milliseconds (`2026-07-27T12:00:00.000Z`); never earlier than the run's previous event.",
  },
  loop_run_id: { kind: "string", description: "The loop run: one work item's run of its process graph, kept in the graph's state from start to end." },
  parent_loop_run_id: { kind: "string", nullable: true, description: "The run that started this one; null, since the-loop does not nest runs yet." },
  workspace_id: { kind: "string", description: "Where the work item lives: `owner/repo` on GitHub, the project name on the local tracker." },
  loop_name: { kind: "string", description: "The process graph's name." },
  generation: { kind: "integer", description: "The pass through the graph, from 1; a changes-requested answer at a gate starts the next." },
  task_id: { kind: "string", nullable: true, description: "The node and the attempt at it, `NODE#N` (`implement#2`); null at an event about the run or a whole generation." },
  run_id: { kind: "string", nullable: true, description: "The attempt's own id, unique across runs (`LOOP_RUN_ID/NODE#N`); null where task_id is." },
  run_kind: { kind: "string", nullable: true, description: "Who works the node: `agent`, `human` (a gate) or `terminal`; null where task_id is." },
  node_id: { kind: "string", description: "The graph node the event is about (see each event)." },
  resolved_network_participation: {
    kind: "json-object",
    description:
      'The run\'s participation snapshot, frozen at its start: `{version: "network-participation/v1", mode: "local", source: "built_in_local"}` until the-loop has live channels.',
  },
  agent_name: { kind: "string", nullable: true, description: "The harness of the item's session (`claude`, …); null when the item has no session." },
  session_id: { kind: "string", nullable: true, description: "The item's session id; null when it has none." },
  actor_kind: { kind: "string", description: "Who caused the event: `agent`, `human`, `operator` or `daemon`." },
  actor_id: { kind: "string", description: "That actor: a tracker login, an OS user, a session id; `the-loop` for the daemon." },
  origin_kind: { kind: "string", description: "What started the run: `comment`, `cli`, `event` (the spawn policy alone) or `retry`." },
  origin_ref: { kind: "string", nullable: true, description: "Where that start can be read (the comment's URL, or the delivery id); null when nothing records it." },
} as const satisfies Readonly<Record<string, FieldSpec>>;

const details = { kind: "json-object", nullable: true, description: "More about the event, read-only JSON (see each event); null when there is nothing more." } as const;
const reasonCode = nullableString("A machine-readable reason for the status (`hook_denied`, `max_attempts`, …); null when the status needs none.");
const offeredDenied = { kind: "boolean", description: "false as sent; a hook answers true to deny." } as const;
const offeredDenyReason = nullableString("null as sent; a denying hook answers why.");

const denyReason = {
  kind: "string",
  nullable: true,
  description: "Why the hook denies (default null).",
  applies: "Kept with the denial: in the run's state, its event and the marked comment naming the hook.",
} as const satisfies DecisionSpec;
const deny = {
  kind: "boolean",
  description: "The same decision as `denied`, under the name agh uses (default false).",
  applies: "As `denied`: either one true denies.",
} as const satisfies DecisionSpec;
const annotate = {
  labels: {
    kind: "string-map",
    description: "Labels for the event, name → text (default none).",
    applies: "Recorded with the hook's name, never applied: nothing of the run changes. Any other key, a denial included, is ignored and recorded as such.",
  },
} as const satisfies Readonly<Record<string, DecisionSpec>>;

const observed = { family: "loop", optIn: true, synchronous: false, canDeny: false } as const;
const deciding = { family: "loop", optIn: true, synchronous: true, canDeny: true } as const;

export const LOOP_POINTS = [
  {
    name: "loop.started",
    ...observed,
    method: "loopStarted",
    description: "A work item's graph run began.",
    fires: "When the run's first state is written at the graph's start node, before anything of the run is done.",
    facts: {
      ...LOOP_CONTEXT,
      status: { kind: "string", description: "`running`." },
      cause: nullableString("What began it: `start` (a start command, or the spawn policy alone)."),
      reason_code: reasonCode,
      details,
    },
    decisions: annotate,
  },
  {
    name: "loop.generation.pre",
    ...deciding,
    method: "loopGenerationPre",
    description: "A generation is about to begin: the first pass, or the next after changes were requested.",
    fires: "Before the generation's first assignment is delivered; the run waits for the answer.",
    facts: {
      ...LOOP_CONTEXT,
      status: { kind: "string", description: "The run's status: `running`." },
      reason_code: reasonCode,
      details,
      denied: offeredDenied,
      deny_reason: offeredDenyReason,
    },
    decisions: {
      denied: {
        kind: "boolean",
        description: "Whether the hook denies the generation (default false).",
        applies: "true ends the run `failed` with reason_code `hook_denied`, the reason kept in its own field; no assignment is delivered.",
      },
      deny_reason: denyReason,
      deny,
    },
  },
  {
    name: "loop.generation.post",
    ...observed,
    method: "loopGenerationPost",
    description: "A generation ended: changes were requested (the next one begins), or the run ended.",
    fires: "After the gate that requested changes was passed (before the next generation's loop.generation.pre), or before loop.terminal when the run ended; a denied loop.generation.pre also ends its generation.",
    facts: {
      ...LOOP_CONTEXT,
      status: { kind: "string", description: "The run's status as the generation ended: `running` (changes requested; reason_code `changes_requested`), or how the run ended (`done`, `failed`, …)." },
      reason_code: reasonCode,
      details,
    },
    decisions: annotate,
  },
  {
    name: "loop.gate.pre",
    ...deciding,
    method: "loopGatePre",
    description: "A gate is about to be passed: a human gate's decision, or the step into a terminal node.",
    fires: "Before the decision moves the item (its node and label) or the run ends at a terminal node; the run waits for the answer.",
    facts: {
      ...LOOP_CONTEXT,
      gate_id: nullableString("The human gate's node; null at the step into a terminal node."),
      decision: nullableString("The gate's answer: `approved` or `changes-requested`; null at the step into a terminal node."),
      status: { kind: "string", description: "What the run becomes if the gate passes: `running` (on to the next node, or the next generation) or the terminal status (`done`, …)." },
      reason_code: reasonCode,
      details,
      denied: offeredDenied,
      deny_reason: offeredDenyReason,
    },
    decisions: {
      denied: {
        kind: "boolean",
        description: "Whether the hook denies the gate (default false).",
        applies: "true ends the run `blocked`; the item stays on its node and label.",
      },
      deny_reason: denyReason,
      deny,
    },
  },
  {
    name: "loop.gate.post",
    ...observed,
    method: "loopGatePost",
    description: "A gate was passed, or denied.",
    fires: "Right after loop.gate.pre was answered and its outcome applied.",
    facts: {
      ...LOOP_CONTEXT,
      gate_id: nullableString("The human gate's node; null at the step into a terminal node."),
      decision: nullableString("The gate's answer: `approved` or `changes-requested`; null at the step into a terminal node."),
      status: { kind: "string", description: "The run's status now: `running`, the terminal status, or `blocked` after a denial." },
      reason_code: reasonCode,
      details,
    },
    decisions: annotate,
  },
  {
    name: "loop.node.terminal",
    ...observed,
    method: "loopNodeTerminal",
    description: "An attempt at a node ended: its checks decided the agent's claim, a person answered its gate, or an operator forced the item off it.",
    fires: "After the run's last-progress time is advanced, before the run advances along the outcome's edge.",
    facts: {
      ...LOOP_CONTEXT,
      task_status: {
        kind: "string",
        description: "How the attempt ended: `passed` or `failed` (a claim's checks; at a gate, approved or changes requested), or `forced` (`the-loop graph force`).",
      },
      run_status: { kind: "string", description: "The run's status as the attempt ended: `running`, `waiting`, `blocked`, `done` or `failed`." },
      error: nullableString("Why the attempt failed (the first failing check's message, or `changes requested`); null when it passed or was forced."),
      details,
    },
    decisions: annotate,
  },
  {
    name: "loop.terminal",
    ...observed,
    method: "loopTerminal",
    description: "A work item's graph run ended.",
    fires: "When the run's final status is written; what waited on the run (a start of the same item held behind it) is released after it.",
    facts: {
      ...LOOP_CONTEXT,
      status: { kind: "string", description: "How the run ended: `done`, `failed`, `blocked`, `exhausted`, `stalled` or `canceled`." },
      cause: nullableString("What ended it (e.g. `node` a terminal node, `contract` a hook's denial, `iteration_cap`, `no_progress`, `closed`, `stopped`)."),
      reason_code: reasonCode,
      details,
    },
    decisions: annotate,
  },
] as const satisfies readonly LoopPoint[];

export type LoopPointSpec = (typeof LOOP_POINTS)[number];
export type LoopPointName = LoopPointSpec["name"];
/** The two events whose answer can deny. */
export type LoopDecidingPointName = Extract<LoopPointSpec, { readonly canDeny: true }>["name"];

type LoopPointNamed<N extends LoopPointName> = Extract<LoopPointSpec, { readonly name: N }>;

/** What a hook receives at a loop event: every key present, null where it does not apply. */
export type LoopPayloadOf<N extends LoopPointName> = {
  readonly [F in keyof LoopPointNamed<N>["facts"]]: ValueOfSpec<LoopPointNamed<N>["facts"][F]>;
};

/** What a hook may answer at a loop event: any of its decisions, or nothing to pass. */
export type LoopAnswerOf<N extends LoopPointName> = {
  -readonly [D in keyof LoopPointNamed<N>["decisions"]]?: ValueOfSpec<LoopPointNamed<N>["decisions"][D]>;
};

export type LoopStartedPayload = LoopPayloadOf<"loop.started">;
export type LoopGenerationPrePayload = LoopPayloadOf<"loop.generation.pre">;
export type LoopGenerationPostPayload = LoopPayloadOf<"loop.generation.post">;
export type LoopGatePrePayload = LoopPayloadOf<"loop.gate.pre">;
export type LoopGatePostPayload = LoopPayloadOf<"loop.gate.post">;
export type LoopNodeTerminalPayload = LoopPayloadOf<"loop.node.terminal">;
export type LoopTerminalPayload = LoopPayloadOf<"loop.terminal">;

/** The answer of a `.pre` event: `{denied: true, deny_reason}` denies (`deny` is the same as `denied`). */
export type LoopDenyAnswer = LoopAnswerOf<"loop.generation.pre">;
/** The answer of an observe-only event: labels, recorded and never applied. */
export type LoopAnnotateAnswer = LoopAnswerOf<"loop.started">;

/** The keys every loop payload carries before its event's own. */
export const LOOP_CONTEXT_FIELDS: readonly string[] = Object.keys(LOOP_CONTEXT);

/** The loop event of a name; undefined for any other name (a wildcard included). */
export function loopPoint(name: string): LoopPointSpec | undefined {
  return LOOP_POINTS.find((point) => point.name === name);
}

/** The names a declaration's `on` may use for the family: exact names only. */
export const LOOP_POINT_NAMES: readonly LoopPointName[] = LOOP_POINTS.map((point) => point.name);
