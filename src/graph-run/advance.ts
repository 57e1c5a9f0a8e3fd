import { phaseLabel } from "./effects.js";
import type { GraphEffect, Refusal, Transition } from "./effects.js";
import { endRun, exhaustRun, finalRefusal, outOfGenerations } from "./outcomes.js";
import type { GraphState } from "./state.js";
import { actorFields, applied, event, itemFields, refuse, withHistory } from "./steps.js";
import { UNLIMITED, heldRefusal, holdAtEdge } from "./node-caps.js";
import type { NodeRoom } from "./node-caps.js";
import type { Moment } from "./steps.js";
import type { CheckResult, Graph, GraphActor, GraphCheck, GraphEdge, GraphNode, GraphOutcome } from "../graph/types.js";
import { isFinalGraphStatus } from "../graph/types.js";

/**
 * The process graph's advance: graph + state + one input (a start, a claim and its check results,
 * a gate answer, an operator's force) → the next state and the effects to apply. Pure: no file,
 * no clock (the time comes in the input), no tracker. The runtime commits the state first and
 * applies the effects after, in order, so a crash between the two repeats effects and never loses
 * a move.
 *
 * Entering a node (`enter`) is the one step every move shares. Its effects, in order:
 *
 * 1. `phase-label`, only when the node has a phase other than the item's: remove the item's one
 *    old `loop:<phase>` label (none at the start) and add the new one. No other label is touched,
 *    the arming label included; a node without a phase keeps the label the item has.
 * 2. `hook phase_changed`, when the phase changed or the node is terminal, before anything is
 *    announced; then `announce-phase`, which the runtime skips when the hook answered
 *    `notify: false` (never the label).
 * 3. An agent node: `deliver-assignment` (status `running`). A human node: `hook
 *    waiting_for_input` (asker `gate`, fired when the gate is entered and before its request is
 *    posted, as for an agent's question), `request-review` (one marked comment), status
 *    `waiting`. A terminal node: status `done`, `graph.completed`, `run-ended`.
 *
 * `done` and the ends short of a terminal node (`failed`, `exhausted`, `stalled`, `canceled`:
 * outcomes.ts) are final: every input on them is refused with a reason, except a force given the
 * id of a new run (`start`), which begins that run at its target. `blocked` stops automatic
 * progress at the node; an authorized gate answer or `graph force` resumes it — on the same run
 * for a block the loop hooks were not told ended it, on a new run (`renewRun`) for one that ended
 * it (`endedByBlock`): the ended run's id is never moved again.
 *
 * An edge a claim or a gate answer would follow into a node full under routing.limits.perNode
 * (`room`, counted by the runtime) is not taken: the run stays at the node it would leave,
 * `waiting` with reason `node-full` and the edge it waits at (`heldEdge`), until the daemon's
 * release (releaseHeld) takes it. A force is the operator's and never waits.
 */

export { GRAPH_HISTORY_LIMIT, GRAPH_REFUSAL_CODES, PHASE_LABEL_PREFIX, phaseLabel } from "./effects.js";
export type { GraphEffect, GraphEventEffect, GraphEventName, GraphRefusalCode, Refusal, Transition } from "./effects.js";
export { END_REASON_CODES, endRun } from "./outcomes.js";
export type { EndInput } from "./outcomes.js";
export { recordRefusal } from "./refusal-record.js";
export type { RefusalKind, RefusalRecordInput } from "./refusal-record.js";

// ---------------------------------------------------------------------------------------------
// Starting

/**
 * The blocks that end the loop run (loop.terminal, with status `blocked`): agh counts `blocked`
 * among its terminal outcomes, "progress impossible" without a person. A claim out of attempts, an
 * outcome the graph has no edge for, a loop.gate.pre hook's denial, and a capability's halt — a
 * blocking gate's block, a halting step, a task whose content could not be resolved, a bundle
 * changed since consent, a harness the capability does not run in: gsd-core's "stop the current
 * step", which in agh's terms is a run that cannot go on without a person (docs/hooks.md, "When a
 * run ends"). An answer or a force after any of them begins a new run.
 */
export const RUN_ENDING_BLOCKS: ReadonlySet<string> = new Set([
  "max-attempts",
  "no-edge",
  "hook_denied",
  "capability-gate",
  "capability-step",
  "task-resolver",
  "capability-changed",
  "capability-runtime",
]);

