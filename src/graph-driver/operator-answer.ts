import { randomUUID } from "node:crypto";
import { messageOf } from "../errors.js";
import { applyGateAnswer, gateRefusal, recordRefusal } from "../graph-run/advance.js";
import type { GateDecision, Refusal } from "../graph-run/advance.js";
import type { OperatorVia } from "../graph-run/comments.js";
import type { GraphEffect } from "../graph-run/effects.js";
import type { GraphState } from "../graph-run/state.js";
import type { Graph, GraphActor } from "../graph/types.js";
import { REASON_MAX, boundedName } from "../sessions/names.js";
import type { ContextNeeds, GraphSetup } from "../sessions/context.js";
import { recheckGates } from "./capability-points.js";
import type { PointHalt } from "./capability-points.js";
import { applyPointHalt, emitGraphEvents, movePorts } from "./carry-out.js";
import { loopGateMove } from "./loop-events.js";
import type { MoveContext } from "./move-context.js";
import { commitMove } from "./move.js";
import { roomPort } from "./node-room.js";
import type { MoveRefusal } from "./move.js";
import { graphOf, graphOff, readState } from "./start-claim-force.js";
import type { ClaimAnswer } from "./start-claim-force.js";

/**
 * An operator's gate answer: `the-loop graph approve | request-changes`, or the dashboard's
 * buttons. A comment the daemon posts with its token is the-loop's own (the self-approval guard
 * refuses it), and the gate reads comments and reviews only, so the operator's answer has this
 * path of its own. It moves the gate exactly as the keyword in an authorized person's comment
 * does (applyGateAnswer, the node's blocking gates checked again before an approval, the loop
 * events), and it is audited as a force is: the actor is the operator by name (kind `operator`),
 * `graph.gate_decided` carries `via` (`cli` or `dashboard`), the history has its `gate-decided`
 * entry, and a marked comment on the item says who answered, how, and the reason given. An item
 * not waiting for an answer refuses it, recorded as `graph.gate_refused` with a history entry.
 */

export interface OperatorAnswerRequest {
  readonly ref: string;
  readonly decision: GateDecision;
  /** Why (required for request-changes, optional for an approval); written into the comment and the history. */
  readonly reason?: string | undefined;
  /** The operator: the OS user (the CLI) or `dashboard.operator` (the dashboard). */
  readonly actor: GraphActor;
  readonly via: OperatorVia;
}

function answerOf(ref: string, graph: Graph, state: GraphState | undefined, moved: boolean, refusal?: MoveRefusal): ClaimAnswer {
  return {
    moved,
    ref,
    graph: graph.name,
    node: state?.node ?? null,
    status: state?.status ?? null,
    reasonCode: refusal?.reasonCode ?? (moved ? null : (state?.reasonCode ?? null)),
    reason: refusal?.reason ?? (moved ? null : (state?.reason ?? null)),
  };
}

