import { randomUUID } from "node:crypto";
import { messageOf } from "../errors.js";
import { applyClaimResult, decideClaim, forceTo, recordRefusal, startRun } from "../graph-run/advance.js";
import type { Refusal } from "../graph-run/advance.js";
import { assignmentText, graphContext } from "../graph-run/assignment.js";
import { runChecks } from "../graph-run/checks.js";
import type { GraphState } from "../graph-run/state.js";
import type { Graph, GraphActor } from "../graph/types.js";
import { isFinalGraphStatus } from "../graph/types.js";
import type { ControlRecord } from "../control/types.js";
import type { InboundEvent } from "../routing/inbound.js";
import { standingState } from "../routing/router.js";
import { DamagedRecordError } from "../state/record-kind.js";
import { allowListedEnv } from "../subprocess/index.js";
import type { ContextNeeds, GraphSetup, Turn } from "../sessions/context.js";
import type { MoveContext } from "./move-context.js";
import type { PasteContext } from "../sessions/delivery.js";
import { passAt, sessionCwd } from "./capability-points.js";
import type { PointPass } from "./capability-points.js";
import { applyPointHalt, emitGraphEvents, enterPoints, movePorts } from "./carry-out.js";
import { loopClaimMove, loopForceMove, loopStartMove } from "./loop-events.js";
import { commitMove, STAY } from "./move.js";
import { roomPort } from "./node-room.js";
import { REASON_MAX, boundedName } from "../sessions/names.js";

/**
 * The process graph at the dispatcher's call sites: a start begins (or continues) the item's
 * run, an authorized person's gate answer moves it, an agent's claim (sent by
 * `the-loop graph complete` through the daemon's socket) is checked and decided, an operator's
 * force is applied. Deciding is the graph's pure advance (src/graph-run/advance.ts); this reads and
 * writes the item's graph state under its lock and then carries the effects out.
 */

const DAEMON: GraphActor = { kind: "daemon", id: "the-loop" };

export function graphOf(setup: GraphSetup, state: GraphState): Graph {
  const graph = setup.graphs.get(state.graph);
  if (graph === undefined) {
    throw new Error(
      `${state.ref} runs the graph "${state.graph}", which the config no longer has; add it back under \`graphs\`, or put the item on a node of the default graph with \`the-loop graph force\``,
    );
  }
  return graph;
}

/**
 * The item's graph state. A record that does not parse is moved aside (kept, with its name and
 * time) and the item starts afresh: a damaged record must not stop its work item for good.
 */
export async function readState(ctx: ContextNeeds<never, "events">, setup: GraphSetup, ref: string): Promise<GraphState | undefined> {
  try {
    return await setup.states.get(ref);
  } catch (error) {
    if (!(error instanceof DamagedRecordError)) throw error;
    const movedTo = await setup.states.moveAside(ref, error.reason);
    ctx.options.events.emit("graph.record_moved_aside", { work_item: ref, file: error.where, reason: error.reason, moved_to: movedTo ?? error.where });
    return undefined;
  }
}

// ---- start -------------------------------------------------------------------------------------

export interface GraphBoot {
  /** Appended to the boot prompt: the current node's assignment, or where the run stands. */
  readonly text: string;
  /** `{{graph_context}}`. */
  readonly context: string;
  /** Records that the boot prompt, assignment included, reached a started harness. */
  delivered(): void;
}

/**
 * The graph a new run of the item begins on: the one its standing start chose (a keyword argument
 * or `--graph`, authorized as the start itself was), else the config's default. A choice of a
 * graph the config does not have (removed since, or never there) is refused, and the default runs.
 */
function graphChosen(ctx: ContextNeeds<"policy", "control">, setup: GraphSetup, ref: string): { readonly graph: Graph; readonly refused?: ControlRecord } {
  const standing = ctx.options.control.get(ref);
  // A resume carries a start's choice only when it released a queued start (docs/fleet.md).
  if ((standing?.command !== "start" && standing?.command !== "resume") || standing.graph === undefined) return { graph: setup.defaultGraph };
  // A start given by someone no longer authorized stands for nothing, its choice included.
  if (standingState(standing, ctx.policy) !== "start-requested") return { graph: setup.defaultGraph };
  const chosen = setup.graphs.get(standing.graph);
  return chosen !== undefined ? { graph: chosen } : { graph: setup.defaultGraph, refused: standing };
}

