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

const optionalString = (description: string): FieldSpec & { readonly optional: true } => ({ kind: "string", description, optional: true });

/**
 * The standard event base and the loop context: every `loop.*` payload carries these keys, in
 * this order, each one omitted where it has no value (agh's `omitempty`), never null. Values of
 * an agh vocabulary are agh's words (loop-vocabulary.ts); the-loop's own, where agh's is only the
 * nearest, is in `details.the_loop`.
 */
const LOOP_CONTEXT = {
  event: { kind: "string", description: "The event's name (`loop.started`, …)." },
  timestamp: {
    kind: "string",
    description: "When it happened: RFC 3339 in UTC with milliseconds (`2026-07-27T12:00:00.000Z`); never earlier than the run's previous event.",
  },
  loop_run_id: {
    kind: "string",
    description:
      "The loop run: one work item's run of its process graph, from its start to its end; a run ended is never resumed, a later move begins a new one.",
  },
  parent_loop_run_id: optionalString("The run that started this one; omitted, since the-loop does not nest runs yet."),
  workspace_id: { kind: "string", description: "Where the work item lives: `owner/repo` on GitHub, the project name on the local tracker." },
  loop_name: { kind: "string", description: "The process graph's name." },
  generation: { kind: "integer", description: "The pass through the graph, from 1; a changes-requested answer at a gate starts the next." },
  task_id: optionalString("The node and the attempt at it, `NODE#N` (`implement#2`); omitted at an event about the run or a whole generation."),
  run_id: optionalString("The attempt's own id, unique across runs (`LOOP_RUN_ID/NODE#N`); omitted where task_id is."),
  run_kind: optionalString(
    "agh's run kind of the attempt: `worker` (an agent's node) or `coordinator` (a human gate, a terminal node; `details.the_loop.node_kind` says which); omitted where task_id is.",
  ),
  node_id: { kind: "string", description: "The graph node the event is about (see each event)." },
  resolved_network_participation: {
    kind: "json-object",
    description:
      'The run\'s participation snapshot, frozen at its start: `{version: "network-participation/v1", mode: "local", source: "built_in_local"}` until the-loop has live channels.',
  },
  agent_name: optionalString("The harness of the item's session (`claude`, …); omitted when the item has no session."),
  session_id: optionalString("The item's session id; omitted when it has none."),
  actor_kind: {
    kind: "string",
    description:
      "Who caused the event, in agh's words: `agent_session`, `human` (a tracker login, or an operator at the CLI: `details.the_loop.actor_kind` `operator`) or `daemon`.",
  },
  actor_id: { kind: "string", description: "That actor: a tracker login, an OS user, a session id; `the-loop` for the daemon." },
  origin_kind: {
    kind: "string",
    description:
      "What started the run, in agh's words: `web` (a tracker comment), `cli`, `automation` (the spawn policy alone) or `daemon` (a retry); the-loop's word in `details.the_loop.origin_kind`.",
  },
  origin_ref: optionalString("Where that start can be read (the delivery id); omitted when nothing records it."),
} as const satisfies Readonly<Record<string, FieldSpec>>;

const details = {
  kind: "json-object",
  optional: true,
  description:
    "More about the event, read-only JSON: the-loop's own facts under `the_loop` (see each event; `the_loop.usage`, the session's usage against routing.budget, wherever session_id is), and `deny_reason` at a denied run's end; omitted when there is nothing.",
} as const;
const reasonCode = optionalString("A machine-readable reason for the status (`hook_denied`, `max_attempts`, …); omitted when the status needs none.");
const offeredDenied = { kind: "boolean", optional: true, description: "Omitted as sent (agh's false); a hook answers true to deny." } as const;
const offeredDenyReason = optionalString("Omitted as sent; a denying hook answers why.");
const outcomeDenied = { kind: "boolean", optional: true, description: "true when loop.gate.pre was denied; omitted otherwise." } as const;
const outcomeDenyReason = optionalString("The denial's reason, when loop.gate.pre was denied with one; omitted otherwise.");
const gateId = optionalString("The human gate's node; omitted at the step into a terminal node.");
const decision = optionalString("The gate's answer, agh's words: `approve` or `request_changes`; omitted at the step into a terminal node.");

const denyReason = {
  kind: "string",
  nullable: true,
  description: "Why the hook denies (default none).",
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
      cause: optionalString("What began it: `start` (a start command, a `graph force`, an approval after a run ended, or the spawn policy alone)."),
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
      status: { kind: "string", description: "agh's status of the run: `running`." },
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
    fires:
      "After the gate that requested changes was passed (before the next generation's loop.generation.pre), or before loop.terminal when the run ended; a denied loop.generation.pre also ends its generation.",
    facts: {
      ...LOOP_CONTEXT,
      status: {
        kind: "string",
        description:
          "agh's status of the run as the generation ended: `running` (changes requested; reason_code `changes_requested`), or how the run ended (`done`, `failed`, `blocked`, …).",
      },
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
      gate_id: gateId,
      decision,
      status: {
        kind: "string",
        description:
          "What the run becomes if the gate passes, agh's words: `running` (on to the next node, or the next generation), `needs-approval` (on to a human gate) or the terminal status (`done`, …).",
      },
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
      gate_id: gateId,
      decision,
      status: {
        kind: "string",
        description: "agh's status of the run now: `running`, `needs-approval`, the terminal status, or `blocked` after a denial (the run ended).",
      },
      reason_code: reasonCode,
      details,
      denied: outcomeDenied,
      deny_reason: outcomeDenyReason,
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
        description:
          "agh's task status of the attempt: `completed` or `failed` (a claim's checks; at a gate, approved or changes requested), or `canceled` (`the-loop graph force`; `details.the_loop.task_status` `forced`).",
      },
      run_status: {
        kind: "string",
        description:
          "agh's task-run status of the attempt, as task_status (`completed`, `failed`, `canceled`); the loop run's own status is `details.the_loop.run_status`.",
      },
      error: optionalString("Why the attempt failed (the first failing check's message, or `changes requested`); omitted when it passed or was forced."),
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
      status: {
        kind: "string",
        description:
          "How the run ended, agh's words: `done`, `failed`, `blocked`, `exhausted` or `stalled` (`canceled` is sent as `failed`, `details.the_loop.status` `canceled`).",
      },
      cause: optionalString(
        "What ended it, agh's words: `contract` (a terminal node, a hook's denial, the graph's own rules), `iteration_cap`, `no_progress`, `operator_stop` (the item closed, the run stopped); the-loop's word in `details.the_loop.cause`.",
      ),
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

type FactsOf<N extends LoopPointName> = LoopPointNamed<N>["facts"];
type OptionalFacts<N extends LoopPointName> = { [F in keyof FactsOf<N>]: FactsOf<N>[F] extends { readonly optional: true } ? F : never }[keyof FactsOf<N>];

/** What a hook receives at a loop event: the keys that always have a value, and the optional ones omitted where they have none. */
export type LoopPayloadOf<N extends LoopPointName> = {
  readonly [F in Exclude<keyof FactsOf<N>, OptionalFacts<N>>]: ValueOfSpec<FactsOf<N>[F]>;
} & {
  readonly [F in OptionalFacts<N>]?: ValueOfSpec<FactsOf<N>[F]>;
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