export async function graphOperatorAnswer(ctx: MoveContext, request: OperatorAnswerRequest): Promise<ClaimAnswer> {
  const setup = ctx.options.graph;
  const ref = request.ref;
  if (setup === undefined) return graphOff(ref);
  const actor: GraphActor = { kind: "operator", id: boundedName(request.actor.id) || "operator" };
  const reason = request.reason !== undefined ? boundedName(request.reason, REASON_MAX) : "";
  const at = ctx.now();
  const state = await readState(ctx, setup, ref);
  const graph = state !== undefined ? graphOf(setup, state) : setup.defaultGraph;
  const waiting = gateRefusal(graph, state);
  if (waiting !== undefined || state === undefined) {
    const refusal = waiting ?? { kind: "refuse", reasonCode: "not-running", reason: "the item has no graph run, so there is no gate to answer" };
    await refuseAnswer(ctx, setup, graph, ref, actor, refusal);
    return answerOf(ref, graph, state, false, refusal);
  }
  const node = graph.nodes.get(state.node);
  // An approval passes the node's blocking gates first, as a comment's does: one that still blocks holds the item where it is.
  const gateHolds = request.decision === "approved" && node !== undefined ? await recheckGates(ctx, graph, state, node) : undefined;
  const announce: GraphEffect = {
    kind: "announce-answer",
    node: state.node,
    decision: request.decision,
    reason: reason === "" ? null : reason,
    actor,
    via: request.via,
  };
  const nextRun = { loopRunId: randomUUID() };
  const outcome = await commitMove<MoveRefusal>(movePorts(ctx, setup.states), {
    ref,
    seen: state,
    graphOf: () => graph,
    room: roomPort(ctx),
    decide: (_graph, current, _foreseen, room) => {
      const refused = gateRefusal(graph, current);
      if (refused !== undefined || current === undefined) return refused ?? { kind: "refuse", reasonCode: "not-running", reason: "the item's run ended" };
      if (gateHolds !== undefined && request.decision === "approved" && current.node === state.node) {
        return { kind: "refuse", reasonCode: gateHolds.reasonCode, reason: `the approval does not pass the node's blocking gate: ${gateHolds.reason}` };
      }
      const answered = applyGateAnswer(graph, current, {
        decision: request.decision,
        actor,
        at,
        via: request.via,
        next: nextRun,
        ...(room !== undefined ? { room } : {}),
      });
      if (answered.kind === "refuse") return answered;
      // The audit comment first: it says who answered before the phase comments of the node entered.
      const transition = { ...answered, effects: [announce, ...answered.effects] };
      return { kind: "move", transition, loop: loopGateMove(graph, current, transition, actor, request.decision, { kind: "cli" }) };
    },
    recordRefusal: (_graph, current, refusal) =>
      recordRefusal(graph, current, { kind: "gate-refused", ref, reasonCode: refusal.reasonCode, reason: refusal.reason, actor, at }),
  });
  if (outcome.kind === "refused" && gateHolds !== undefined && outcome.refusal.reasonCode === gateHolds.reasonCode) {
    await holdAtGate(ctx, graph, outcome.state ?? state, gateHolds);
  }
  const refusal = outcome.kind === "refused" ? outcome.refusal : undefined;
  const moved = outcome.kind === "moved" && !outcome.denied;
  // The move's effects ran: a gate at the node entered may have blocked the item since, and the answer says so.
  // Unreadable now: the answer is the move's own outcome, which was written; the next read reports the damage.
  const after = (await setup.states.get(ref).catch(() => undefined)) ?? outcome.state;
  return answerOf(ref, graph, after, moved, refusal);
}

/** A blocking gate the approval did not pass: the item is blocked at its node with the gate's message (and told so on the ticket). */
async function holdAtGate(ctx: MoveContext, graph: Graph, state: GraphState, halt: PointHalt): Promise<void> {
  if (state.status === "blocked") return;
  await applyPointHalt(ctx, graph, state.ref, state.node, state.generation, halt);
}

/** The refusal on the record (history, `graph.gate_refused`), with or without a run. */
async function refuseAnswer(
  ctx: ContextNeeds<"now", "events">,
  setup: GraphSetup,
  graph: Graph,
  ref: string,
  actor: GraphActor,
  refusal: Refusal,
): Promise<void> {
  try {
    const recorded = await setup.states.transaction(ref, async (tx) => {
      const current = tx.read();
      const result = recordRefusal(graph, current, { kind: "gate-refused", ref, reasonCode: refusal.reasonCode, reason: refusal.reason, actor, at: ctx.now() });
      if (result.state !== undefined && result.state !== current) await tx.write(result.state);
      return result;
    });
    emitGraphEvents(ctx, graph, { ref: recorded.state?.ref ?? ref, node: recorded.state?.node ?? "" }, recorded.effects);
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", { work_item: ref, graph: graph.name, node: "", effect: "gate-refused", error: messageOf(error) });
  }
}