/**
 * A session is starting for the item: its run begins at the start node of the graph chosen for
 * it (graphChosen), or continues on its own graph when one is under way — a restarted session
 * picks up where the item is. The effects of a new run (the phase label, phase_changed, the
 * announcement) are carried out here, before the harness starts; the assignment itself goes
 * into the boot prompt.
 */
export async function graphAtStart(
  ctx: PasteContext & ContextNeeds<"hooks" | "policy", "control" | "graph" | "spawnCwd" | "trackers">,
  turn: Turn,
  cwd: string,
): Promise<GraphBoot | undefined> {
  const setup = ctx.options.graph;
  if (setup === undefined) return undefined;
  const ref = turn.workItem.ref;
  const seen = await readState(ctx, setup, ref);
  const choice = graphChosen(ctx, setup, ref);
  const actor = actorOf(turn.event);
  const underWay = (state: GraphState | undefined): state is GraphState => state !== undefined && !isFinalGraphStatus(state.status);
  // A new run's loop.generation.pre is answered before its first state is written: a denial leaves no assignment to give.
  const begun = await commitMove(movePorts(ctx, setup.states), {
    ref,
    seen,
    graphOf: (state) => (underWay(state) ? graphOf(setup, state) : choice.graph),
    decide: (graph, current, foreseen) => {
      if (underWay(current)) return STAY;
      const transition = foreseen ?? startRun(graph, { ref, loopRunId: randomUUID(), at: ctx.now(), actor, ...(current ? { previous: current } : {}) });
      return { kind: "move", transition, loop: loopStartMove(graph, transition, actor, turn.event) };
    },
    always: true,
    written: (graph) => {
      if (choice.refused === undefined) return;
      ctx.options.events.emit("graph.choice_refused", {
        work_item: ref,
        chosen: choice.refused.graph ?? "",
        graph: graph.name,
        known: [...setup.graphs.keys()],
        actor: choice.refused.actor,
        command_source: choice.refused.source,
      });
    },
    carry: { bootDelivered: true },
  });
  if (begun.kind === "refused" || begun.state === undefined) throw new Error(`${ref}: a run's start cannot be refused`);
  let current = begun.state;
  const node = begun.graph.nodes.get(current.node);
  if (begun.kind === "moved" && node !== undefined && node.actor === "agent" && !node.terminal && current.status === "running") {
    // The first node's points pass before the boot prompt: their text is part of its assignment, and a gate may block it.
    const entered = await enterPoints(ctx, begun.graph, current, node.id, current.generation, cwd);
    current = entered.blocked ? ((await readState(ctx, setup, ref)) ?? current) : entered.state;
  }
  const context = graphContext(begun.graph, current);
  const assigned = node !== undefined && node.actor === "agent" && !node.terminal && current.status === "running";
  return {
    text: assigned ? assignmentText(begun.graph, node, current) : context,
    context,
    delivered: () => {
      if (!assigned) return;
      ctx.options.events.emit("graph.assignment_delivered", {
        work_item: ref,
        graph: begun.graph.name,
        node: node.id,
        generation: current.generation,
        how: "boot-prompt",
      });
    },
  };
}

function actorOf(event: InboundEvent): GraphActor {
  if (event.source === "cli") return { kind: "operator", id: event.actor ?? "operator" };
  return event.actor ? { kind: "human", id: event.actor } : DAEMON;
}

// ---- gates: graph-gate.ts ---------------------------------------------------------------------

// ---- claims ------------------------------------------------------------------------------------

export interface ClaimRequest {
  readonly ref: string;
  readonly node?: string | undefined;
  /** Who claims: the agent of the session whose credential came with it, or the operator (the OS user). */
  readonly actor: GraphActor;
  /** The config file the claiming command loaded (resolved), or null for none. */
  readonly configFile: string | null;
}

export interface ClaimAnswer {
  readonly moved: boolean;
  readonly ref: string;
  readonly graph: string | null;
  readonly node: string | null;
  readonly status: string | null;
  readonly reasonCode: string | null;
  readonly reason: string | null;
  /** What the capabilities' hooks at the claim told the agent: advisories, warnings, the next attempt's text. */
  readonly notes?: readonly string[];
}

function answerOf(ref: string, graph: Graph | undefined, state: GraphState | undefined, moved: boolean, refusal?: Refusal): ClaimAnswer {
  return {
    moved,
    ref,
    graph: graph?.name ?? state?.graph ?? null,
    node: state?.node ?? null,
    status: state?.status ?? null,
    reasonCode: refusal?.reasonCode ?? (moved ? null : (state?.reasonCode ?? null)),
    reason: refusal?.reason ?? (moved ? null : (state?.reason ?? null)),
  };
}