/** Whether the item's loop run has ended: a final status, or a block that ends it. */
export function runHasEnded(state: GraphState): boolean {
  return isFinalGraphStatus(state.status) || (state.status === "blocked" && state.reasonCode !== undefined && RUN_ENDING_BLOCKS.has(state.reasonCode));
}

/** The id of the run an input on an ended run begins (the runtime mints it: the advance has no randomness). */
export interface NextRun {
  readonly loopRunId: string;
}

/**
 * A new run of the item where its ended run stood: the node, its phase and the record's story are
 * kept; the id, the generation (1), the attempts, the outcomes, the loop bookkeeping and the reason
 * are the new run's own. `graph.started` says so; the move that asked for it follows.
 */
export function renewRun(graph: Graph, ended: GraphState, next: NextRun, moment: Moment): { readonly state: GraphState; readonly effects: GraphEffect[] } {
  const at = moment.at.toISOString();
  const base = initialState(graph, ended.ref, next.loopRunId, ended.node, at, ended.phase);
  const state = withHistory(
    { ...base, history: ended.history, ...(ended.lastLoopAt !== undefined ? { lastLoopAt: ended.lastLoopAt } : {}) },
    { at, kind: "started", node: ended.node, actor: moment.actor },
  );
  const effects: GraphEffect[] = [
    event("graph.started", {
      work_item: ended.ref,
      graph: graph.name,
      node: ended.node,
      generation: 1,
      loop_run_id: next.loopRunId,
      ...actorFields(moment.actor),
    }),
  ];
  return { state, effects };
}

export interface StartInput extends Moment {
  /** The work item's canonical ref. */
  readonly ref: string;
  readonly loopRunId: string;
  /** The item's record from an earlier run, if it has one: its phase label is the one replaced. */
  readonly previous?: GraphState;
}

/** Starts a run at the graph's start node. */
export function startRun(graph: Graph, input: StartInput): Transition {
  const at = input.at.toISOString();
  const base = initialState(graph, input.ref, input.loopRunId, graph.start, at, input.previous?.phase);
  const effects: GraphEffect[] = [
    event("graph.started", {
      work_item: input.ref,
      graph: graph.name,
      node: graph.start,
      generation: 1,
      loop_run_id: input.loopRunId,
      ...actorFields(input.actor),
    }),
  ];
  const started = withHistory(base, { at, kind: "started", node: graph.start, actor: input.actor });
  return enter(graph, started, requireNode(graph, graph.start), input, effects, null);
}

function initialState(graph: Graph, ref: string, loopRunId: string, node: string, at: string, phase: string | undefined): GraphState {
  return {
    version: 1,
    ref,
    graph: graph.name,
    loopRunId,
    node,
    ...(phase !== undefined ? { phase } : {}),
    status: "running",
    generation: 1,
    attempts: {},
    outcomes: {},
    startedAt: at,
    updatedAt: at,
    history: [],
  };
}

// ---------------------------------------------------------------------------------------------
// Claims

export interface ClaimInput {
  /** The node the agent claims; the current one when not given. */
  readonly node?: string | undefined;
  readonly actor: GraphActor;
}

/** What to run before a claim is decided: the node's checks (the runtime runs them, then calls applyClaimResult). */
export interface ClaimChecks {
  readonly kind: "check";
  readonly node: string;
  /** The generation the claim was made in: a result for another one is stale. */
  readonly generation: number;
  readonly checks: readonly GraphCheck[];
}

/** Whether a claim is considered at all, and if so which checks decide it. */
export function decideClaim(graph: Graph, state: GraphState | undefined, input: ClaimInput): Refusal | ClaimChecks {
  if (state === undefined) return refuse("not-running", "the item has no graph run: it starts when the item is started with the graph on");
  const final = finalRefusal(state);
  if (final) return final;
  if (input.node !== undefined && input.node !== state.node) {
    return refuse("not-current", `the item is at node "${state.node}", not "${input.node}"; ${whatNow(graph, state)}`);
  }
  const node = graph.nodes.get(state.node);
  if (node === undefined) return unknownCurrentNode(graph, state);
  if (state.status === "blocked") return refuse("blocked", blockedReason(state));
  if (state.heldEdge !== undefined) return heldRefusal(state);
  if (node.terminal || node.actor !== "agent") {
    return refuse("not-agent-node", `node "${node.id}" is ${describeActor(node)}: ${whatNow(graph, state)}`);
  }
  return { kind: "check", node: node.id, generation: state.generation, checks: node.checks };
}

