/**
 * The lifecycle hook points: the one list a declaration may name, the SDK base class is built
 * from and the docs table is checked against. Pure data with no imports, so the SDK stays free of
 * the daemon.
 *
 * A point belongs to a family (`lifecycle` here; `loop` in loop-catalog.ts). The chain, the
 * executors and the declaration loader read a point only through `HookPoint`, never through its
 * family, so another family can be added to the engine by adding its points.
 */

/**
 * What a context field may hold: every value is JSON, never coerced. `json-object` is any JSON
 * object, read-only wherever it is a fact; `string-map` an object whose values are strings.
 */
export type FieldKind = "string" | "boolean" | "integer" | "string[]" | "work-item" | "json-object" | "string-map";

export interface FieldSpec {
  readonly kind: FieldKind;
  readonly description: string;
  /** The key is always present and holds null where the field does not apply. Absent: never null. */
  readonly nullable?: boolean;
  /**
   * The key is omitted where the field has no value, as agh's encoder omits it (`omitempty`);
   * never null. Absent: always present. The loop family's fields use this, never `nullable`.
   */
  readonly optional?: boolean;
}

/** A JSON value, as a `json-object` field holds them. */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | JsonObject;
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

export interface DecisionSpec extends FieldSpec {
  /** What the-loop does with the decision at this point. */
  readonly applies: string;
}

export interface HookPoint {
  /** The point's name: what a declaration's `on` names and a remote executor's JSON-RPC method. */
  readonly name: string;
  readonly family: string;
  /** The executor method that handles it (a `LifecycleHooks` method for the lifecycle family). */
  readonly method: string;
  readonly description: string;
  /** When it fires, in the path of what it decides. */
  readonly fires: string;
  /** Read-only: what the point tells a hook. A hook's change to a fact is ignored (and logged). */
  readonly facts: Readonly<Record<string, FieldSpec>>;
  /** What the-loop reads back after the chain. */
  readonly decisions: Readonly<Record<string, DecisionSpec>>;
  /**
   * True: the point runs only at an entry whose `on` names it; an entry without `on` is not
   * called there (the loop family). Absent: an entry without `on` runs at it too.
   */
  readonly optIn?: boolean;
}

/** The facts of the work item a point is about, as one modelled entity. */
export interface WorkItemEntity {
  /** The canonical ref, e.g. `github:octo/repo#15` or `local:demo#1`. */
  readonly ref: string;
  /** `github` or `local`. */
  readonly tracker: string;
  readonly host: string;
  /** `owner/repo` on GitHub; the project name on the local tracker. */
  readonly repository: string;
  readonly number: number;
  /** `issue` or `pull_request`. */
  readonly kind: string;
  readonly url: string;
  /** The tracker's own stable id (GitHub's node id). */
  readonly id: string;
}

const workItem = { kind: "work-item", description: "The work item: ref, tracker, host, repository, number, kind, url, id." } as const;
const deliveryId = { kind: "string", description: "The delivery that led here (webhook delivery id, poller key, or `cli-…`)." } as const;
const harness = { kind: "string", description: "The harness name (routing.defaultHarness or the session's)." } as const;
const tmuxTarget = { kind: "string", description: "The session's tmux session name." } as const;
const cwd = { kind: "string", description: "The session's working directory (its checkout when it has one)." } as const;
const harnessSessionId = { kind: "string", description: "The harness's own conversation id." } as const;

const proceed = {
  kind: "boolean",
  description: "Whether the-loop goes ahead (default true).",
  applies: "false refuses: the item is disarmed, one marked comment names the hook and its reason, the event is settled, `hooks.refused` is recorded.",
} as const;
const reason = {
  kind: "string",
  description: "Why a hook refused (default empty).",
  applies: "Quoted in the refusal comment and in `hooks.refused`.",
} as const;

