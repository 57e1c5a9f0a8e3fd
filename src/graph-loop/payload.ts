import type { JsonObject, JsonValue } from "../sdk/hooks/catalog.js";
import { LOCAL_NETWORK_PARTICIPATION, LOOP_CONTEXT_FIELDS } from "../sdk/hooks/loop-catalog.js";
import type { LoopPayloadOf, LoopPointName } from "../sdk/hooks/loop-catalog.js";
import { aghActorKind, aghAttemptStatus, aghCause, aghDecision, aghLoopStatus, aghOriginKind, aghRunKind } from "../sdk/hooks/loop-vocabulary.js";
import type { Mapped } from "../sdk/hooks/loop-vocabulary.js";
import { parseWorkItemRef } from "../workitem/index.js";
import type { UsageSummary } from "../budget/summary.js";
import type { GraphState } from "../graph-run/state.js";
import type { Graph, GraphActor } from "../graph/types.js";

/**
 * The payload of a `loop.*` hook event, from a graph run's state, in agh's shape: the standard
 * base, the loop context and the event's own fields, flat; a key with no value omitted (agh's
 * `omitempty`), never null; every value of an agh vocabulary in agh's words, the-loop's own fact
 * (where agh's word is only the nearest, and whatever agh has no field for) under
 * `details.the_loop`. Pure: the time comes in, and what the run must remember for its next
 * event (the last timestamp, the attempts ended per node) goes out in the state the caller writes.
 */

/** The loop context: the keys every loop payload carries before its event's own. */
export type LoopContext = Pick<LoopPayloadOf<"loop.started">, (typeof CONTEXT_KEYS)[number]>;

/** Every loop payload's own fields: what its event adds to the context. */
export type LoopOwnFields<N extends LoopPointName> = Omit<LoopPayloadOf<N>, keyof LoopContext>;

/**
 * An event's own fields as the runtime states them, in the-loop's words (`waiting`, `approved`,
 * `passed`, `node`): null or undefined where there is no value. `details` is the-loop's own
 * (it goes under `details.the_loop`); `run_status` at loop.node.terminal is the loop run's status.
 */
export type LoopOwnInput<N extends LoopPointName> = {
  readonly [K in keyof LoopOwnFields<N>]?: JsonValue | undefined;
};

/** The key under `details` where the-loop's own facts travel. */
export const THE_LOOP_DETAILS = "the_loop";

const CONTEXT_KEYS = [
  "event",
  "timestamp",
  "loop_run_id",
  "parent_loop_run_id",
  "workspace_id",
  "loop_name",
  "generation",
  "task_id",
  "run_id",
  "run_kind",
  "node_id",
  "resolved_network_participation",
  "agent_name",
  "session_id",
  "actor_kind",
  "actor_id",
  "origin_kind",
  "origin_ref",
] as const;

// The catalog is the one list; a key added there and not here would go missing from every payload.
if (CONTEXT_KEYS.join() !== LOOP_CONTEXT_FIELDS.join()) throw new Error("graph-loop/payload.ts: CONTEXT_KEYS differ from the catalog's loop context");

/** The item's session, as the loop events name it; undefined when it has none. */
export interface LoopSession {
  readonly agentName: string;
  readonly sessionId: string;
  /** Its usage so far against routing.budget (docs/fleet.md#budgets): `details.the_loop.usage`. */
  readonly usage?: UsageSummary;
}

/**
 * A session's usage as a loop payload carries it, in `details.the_loop.usage`: the figures of
 * `why` and `graph status --json`, the keys in the payload's snake case. `tokens` is null, with
 * `unreadable` saying why, where the harness's tokens cannot be read — never 0.
 */
export function loopUsage(usage: UsageSummary): JsonObject {
  const { readAt, limits, raised, ...figures } = usage;
  const kept: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(figures)) if (value !== undefined) kept[key] = value;
  return {
    ...kept,
    limits: { ...limits },
    ...(raised !== undefined ? { raised: { ...raised } } : {}),
    ...(readAt !== undefined ? { read_at: readAt } : {}),
  };
}

/** What a loop event is about, beyond its run. */
export interface LoopSubject {
  readonly node: string;
  readonly actor: GraphActor;
  /** The generation it is about (default: the state's). */
  readonly generation?: number;
  /** An event about one attempt at a node (node.terminal, gate.*): the node it is at, and the attempt's number. */
  readonly task?: { readonly node: string; readonly attempt: number };
}

/**
 * The timestamp of a run's next loop event: now, but never earlier than 1 ms after the run's
 * previous one — a clock stepped back, or two events in one millisecond, still sort in the order
 * they happened.
 */
export function nextLoopTimestamp(last: string | undefined, now: Date): string {
  const previous = last === undefined ? Number.NaN : Date.parse(last);
  const at = Number.isNaN(previous) ? now.getTime() : Math.max(now.getTime(), previous + 1);
  return new Date(at).toISOString();
}

/** `owner/repo` for a GitHub item, the project for a local one. */
export function workspaceOf(ref: string): string {
  const parsed = parseWorkItemRef(ref);
  return parsed.tracker === "github" ? `${parsed.owner}/${parsed.repo}` : parsed.project;
}

/** The attempt the next loop event at `node` is about: one more than those ended there so far. */
export function nextTask(state: GraphState, node: string): { readonly node: string; readonly attempt: number } {
  return { node, attempt: (state.tasks?.[node] ?? 0) + 1 };
}