export interface ClaimResultInput extends Moment {
  /** The node and generation decideClaim answered for. */
  readonly node: string;
  readonly generation: number;
  readonly results: readonly CheckResult[];
  /** The room routing.limits.perNode leaves at the nodes (default: no caps). */
  readonly room?: NodeRoom;
}

/**
 * Decides a claim whose checks ran. The state is read again (under the record's lock): a claim
 * whose node was left in the meantime, by another claim or a force, is refused, so two claims
 * at once move the item once. Every check passed: the `pass` edge. One failed: a `fail` edge if
 * the node has one, else the item stays with the first failure's message as its reason; at
 * `maxAttempts` failed claims (either way) it is blocked at the node.
 */
export function applyClaimResult(graph: Graph, state: GraphState, input: ClaimResultInput): Refusal | Transition {
  const decided = decideClaim(graph, state, input);
  if (decided.kind === "refuse") return decided;
  if (decided.generation !== input.generation) {
    return refuse("not-current", `the item left node "${input.node}" and came back since this claim began (generation ${state.generation}); claim again`);
  }
  const node = requireNode(graph, decided.node);
  const at = input.at.toISOString();
  const failed = input.results.find((result) => !result.passed);

  if (failed === undefined) {
    const claimed = withHistory(
      { ...state, outcomes: { ...state.outcomes, [node.id]: "pass" } },
      { at, kind: "claimed", node: node.id, outcome: "pass", actor: input.actor },
    );
    return follow(graph, claimed, node, "pass", "pass", input, [], input.room);
  }

  const attempts = (state.attempts[node.id] ?? 0) + 1;
  const counted = withHistory(
    { ...state, attempts: { ...state.attempts, [node.id]: attempts }, outcomes: { ...state.outcomes, [node.id]: "fail" } },
    { at, kind: "check-failed", node: node.id, outcome: "fail", actor: input.actor, reason: failed.message },
  );
  if (attempts >= node.maxAttempts) {
    const reason = `${failed.message} (the claim at "${node.id}" failed ${attempts} of ${node.maxAttempts} times allowed)`;
    return block(graph, counted, "max-attempts", reason, input);
  }
  if (edgeOf(graph, node.id, "fail") !== undefined) return follow(graph, counted, node, "fail", "fail", input, [], input.room);
  const stayed: GraphState = { ...counted, status: "running", reasonCode: "check-failed", reason: failed.message, updatedAt: at };
  return applied(false, stayed, [
    event("graph.claim_refused", {
      ...itemFields(graph, stayed),
      node: node.id,
      claimed: node.id,
      reason_code: "check-failed",
      reason: failed.message,
      attempts,
      ...actorFields(input.actor),
    }),
  ]);
}

// ---------------------------------------------------------------------------------------------
// Gates

export type GateDecision = Extract<GraphOutcome, "approved" | "changes-requested">;

/**
 * Whether the item takes a gate answer now: waiting at a human gate, or blocked anywhere (a
 * person's answer is what resumes a blocked item). Undefined when it does; a refusal otherwise.
 */
export function gateRefusal(graph: Graph, state: GraphState | undefined): Refusal | undefined {
  if (state === undefined) return refuse("not-running", "the item has no graph run, so there is no gate to answer");
  const final = finalRefusal(state);
  if (final) return final;
  const node = graph.nodes.get(state.node);
  if (node === undefined) return unknownCurrentNode(graph, state);
  if (state.heldEdge !== undefined && state.status === "waiting") return heldRefusal(state);
  if (state.status === "blocked" || (state.status === "waiting" && node.actor === "human" && !node.terminal)) return undefined;
  return refuse("not-waiting", `nothing waits for a gate answer: the item is at node "${node.id}" (${describeActor(node)}, ${state.status})`);
}

export interface GateAnswerInput extends Moment {
  readonly decision: GateDecision;
  /** How the answer came: `keyword` (a comment) or `review` (a pull request review's state). */
  readonly via?: "keyword" | "review" | "cli" | "dashboard";
  /** The run the answer begins when the item's run has ended (a block that ended it): refused without one. */
  readonly next?: NextRun;
  /** The room routing.limits.perNode leaves at the nodes (default: no caps). */
  readonly room?: NodeRoom;
}