export const LIFECYCLE_POINTS = [
  {
    name: "work_item_start",
    family: "lifecycle",
    method: "workItemStart",
    description: "A work item is about to start: the first session of its delivery.",
    fires:
      "When a start is honoured (a start command, or the spawn policy alone when no start command is required), before any workspace is prepared or any session exists.",
    facts: {
      workItem,
      actor: { kind: "string", description: "Who started it: the commenter, the CLI user, or whoever gave a start that is retried." },
      trigger: { kind: "string", description: "`comment`, `cli`, `event` (the spawn policy alone) or `retry` (a pending start tried again)." },
      harness,
      deliveryId,
    },
    decisions: {
      proceed: { ...proceed, applies: `${proceed.applies} A new start command arms it again.` },
      reason,
    },
  },
  {
    name: "session_spawn",
    family: "lifecycle",
    method: "sessionSpawn",
    description: "A new session's harness is about to be launched.",
    fires: "After the session is claimed and its checkout prepared, before the harness process is launched.",
    facts: {
      workItem,
      actor: { kind: "string", description: "Whose event or command led to the launch." },
      harness,
      tmuxTarget,
      cwd,
      harnessSessionId,
      pullRequest: { kind: "string", description: "The pull request the triggering event is about (its ref), or empty." },
      deliveryId,
    },
    decisions: {
      proceed: {
        ...proceed,
        applies: `${proceed.applies} For a pull request's own session the event is delivered into the linked work item's session instead, when one is live.`,
      },
      reason,
      prompt: {
        kind: "string",
        description: "The text handed to the harness on launch (default: the rendered boot prompt).",
        applies: "Replaces the launch text.",
      },
    },
  },
  {
    name: "session_spawned",
    family: "lifecycle",
    method: "sessionSpawned",
    description: "A session was launched and registered.",
    fires: "After the session's record is written with its harness started, before the-loop announces it.",
    facts: { workItem, harness, tmuxTarget, cwd, harnessSessionId, deliveryId },
    decisions: {
      announce: {
        kind: "boolean",
        description: "Whether the-loop posts its session announcement (default: routing.announce.enabled).",
        applies: "false suppresses the announcement comment.",
      },
    },
  },
  {
    name: "waiting_for_input",
    family: "lifecycle",
    method: "waitingForInput",
    description: "The loop is waiting on a person: an agent asked a question, or a human gate was entered.",
    fires: "Before an agent's question (`the-loop ask`) is posted; when a human gate is entered.",
    facts: {
      workItem,
      asker: { kind: "string", description: "`agent` (the-loop ask) or `gate` (a human gate of the process graph)." },
      node: { kind: "string", description: "The graph node of a human gate; empty for an agent's question." },
    },
    decisions: {
      question: {
        kind: "string",
        description: "The question text to post (empty at a human gate).",
        applies: "Replaces the text posted for an agent's question; ignored at a human gate (the request text is the graph's).",
      },
      summary: {
        kind: "string",
        description: "A one-line summary shown above the question (default empty: none).",
        applies: "Shown in bold above the question in the comment; ignored at a human gate.",
      },
    },
  },
  {
    name: "input_received",
    family: "lifecycle",
    method: "inputReceived",
    description: "A person's input reached the loop: an answer, a comment or review to deliver, a control command.",
    fires: "Before the input is delivered into the session, read by a gate, or run as a command.",
    facts: {
      workItem,
      actor: { kind: "string", description: "Who gave it (a tracker login, or the CLI user)." },
      inputKind: { kind: "string", description: "`comment`, `review`, `review_comment`, `answer` (to an agent's question) or `command`." },
      text: { kind: "string", description: "The input's text as the-loop received it (bounded); for a command, its keyword." },
      command: { kind: "string", description: "The control command (`start`, `stop`, `pause`, `resume`), or empty." },
      inputSource: { kind: "string", description: "How it arrived: `gh-webhook`, `poll` or `cli`." },
      url: { kind: "string", description: "Where the input can be read (the comment's URL), or empty." },
      deliveryId,
    },
    decisions: {},
  },
  {
    name: "phase_changed",
    family: "lifecycle",
    method: "phaseChanged",
    description: "The process graph's phase changed, or a terminal node was reached.",
    fires: "When the graph's phase label changes or a terminal node is reached, before the channels are told.",
    facts: {
      workItem,
      graph: { kind: "string", description: "The graph's name." },
      node: { kind: "string", description: "The node entered." },
      fromPhase: { kind: "string", description: "The phase before (empty at the start)." },
      toPhase: { kind: "string", description: "The phase now." },
      terminal: { kind: "boolean", description: "Whether the node entered is terminal." },
    },
    decisions: {
      notify: {
        kind: "boolean",
        description: "Whether the phase change is published to the channels (default true).",
        applies: "false suppresses the `phase.*` publish for this transition.",
      },
    },
  },
  {
    name: "work_item_complete",
    family: "lifecycle",
    method: "workItemComplete",
    description: "The work item closed: the ticket or pull request the session was for.",
    fires: "When the closure reaches the loop and closes the item's session, before the closure is announced.",
    facts: {
      workItem,
      actor: { kind: "string", description: "Who closed it, or empty when the tracker does not say." },
      harness,
      tmuxTarget,
    },
    decisions: {
      announce: {
        kind: "boolean",
        description: "Whether the-loop announces the closure on its channels (default true).",
        applies: "false suppresses the closure message on the channels.",
      },
    },
  },
] as const satisfies readonly HookPoint[];