/** The answer to a claim, a force or an operator's gate answer when the daemon runs without the process graph. */
export function graphOff(ref: string): ClaimAnswer {
  return {
    moved: false,
    ref,
    graph: null,
    node: null,
    status: null,
    reasonCode: "graph-off",
    reason: "the process graph is off in the daemon's config (graph.enabled)",
  };
}

/**
 * An agent's claim that its node is done. The daemon is the judge: the node's checks run in the
 * session's working directory with a scrubbed environment, and the claim is decided again under
 * the record's lock with their results, so two claims at once move the item once.
 */
export async function graphClaim(ctx: MoveContext, request: ClaimRequest): Promise<ClaimAnswer> {
  const setup = ctx.options.graph;
  const ref = request.ref;
  if (setup === undefined) {
    return graphOff(ref);
  }
  const actor: GraphActor = { kind: request.actor.kind, id: boundedName(request.actor.id) || "unknown" };
  const at = ctx.now();
  const state = await readState(ctx, setup, ref);
  const graph = state ? graphOf(setup, state) : setup.defaultGraph;
  if (request.configFile !== (setup.configFile ?? null)) {
    const refusal: Refusal = {
      kind: "refuse",
      reasonCode: "other-config",
      reason: `the claim was made under ${request.configFile ?? "no config file"}, but the daemon runs ${setup.configFile ?? "without a config file"}; claim without --config inside the session`,
    };
    await refuseClaim(ctx, setup, graph, ref, actor, refusal, request.node);
    return answerOf(ref, graph, state, false, refusal);
  }
  const decided = decideClaim(graph, state, { node: request.node, actor });
  if (decided.kind === "refuse" || state === undefined) {
    const refusal = decided.kind === "refuse" ? decided : undefined;
    if (refusal) await refuseClaim(ctx, setup, graph, ref, actor, refusal, request.node);
    return answerOf(ref, graph, state, false, refusal);
  }
  const cwd = sessionCwd(ctx, ref);
  const node = graph.nodes.get(decided.node);
  const notes: string[] = [];
  // The points of the claim: execute:wave:post ends the attempt (before the checks), the node's :post points follow checks that passed.
  // Their text (contributions, instructions, advisories and warnings) has no assignment to go into: the claim's answer carries it.
  const halted = async (pass: PointPass): Promise<ClaimAnswer | undefined> => {
    if (pass.text !== "") notes.push(pass.text);
    if (pass.halt === undefined) return undefined;
    const blocked = await applyPointHalt(ctx, graph, ref, decided.node, decided.generation, pass.halt);
    const refusal: Refusal = { kind: "refuse", reasonCode: "blocked", reason: pass.halt.reason };
    return { ...answerOf(ref, graph, blocked ?? state, false, refusal), notes };
  };
  const attemptEnd = node ? await halted(await passAt(ctx, graph, state, node, "attempt-end", cwd)) : undefined;
  if (attemptEnd !== undefined) return attemptEnd;
  const results = await runChecks(decided.checks, { cwd, env: allowListedEnv([]) });
  if (node && results.every((result) => result.passed)) {
    const passed = await halted(await passAt(ctx, graph, state, node, "claim-passed", cwd));
    if (passed !== undefined) return passed;
  }
  const claimed = { node: decided.node, generation: decided.generation, results, actor, at };
  // loop.gate.pre, when the claim steps into a terminal node, is answered before the claim is written.
  // Unread, nothing is asked ahead: the move is then refused, as stale, when a .pre hook had to answer it.
  const outcome = await commitMove<Refusal>(movePorts(ctx, setup.states), {
    ref,
    // See above: an unread record asks nothing ahead, and a move that needed a .pre answer is refused as stale.
    seen: await setup.states.get(ref).catch(() => undefined),
    graphOf: () => graph,
    room: roomPort(ctx),
    decide: (_graph, current, _foreseen, room) => {
      if (current === undefined) return { kind: "refuse", reasonCode: "not-running", reason: "the item's graph run ended while its checks ran" };
      const applied = applyClaimResult(graph, current, room !== undefined ? { ...claimed, room } : claimed);
      return applied.kind === "refuse"
        ? applied
        : { kind: "move", transition: applied, loop: loopClaimMove(graph, current, applied, actor, decided.node, results) };
    },
  });
  if (outcome.kind !== "moved") {
    const refusal = outcome.kind === "refused" ? outcome.refusal : undefined;
    if (refusal !== undefined) await refuseClaim(ctx, setup, graph, ref, actor, refusal, request.node);
    return answerOf(ref, graph, outcome.state, false, refusal);
  }
  const transition = outcome.transition;
  const moved = transition.moved && !outcome.denied;
  if (node && !transition.moved && outcome.state.status === "running" && outcome.state.node === node.id) {
    // Another attempt at the node: execute:wave:pre opens it, and what it gives the agent comes with this answer.
    const halt = await halted(await passAt(ctx, graph, outcome.state, node, "retry", cwd));
    if (halt !== undefined) return halt;
  }
  // The move's effects ran before this answer: a gate at the node entered may have blocked the item since, and the answer says so.
  // Unreadable now: the answer is the move's own outcome, which was written; the next read reports the damage.
  const after = (await setup.states.get(ref).catch(() => undefined)) ?? outcome.state;
  const now = after.loopRunId === outcome.state.loopRunId ? after : outcome.state;
  return {
    ...answerOf(ref, graph, now, moved),
    ...(now.status === "blocked" ? { reasonCode: now.reasonCode ?? null, reason: now.reason ?? null } : {}),
    ...(notes.length > 0 ? { notes } : {}),
  };
}