/**
 * Applies an authorized person's gate answer (gate.ts decides whether one counts). At a human
 * gate it follows the answer's edge. At a blocked agent node, `approved` accepts the node's work
 * as it is and follows its `pass` edge, and `changes-requested` gives the agent the node again.
 * A changes-requested answer starts the next generation, with no failed claims counted — unless
 * the graph's `maxGenerations` are spent: then the run ends `exhausted` (outcomes.ts). On a run a
 * block ended, the answer begins a new run (`input.next`) at the node and is decided on it, in
 * its first generation: changes requested there give the node again without counting a generation.
 */
export function applyGateAnswer(graph: Graph, ended: GraphState, input: GateAnswerInput): Refusal | Transition {
  const refusal = gateRefusal(graph, ended);
  if (refusal) return refusal;
  const renewing = runHasEnded(ended);
  if (renewing && input.next === undefined) {
    return refuse("blocked", `${blockedReason(ended)}; the answer begins a new run, and none was given for it`);
  }
  const renewal = renewing && input.next !== undefined ? renewRun(graph, ended, input.next, input) : undefined;
  const state = renewal?.state ?? ended;
  const node = requireNode(graph, state.node);
  const decision = input.decision;
  const humanGate = node.actor === "human";
  const edgeOutcome: GraphOutcome | null = humanGate ? decision : decision === "approved" ? "pass" : null;
  if (edgeOutcome !== null && edgeOfNode(graph, node, edgeOutcome) === undefined) {
    return refuse(
      "no-edge",
      `node "${node.id}" has no ${edgeOutcome} edge in the ${graph.name} graph, so the answer moves nothing; \`the-loop graph force\` moves the item`,
    );
  }
  const at = input.at.toISOString();
  // A new run's first generation is the one the answer opens: it counts no generation before it.
  const exhausted = renewal === undefined && decision === "changes-requested" && outOfGenerations(graph, state);
  const nextGeneration = renewal === undefined && decision === "changes-requested" && !exhausted ? state.generation + 1 : state.generation;
  const decided = withHistory(
    {
      ...state,
      generation: nextGeneration,
      attempts: nextGeneration !== state.generation ? {} : state.attempts,
      outcomes: { ...state.outcomes, [node.id]: decision },
    },
    { at, kind: "gate-decided", node: node.id, outcome: decision, actor: input.actor },
  );
  const effects: GraphEffect[] = [
    ...(renewal?.effects ?? []),
    event("graph.gate_decided", {
      ...itemFields(graph, state),
      node: node.id,
      decision,
      generation: state.generation,
      ...actorFields(input.actor),
      ...(input.via !== undefined ? { via: input.via } : {}),
    }),
  ];
  if (exhausted) return exhaustRun(graph, decided, input, effects);
  if (edgeOutcome === null) return enter(graph, decided, node, input, effects, node.id); // changes requested at a blocked agent node
  return follow(graph, decided, node, edgeOutcome, decision, input, effects, input.room);
}

// ---------------------------------------------------------------------------------------------
// The operator's hand, hooks' vetoes, and refusals on the record

export interface ForceInput extends Moment {
  readonly to: string;
  readonly reason: string;
  /** For an item with no run (or whose damaged record was moved aside): the run to begin at `to`. */
  readonly start?: { readonly ref: string; readonly loopRunId: string };
}

/**
 * `the-loop graph force`: puts the item on a node, whatever its status short of final, with a
 * reason that is recorded, logged and commented. The node's failed claims are forgotten, so a
 * blocked node forced onto itself gets its attempts again. On a run that has ended (final, or a
 * block that ended it) the force begins a new run, `input.start`'s, at the target; without one
 * a final run refuses it.
 */
export function forceTo(graph: Graph, state: GraphState | undefined, input: ForceInput): Refusal | Transition {
  const reason = input.reason.trim();
  if (reason === "") return refuse("no-reason", "a force is audited: give the reason with --reason TEXT");
  const target = graph.nodes.get(input.to);
  if (target === undefined) {
    return refuse("unknown-node", `the ${graph.name} graph has no node "${input.to}"; its nodes are: ${[...graph.nodes.keys()].join(", ")}`);
  }
  const at = input.at.toISOString();
  let base: GraphState;
  const begun: GraphEffect[] = [];
  if (state === undefined) {
    if (input.start === undefined) return refuse("not-running", "the item has no graph run to force");
    base = initialState(graph, input.start.ref, input.start.loopRunId, target.id, at, undefined);
  } else if (runHasEnded(state)) {
    if (input.start === undefined)
      return finalRefusal(state) ?? refuse("blocked", `${blockedReason(state)}; a force begins a new run, and none was given for it`);
    const renewal = renewRun(graph, state, input.start, input);
    base = renewal.state;
    begun.push(...renewal.effects);
  } else {
    const { [target.id]: _forgotten, ...attempts } = state.attempts;
    base = { ...state, attempts };
  }
  const from = state?.node ?? null;
  const forced = withHistory(base, { at, kind: "forced", node: target.id, ...(from !== null ? { from } : {}), actor: input.actor, reason });
  const effects: GraphEffect[] = [
    ...begun,
    event("graph.forced", {
      ...itemFields(graph, forced),
      node: target.id,
      reason,
      ...actorFields(input.actor),
      ...(from !== null ? { from } : {}),
    }),
    { kind: "announce-force", from, to: target.id, reason, actor: input.actor },
  ];
  return enter(graph, forced, target, input, effects, from);
}