/** The state with one more attempt ended at `node` and its progress time advanced (loop.node.terminal). */
export function withTaskEnded(state: GraphState, node: string, at: string): GraphState {
  return { ...state, tasks: { ...state.tasks, [node]: (state.tasks?.[node] ?? 0) + 1 }, lastProgressAt: at };
}

function nodeKindOf(graph: Graph, node: string): string {
  const found = graph.nodes.get(node);
  if (found === undefined) return "agent";
  return found.terminal ? "terminal" : found.actor;
}

/** Where a loop event happens: its run and what it is about. */
export interface LoopEventInput {
  /** From the run's LoopClock. */
  readonly timestamp: string;
  readonly graph: Graph;
  readonly state: GraphState;
  readonly session: LoopSession | undefined;
  readonly subject: LoopSubject;
}

/** The loop context of an event, in agh's words; `ours` collects the-loop's own words for details.the_loop. */
export function loopContext(name: LoopPointName, input: LoopEventInput, ours: Record<string, JsonValue> = {}): LoopContext {
  const { graph, state, subject } = input;
  const task = subject.task;
  const taskId = task === undefined ? undefined : `${task.node}#${task.attempt}`;
  const nodeKind = task === undefined ? undefined : nodeKindOf(graph, task.node);
  if (nodeKind !== undefined) ours["node_kind"] = nodeKind;
  if (input.session?.usage !== undefined) ours["usage"] = loopUsage(input.session.usage);
  const context: Record<string, unknown> = {
    event: name,
    timestamp: input.timestamp,
    loop_run_id: state.loopRunId,
    // Runs do not nest yet: no run starts another, so parent_loop_run_id is never sent.
    workspace_id: workspaceOf(state.ref),
    loop_name: graph.name,
    generation: subject.generation ?? state.generation,
    task_id: taskId,
    run_id: taskId === undefined ? undefined : `${state.loopRunId}/${taskId}`,
    run_kind: nodeKind === undefined ? undefined : aghRunKind(nodeKind).value,
    node_id: subject.node,
    resolved_network_participation: { ...(state.networkParticipation ?? LOCAL_NETWORK_PARTICIPATION) },
    agent_name: input.session?.agentName,
    session_id: input.session?.sessionId,
    actor_kind: mapped(aghActorKind(subject.actor.kind), "actor_kind", ours),
    actor_id: subject.actor.id,
    origin_kind: mapped(aghOriginKind(state.origin?.kind ?? "event"), "origin_kind", ours),
    origin_ref: state.origin?.ref,
  };
  return withoutEmpty(context) as unknown as LoopContext;
}

/** agh's value; the-loop's own word kept in `ours` when agh's is only the nearest. */
function mapped<V extends string>(value: Mapped<V>, key: string, ours: Record<string, JsonValue>): V {
  if (value.ours !== undefined) ours[key] = value.ours;
  return value.value;
}

/**
 * A whole payload: the context, then the event's own fields, in agh's words. `aghDetails` are
 * keys of `details` itself (`deny_reason` at a denied run's end); everything else the-loop adds is
 * under `details.the_loop`.
 */
export function loopPayload<N extends LoopPointName>(name: N, input: LoopEventInput, own: LoopOwnInput<N>, aghDetails: JsonObject = {}): LoopPayloadOf<N> {
  const ours: Record<string, JsonValue> = {};
  const context = loopContext(name, input, ours);
  const fields: Record<string, unknown> = { ...(own as Record<string, unknown>) };
  const given = fields["details"];
  delete fields["details"];
  if (typeof fields["status"] === "string") fields["status"] = mapped(aghLoopStatus(fields["status"]), "status", ours);
  if (typeof fields["cause"] === "string") fields["cause"] = mapped(aghCause(fields["cause"]), "cause", ours);
  if (typeof fields["decision"] === "string") fields["decision"] = mapped(aghDecision(fields["decision"]), "decision", ours);
  if (typeof fields["task_status"] === "string") {
    const attempt = aghAttemptStatus(fields["task_status"]);
    fields["task_status"] = mapped(attempt, "task_status", ours);
    // agh's run_status is the node's task run; the loop run's own status is the-loop's fact.
    if (typeof fields["run_status"] === "string") ours["run_status"] = fields["run_status"];
    fields["run_status"] = attempt.value;
  }
  const theLoop = { ...ours, ...(isObject(given) ? given : {}) };
  const details: Record<string, unknown> = { ...aghDetails, ...(Object.keys(theLoop).length > 0 ? { [THE_LOOP_DETAILS]: theLoop } : {}) };
  return { ...context, ...withoutEmpty(fields), ...(Object.keys(details).length > 0 ? { details } : {}) } as unknown as LoopPayloadOf<N>;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The keys agh's encoder would send: none null, undefined, an empty string, or `denied: false`. */
function withoutEmpty(fields: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === null || value === undefined || value === "" || value === false) continue;
    kept[key] = value;
  }
  return kept;
}

/**
 * Stamps a run's loop events in order: each `stamp()` is the next timestamp, and `last` is what
 * the state keeps (GraphState.lastLoopAt) for the run's next event.
 */
export class LoopClock {
  constructor(
    private latest: string | undefined,
    private readonly now: () => Date,
  ) {}

  static of(state: GraphState | undefined, now: () => Date): LoopClock {
    return new LoopClock(state?.lastLoopAt, now);
  }

  stamp(): string {
    this.latest = nextLoopTimestamp(this.latest, this.now());
    return this.latest;
  }

  get last(): string | undefined {
    return this.latest;
  }

  /** The state remembering the last stamp. */
  kept(state: GraphState): GraphState {
    return this.latest === undefined ? state : { ...state, lastLoopAt: this.latest };
  }
}