async function refuseClaim(
  ctx: ContextNeeds<"now", "events">,
  setup: GraphSetup,
  graph: Graph,
  ref: string,
  actor: GraphActor,
  refusal: Refusal,
  claimed: string | undefined,
): Promise<void> {
  try {
    const recorded = await setup.states.transaction(ref, async (tx) => {
      const current = tx.read();
      const result = recordRefusal(graph, current, {
        kind: "claim-refused",
        ref,
        reasonCode: refusal.reasonCode,
        reason: refusal.reason,
        actor,
        at: ctx.now(),
        claimed,
      });
      if (result.state !== undefined && result.state !== current) await tx.write(result.state);
      return result;
    });
    // The refusal's events need no state: with no record, they name the item and the node claimed.
    emitGraphEvents(ctx, graph, { ref: recorded.state?.ref ?? ref, node: recorded.state?.node ?? claimed ?? "" }, recorded.effects);
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", {
      work_item: ref,
      graph: graph.name,
      node: claimed ?? "",
      effect: "claim-refused",
      error: messageOf(error),
    });
  }
}

// ---- force -------------------------------------------------------------------------------------

export interface ForceRequest {
  readonly ref: string;
  readonly to: string;
  readonly reason: string;
  /** The operator (the OS user); a session may not force. */
  readonly actor: GraphActor;
}

/** `the-loop graph force`: audited (event, history, marked comment), and the node entered as any move enters it. */
export async function graphForce(ctx: MoveContext, request: ForceRequest): Promise<ClaimAnswer> {
  const setup = ctx.options.graph;
  const ref = request.ref;
  if (setup === undefined) {
    return graphOff(ref);
  }
  const actor: GraphActor = { kind: "operator", id: boundedName(request.actor.id) || "operator" };
  // A run on a graph the config no longer has is put on the default graph's node, as a new run.
  const runOf = (read: GraphState | undefined): GraphState | undefined => (read !== undefined && setup.graphs.has(read.graph) ? read : undefined);
  const forced = { to: request.to, reason: boundedName(request.reason, REASON_MAX), actor, at: ctx.now(), start: { ref, loopRunId: randomUUID() } };
  // loop.gate.pre (a force into a terminal node) and a new run's loop.generation.pre are answered before the force is written.
  const outcome = await commitMove<Refusal>(movePorts(ctx, setup.states), {
    ref,
    seen: await readState(ctx, setup, ref),
    view: runOf,
    graphOf: (state) => (state ? graphOf(setup, state) : setup.defaultGraph),
    decide: (graph, current) => {
      const applied = forceTo(graph, current, forced);
      return applied.kind === "refuse" ? applied : { kind: "move", transition: applied, loop: loopForceMove(graph, current, applied, actor, forced) };
    },
  });
  return answerOf(ref, outcome.graph, outcome.state, outcome.kind === "moved" && !outcome.denied, outcome.kind === "refused" ? outcome.refusal : undefined);
}