export interface HaltInput extends Moment {
  /** Kebab words: `hook-vetoed`, `item-closed`, … */
  readonly reasonCode: string;
  readonly reason: string;
}

/** Stops automatic progress at the current node (a hook vetoed a move): an authorized gate answer or a force resumes it. */
export function blockRun(graph: Graph, state: GraphState, input: HaltInput): Refusal | Transition {
  const final = finalRefusal(state);
  if (final) return final;
  return block(graph, state, input.reasonCode, input.reason, input);
}

/** Ends the run without reaching a terminal node (`failed`; endRun for the other ends). Final. */
export function failRun(graph: Graph, state: GraphState, input: HaltInput): Refusal | Transition {
  return endRun(graph, state, { ...input, status: "failed" });
}

// ---------------------------------------------------------------------------------------------
// The shared steps

/** Takes the node's edge on `outcome` (blocked when it has none), recording the move as `recorded`. */
function follow(
  graph: Graph,
  state: GraphState,
  from: GraphNode,
  outcome: GraphOutcome,
  recorded: GraphOutcome,
  moment: Moment,
  effects: GraphEffect[] = [],
  room?: NodeRoom,
): Transition {
  const edge = edgeOfNode(graph, from, outcome);
  if (edge === undefined) {
    const blocked = block(graph, state, "no-edge", `node "${from.id}" has no ${outcome} edge in the ${graph.name} graph`, moment);
    return applied(false, blocked.state, [...effects, ...blocked.effects]);
  }
  const target = requireNode(graph, edge.to);
  const full = target.id === from.id ? undefined : (room ?? UNLIMITED).full(target);
  if (full !== undefined) return holdAtEdge(graph, state, from, target, recorded, full, moment, effects);
  effects.push(
    event("graph.advanced", {
      ...itemFields(graph, state),
      from: from.id,
      node: edge.to,
      outcome: recorded,
      generation: state.generation,
      ...actorFields(moment.actor),
    }),
  );
  return enter(graph, state, target, moment, effects, from.id);
}

/**
 * The daemon's release of a run waiting at an edge: it takes the edge it waits at (graph.edge_released,
 * then graph.advanced), as the claim or answer that led there would have. STAY-worthy (undefined)
 * when the run waits at no edge, or the node is still full.
 */
export function releaseHeld(graph: Graph, state: GraphState, input: Moment & { readonly room?: NodeRoom }): Transition | undefined {
  const held = state.heldEdge;
  if (held === undefined || state.status !== "waiting") return undefined;
  const from = graph.nodes.get(state.node);
  const target = graph.nodes.get(held.to);
  if (from === undefined || target === undefined) return undefined;
  if ((input.room ?? UNLIMITED).full(target) !== undefined) return undefined;
  const fields = { ...itemFields(graph, state), from: from.id, node: target.id, outcome: held.outcome, ...actorFields(input.actor) };
  const effects: GraphEffect[] = [
    event("graph.edge_released", { ...fields, since: held.since }),
    event("graph.advanced", { ...fields, generation: state.generation }),
  ];
  return enter(graph, state, target, input, effects, from.id);
}