export type LifecyclePoint = (typeof LIFECYCLE_POINTS)[number];
export type LifecyclePointName = LifecyclePoint["name"];

type ValueOf<K extends FieldKind> = K extends "string"
  ? string
  : K extends "boolean"
    ? boolean
    : K extends "integer"
      ? number
      : K extends "string[]"
        ? readonly string[]
        : K extends "json-object"
          ? JsonObject
          : K extends "string-map"
            ? Readonly<Record<string, string>>
            : WorkItemEntity;

/** The TypeScript type of a field spec's value: `| null` when the spec is nullable. */
export type ValueOfSpec<S> = S extends { readonly kind: infer K extends FieldKind }
  ? S extends { readonly nullable: true }
    ? ValueOf<K> | null
    : ValueOf<K>
  : never;

type PointNamed<N extends LifecyclePointName> = Extract<LifecyclePoint, { readonly name: N }>;

/** The context a point's executors receive: read-only facts, writable decisions. */
export type ContextOf<N extends LifecyclePointName> = {
  readonly [F in keyof PointNamed<N>["facts"]]: ValueOfSpec<PointNamed<N>["facts"][F]>;
} & {
  -readonly [D in keyof PointNamed<N>["decisions"]]: ValueOfSpec<PointNamed<N>["decisions"][D]>;
};

/** The decision fields of a point's context. */
export type DecisionsOf<N extends LifecyclePointName> = {
  -readonly [D in keyof PointNamed<N>["decisions"]]: ValueOfSpec<PointNamed<N>["decisions"][D]>;
};

export type WorkItemStartContext = ContextOf<"work_item_start">;
export type SessionSpawnContext = ContextOf<"session_spawn">;
export type SessionSpawnedContext = ContextOf<"session_spawned">;
export type WaitingForInputContext = ContextOf<"waiting_for_input">;
export type InputReceivedContext = ContextOf<"input_received">;
export type PhaseChangedContext = ContextOf<"phase_changed">;
export type WorkItemCompleteContext = ContextOf<"work_item_complete">;

/** The lifecycle point of a name; undefined for any other name. */
export function lifecyclePoint(name: string): LifecyclePoint | undefined {
  return LIFECYCLE_POINTS.find((point) => point.name === name);
}

/** The names a declaration may use under `on`. */
export const LIFECYCLE_POINT_NAMES: readonly LifecyclePointName[] = LIFECYCLE_POINTS.map((point) => point.name);
