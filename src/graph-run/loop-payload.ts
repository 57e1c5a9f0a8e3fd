import { LOCAL_NETWORK_PARTICIPATION, LOOP_CONTEXT_FIELDS } from "../sdk/hooks/loop-catalog.js";
import type { LoopPayloadOf, LoopPointName } from "../sdk/hooks/loop-catalog.js";
import { parseWorkItemRef } from "../workitem/index.js";
import type { GraphState } from "./state.js";
import type { Graph, GraphActor } from "../graph/types.js";

/**
 * The payload of a `loop.*` hook event, from a graph run's state: the standard base, the loop
 * context and the event's own fields, every key present (null where it does not apply). Pure: the
 * time comes in, and what the run must remember for its next event (the last timestamp, the
 * attempts ended per node) goes out in the state the caller writes.
 */

/** The loop context: the keys every loop payload carries before its event's own. */
export type LoopContext = Pick<LoopPayloadOf<"loop.started">, (typeof CONTEXT_KEYS)[number]>;

/** Every loop payload's own fields: what its event adds to the context. */
export type LoopOwnFields<N extends LoopPointName> = Omit<LoopPayloadOf<N>, keyof LoopContext>;

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
if (CONTEXT_KEYS.join() !== LOOP_CONTEXT_FIELDS.join()) throw new Error("loop-payload.ts: CONTEXT_KEYS differ from the catalog's loop context");

/** The item's session, as the loop events name it; undefined when it has none. */
export interface LoopSession {
  readonly agentName: string;
  readonly sessionId: string;
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

function runKindOf(graph: Graph, node: string): string {
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

/** The loop context of an event. */
export function loopContext(name: LoopPointName, input: LoopEventInput): LoopContext {
  const { graph, state, subject } = input;
  const task = subject.task;
  const taskId = task === undefined ? null : `${task.node}#${task.attempt}`;
  return {
    event: name,
    timestamp: input.timestamp,
    loop_run_id: state.loopRunId,
    // Runs do not nest yet: no run starts another.
    parent_loop_run_id: null,
    workspace_id: workspaceOf(state.ref),
    loop_name: graph.name,
    generation: subject.generation ?? state.generation,
    task_id: taskId,
    run_id: taskId === null ? null : `${state.loopRunId}/${taskId}`,
    run_kind: task === undefined ? null : runKindOf(graph, task.node),
    node_id: subject.node,
    resolved_network_participation: { ...(state.networkParticipation ?? LOCAL_NETWORK_PARTICIPATION) },
    agent_name: input.session?.agentName ?? null,
    session_id: input.session?.sessionId ?? null,
    actor_kind: subject.actor.kind,
    actor_id: subject.actor.id,
    origin_kind: state.origin?.kind ?? "event",
    origin_ref: state.origin?.ref ?? null,
  };
}

/** A whole payload: the context, then the event's own fields. */
export function loopPayload<N extends LoopPointName>(name: N, input: LoopEventInput, own: LoopOwnFields<N>): LoopPayloadOf<N> {
  return { ...loopContext(name, input), ...own } as unknown as LoopPayloadOf<N>;
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