/** Enters `target` (see the module comment for the effects, in order). */
function enter(graph: Graph, state: GraphState, target: GraphNode, moment: Moment, effects: GraphEffect[], from: string | null): Transition {
  const at = moment.at.toISOString();
  const oldPhase = state.phase;
  const phaseChanged = target.phase !== undefined && target.phase !== oldPhase;
  const phase = target.phase ?? oldPhase;
  if (phaseChanged && target.phase !== undefined) {
    effects.push({ kind: "phase-label", remove: oldPhase === undefined ? null : phaseLabel(oldPhase), add: phaseLabel(target.phase) });
  }
  if (phaseChanged || target.terminal) {
    effects.push({
      kind: "hook",
      point: "phase_changed",
      graph: graph.name,
      node: target.id,
      fromPhase: oldPhase ?? "",
      toPhase: phase ?? "",
      terminal: target.terminal,
    });
    effects.push({ kind: "announce-phase", node: target.id, phase: phase ?? null, terminal: target.terminal });
  }
  // A reason belongs to the node left, and so does an assignment still to deliver.
  const { reasonCode: _code, reason: _reason, phase: _phase, undelivered: _undelivered, capabilityText: _capabilityText, heldEdge: _held, ...rest } = state;
  let next: GraphState = withHistory(
    { ...rest, ...(phase !== undefined ? { phase } : {}), node: target.id, status: "running", updatedAt: at },
    { at, kind: "entered", node: target.id, ...(from !== null ? { from } : {}), actor: moment.actor },
  );
  if (target.terminal) {
    next = withHistory({ ...next, status: "done" }, { at, kind: "completed", node: target.id, actor: moment.actor });
    effects.push(event("graph.completed", { ...itemFields(graph, next), node: target.id, generation: next.generation, ...actorFields(moment.actor) }), {
      kind: "run-ended",
      status: "done",
    });
  } else if (target.actor === "agent") {
    effects.push({ kind: "deliver-assignment", node: target.id, generation: next.generation });
  } else {
    const reason = `waiting for an authorized person to approve "${target.id}" or request changes`;
    next = { ...next, status: "waiting", reasonCode: "awaiting-review", reason };
    effects.push(
      { kind: "hook", point: "waiting_for_input", asker: "gate", node: target.id },
      { kind: "request-review", node: target.id, generation: next.generation },
      event("graph.waiting", {
        ...itemFields(graph, next),
        node: target.id,
        generation: next.generation,
        reason,
        ...actorFields(moment.actor),
      }),
    );
  }
  return applied(true, next, effects);
}

function block(graph: Graph, state: GraphState, reasonCode: string, reason: string, moment: Moment): Transition {
  const at = moment.at.toISOString();
  const { heldEdge: _held, ...unheld } = state;
  const blocked = withHistory(
    { ...unheld, status: "blocked", reasonCode, reason },
    { at, kind: "blocked", node: state.node, actor: moment.actor, reason, reasonCode },
  );
  return applied(false, blocked, [
    event("graph.blocked", {
      ...itemFields(graph, blocked),
      node: state.node,
      reason_code: reasonCode,
      reason,
      attempts: state.attempts[state.node] ?? 0,
      ...actorFields(moment.actor),
    }),
  ]);
}

function blockedReason(state: GraphState): string {
  const why = state.reason ? `: ${state.reason}` : "";
  return `the item is blocked at node "${state.node}"${why}; an authorized person's gate answer or \`the-loop graph force\` resumes it`;
}

function unknownCurrentNode(graph: Graph, state: GraphState): Refusal {
  return refuse(
    "unknown-node",
    `the ${graph.name} graph has no node "${state.node}" (was the graph file changed?); \`the-loop graph force\` puts the item on one of its nodes`,
  );
}

function whatNow(graph: Graph, state: GraphState): string {
  const node = graph.nodes.get(state.node);
  if (node === undefined || state.status === "blocked") return blockedReason(state);
  if (node.terminal) return "the run is over";
  if (node.actor === "human") return `it waits for an authorized person's answer at that gate, not for a claim`;
  return `claim it with \`the-loop graph complete --node ${node.id}\` once its work is done`;
}

function describeActor(node: GraphNode): string {
  if (node.terminal) return "terminal";
  return node.actor === "human" ? "a human gate" : "an agent node";
}

function edgeOf(graph: Graph, from: string, on: GraphOutcome): GraphEdge | undefined {
  return graph.edges.find((edge) => edge.from === from && edge.on === on);
}

function edgeOfNode(graph: Graph, from: GraphNode, on: GraphOutcome): GraphEdge | undefined {
  return edgeOf(graph, from.id, on);
}

function requireNode(graph: Graph, id: string): GraphNode {
  const node = graph.nodes.get(id);
  // A compiled graph's edges and start name its nodes; anything else is a caller's bug.
  if (node === undefined) throw new Error(`the ${graph.name} graph has no node "${id}"`);
  return node;
}
