import { randomUUID } from "node:crypto";
import { messageOf } from "../errors.js";
import { applyGateAnswer, recordRefusal } from "../graph-run/advance.js";
import type { GraphEventEffect } from "../graph-run/advance.js";
import { decideGateInput, gateAnswerOfReview, mergeGateAnswers, parseGateAnswer } from "../graph-run/gate.js";
import type { ParsedGate } from "../graph-run/gate.js";
import { HELD_ANSWERS_MAX } from "../graph-run/held.js";
import type { HeldGateAnswer } from "../graph-run/held.js";
import { DEFAULT_HOLD_MS, decideSelfCheck } from "../graph-run/self-check.js";
import type { SelfCheck } from "../graph-run/self-check.js";
import type { GraphState } from "../graph-run/state.js";
import type { Graph, GraphActor } from "../graph/types.js";
import { COMMENT_KINDS } from "../routing/inbound.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { SelfLogin, Tracker } from "../trackers/tracker.js";
import { markSelfAuthored, parseWorkItemRef } from "../workitem/index.js";
import type { ContextNeeds, GraphSetup } from "../sessions/context.js";
import type { MoveContext } from "./move-context.js";
import { applyPointHalt, carryOut, emitGraphEvents, movePorts } from "./carry-out.js";
import { recheckGates } from "./capability-points.js";
import type { PointHalt } from "./capability-points.js";
import { commentReason } from "../sessions/announce.js";
import { loopGateMove } from "./loop-events.js";
import { commitMove, STAY } from "./move.js";
import { roomPort } from "./node-room.js";
import type { MoveRefusal } from "./move.js";
import { graphOf, readState } from "./start-claim-force.js";
import { inputReceived } from "../sessions/hook-points.js";
import { boundedInputText, deliveredInputKind } from "../sessions/lifecycle.js";

/**
 * A person's comment or review on an item whose run waits for a gate answer, and the
 * self-approval guard that decides whether it may count. The guard fails closed: while the
 * tracker cannot say which login the-loop posts as (the agent's comments carry that login), an
 * answer that would otherwise count is *held* — kept in the held-answers record (graph/held.ts),
 * so a restart keeps it — and decided, in the order given, once the login is known: at the next
 * answer, or when the daemon asks again (releaseHeldAnswers, on a backoff). A permanent failure
 * (GitHub's 401 or 403), or a hold past its bound, refuses the answer with one marked comment
 * asking for it again.
 */

/** What deciding an answer needs of the comment or review that gave it. */
interface GivenAnswer {
  readonly answer: ParsedGate;
  readonly author: string | null;
  readonly via: "keyword" | "review";
  /** The delivery that carried it: the origin of the run it begins on an ended one. */
  readonly deliveryId?: string;
}

/**
 * Undefined when the event is not a gate answer (no graph, no run waiting, no answer in it): it
 * goes on as any comment does. The router has already dropped what an unauthorized or
 * self-marked author wrote, so the author here is an authorized person; the self-approval guard
 * is checked here. `input_received` fires before the answer is read. A paused session is not
 * typed into: the answer moves the graph, and the next assignment waits for the resume.
 */
export async function graphGate(
  ctx: MoveContext & ContextNeeds<"answersHeld" | "inputSeen" | "react">,
  ref: string,
  event: InboundEvent,
): Promise<"taken" | undefined> {
  const setup = ctx.options.graph;
  if (setup === undefined || !COMMENT_KINDS.has(event.kind) || event.source === "cli") return undefined;
  const answer = mergeGateAnswers(parseGateAnswer(event.body, setup.vocabulary), gateAnswerOfReview(event.reviewState));
  if (answer.kind === "none") return undefined;
  const state = await readState(ctx, setup, ref);
  if (state === undefined) return undefined;
  const graph = graphOf(setup, state);
  const inputKind = deliveredInputKind(event, ctx.options.registry.get(ref));
  const workItem = event.workItems.find((item) => item.ref === ref) ?? event.workItems[0];
  if (inputKind !== undefined && workItem !== undefined) {
    await inputReceived(ctx, workItem, event, { kind: inputKind, text: boundedInputText(event.body) });
  }
  const via = answer.kind === "answer" && gateAnswerOfReview(event.reviewState).kind === "answer" ? "review" : "keyword";
  const given: GivenAnswer = { answer, author: event.actor, via, deliveryId: event.deliveryId };
  const checked = await checkSelf(ctx, setup, graph, ref, state, given);
  if (checked.kind === "hold") {
    if (answer.kind === "answer" && event.actor !== null) {
      const held = await holdAnswer(
        ctx,
        setup,
        graph,
        state,
        { id: event.deliveryId, author: event.actor, decision: answer.decision, via, heldAt: ctx.now().toISOString(), reason: checked.reason },
        checked.until,
      );
      if (held) {
        ctx.react(event, "started");
        return "taken";
      }
    }
  }
  if (checked.kind !== "take") {
    const reason = checked.kind === "refuse" ? checked : { reasonCode: "identity-unknown", reason: checked.reason };
    await refuseUnchecked(ctx, graph, ref, [{ author: event.actor ?? "unknown", ...reason }]);
    ctx.react(event, "failed");
    return "taken";
  }
  // Held answers decided just now may have moved the run: this one is decided on where it stands.
  const current = (await readState(ctx, setup, ref)) ?? state;
  const decided = await decideGateAnswer(ctx, setup, graph, ref, current, given, checked.selfLogin);
  if (decided === undefined) return undefined;
  ctx.react(event, decided.moved ? "completed" : "failed");
  return "taken";
}

/**
 * Whether the answer can be decided now. One that would not count whoever wrote it (not waiting,
 * ambiguous) needs no login: it is decided, and refused, at once. Answers held on the item before
 * are decided first, once the login is known.
 */
async function checkSelf(ctx: MoveContext, setup: GraphSetup, graph: Graph, ref: string, state: GraphState, given: GivenAnswer): Promise<SelfCheck> {
  if (setup.allowSelfApproval) return { kind: "take", selfLogin: null };
  const whoever = decideGateInput({
    answer: given.answer,
    authorized: given.author !== null,
    author: given.author,
    selfLogin: null,
    allowSelfApproval: true,
    state,
    graph,
  });
  if (whoever.kind === "refuse") return { kind: "take", selfLogin: null };
  const identity = await lookUpSelf(ctx, ref);
  if (identity.kind === "known") await decideHeld(ctx, setup, ref, identity.login);
  return decideSelfCheck({ identity, allowSelfApproval: false, heldAt: undefined, now: ctx.now(), holdMs: setup.holdMs ?? DEFAULT_HOLD_MS });
}

/** Trackers whose last lookup failed (in this process): the next success is said. */
const failedLookups = new WeakSet<Tracker>();

/** The tracker's answer, with an event when it could not say (and when it can again). */
async function lookUpSelf(ctx: ContextNeeds<never, "events" | "trackers">, ref: string): Promise<SelfLogin> {
  const tracker = ctx.options.trackers.forRef(ref);
  const identity = await tracker.selfLogin();
  if (identity.kind === "unknown") {
    failedLookups.add(tracker);
    ctx.options.events.emit("graph.self_login_unknown", {
      work_item: ref,
      checked: "self-approval",
      permanent: identity.permanent,
      reason: identity.reason,
      fix: identity.fix,
    });
  } else if (failedLookups.delete(tracker)) {
    ctx.options.events.emit("graph.self_login_learned", { work_item: ref, login: identity.login });
  }
  return identity;
}

/** Keeps the answer until the login is known; false when there is no store to keep it in. */
async function holdAnswer(
  ctx: MoveContext & ContextNeeds<"answersHeld">,
  setup: GraphSetup,
  graph: Graph,
  state: GraphState,
  answer: HeldGateAnswer,
  until: string,
): Promise<boolean> {
  const store = setup.held;
  if (store === undefined) return false;
  const ref = state.ref;
  const overflow = await store.transaction(ref, async (tx) => {
    const current = tx.read() ?? { version: 1 as const, ref, answers: [] };
    if (current.answers.some((held) => held.id === answer.id)) return [];
    const answers = [...current.answers, answer];
    const dropped = answers.splice(0, Math.max(0, answers.length - HELD_ANSWERS_MAX));
    await tx.write({ version: 1, ref, answers });
    return dropped;
  });
  ctx.options.events.emit("graph.gate_answer_held", {
    work_item: ref,
    graph: graph.name,
    node: state.node,
    decision: answer.decision,
    via: answer.via,
    actor: answer.author,
    actor_kind: "human",
    reason: answer.reason,
    until,
  });
  if (overflow.length > 0) {
    await refuseUnchecked(
      ctx,
      graph,
      ref,
      overflow.map((held) => ({
        author: held.author,
        reasonCode: "identity-timeout",
        reason: `more than ${HELD_ANSWERS_MAX} answers wait for the login to be known`,
      })),
      true,
    );
  }
  ctx.answersHeld?.();
  return true;
}

/** The item's held answers decided, oldest first, with the-loop's login known. Each leaves the record before it is decided: decided at most once. */
async function decideHeld(ctx: MoveContext, setup: GraphSetup, ref: string, selfLogin: string): Promise<void> {
  const store = setup.held;
  if (store === undefined) return;
  for (;;) {
    const next = await store.transaction(ref, async (tx) => {
      const current = tx.read();
      const [first, ...rest] = current?.answers ?? [];
      if (first === undefined) return undefined;
      if (rest.length === 0) await tx.remove();
      else await tx.write({ version: 1, ref, answers: rest });
      return first;
    });
    if (next === undefined) return;
    const state = await readState(ctx, setup, ref);
    const graph = state !== undefined ? graphOf(setup, state) : setup.defaultGraph;
    ctx.options.events.emit("graph.gate_answer_released", {
      work_item: ref,
      graph: graph.name,
      decision: next.decision,
      actor: next.author,
      actor_kind: "human",
      held_at: next.heldAt,
    });
    if (state === undefined) continue;
    const given: GivenAnswer = { answer: { kind: "answer", decision: next.decision }, author: next.author, via: next.via, deliveryId: next.id };
    await decideGateAnswer(ctx, setup, graph, ref, state, given, selfLogin);
  }
}

/**
 * The daemon asks again for the item's held answers: decided once the login is known, refused
 * (with one comment) once the failure is permanent or an answer's bound ran out. "waiting" while
 * some are still held.
 */
export async function releaseHeldAnswers(ctx: MoveContext, ref: string): Promise<"done" | "waiting"> {
  const setup = ctx.options.graph;
  const store = setup?.held;
  if (setup === undefined || store === undefined) return "done";
  const record = await store.get(ref);
  if (record === undefined || record.answers.length === 0) return "done";
  const identity = await lookUpSelf(ctx, ref);
  if (identity.kind === "known") {
    await decideHeld(ctx, setup, ref, identity.login);
    return "done";
  }
  const now = ctx.now();
  const holdMs = setup.holdMs ?? DEFAULT_HOLD_MS;
  const refused = await store.transaction(ref, async (tx) => {
    const current = tx.read();
    if (current === undefined) return [];
    const keep: HeldGateAnswer[] = [];
    const out: { author: string; reasonCode: string; reason: string }[] = [];
    for (const held of current.answers) {
      const check = decideSelfCheck({ identity, allowSelfApproval: false, heldAt: held.heldAt, now, holdMs });
      if (check.kind === "refuse") out.push({ author: held.author, reasonCode: check.reasonCode, reason: check.reason });
      else keep.push(check.kind === "hold" ? { ...held, reason: check.reason } : held);
    }
    if (keep.length === 0) await tx.remove();
    else if (out.length > 0) await tx.write({ version: 1, ref, answers: keep });
    return out;
  });
  if (refused.length > 0) {
    const state = await readState(ctx, setup, ref);
    await refuseUnchecked(ctx, state !== undefined ? graphOf(setup, state) : setup.defaultGraph, ref, refused, true);
  }
  return (await store.get(ref))?.answers.length ? "waiting" : "done";
}

interface Unchecked {
  readonly author: string;
  readonly reasonCode: string;
  readonly reason: string;
}

/**
 * Answers that do not count for want of the-loop's login: recorded (event, history) and said in
 * one marked comment on the item that asks for them again.
 */
async function refuseUnchecked(ctx: MoveContext, graph: Graph, ref: string, refused: readonly Unchecked[], wereHeld = false): Promise<void> {
  const setup = ctx.options.graph;
  const [first] = refused;
  if (setup === undefined || first === undefined) return;
  const at = ctx.now();
  const recorded = await setup.states.transaction(ref, async (tx) => {
    let current = tx.read();
    const effects: GraphEventEffect[] = [];
    for (const answer of refused) {
      const actor: GraphActor = { kind: "human", id: answer.author };
      const result = recordRefusal(graph, current, { kind: "gate-refused", ref, reasonCode: answer.reasonCode, reason: answer.reason, actor, at });
      current = result.state ?? current;
      effects.push(...result.effects);
    }
    if (current !== undefined && current !== tx.read()) await tx.write(current);
    return { state: current, effects };
  });
  if (wereHeld) {
    for (const answer of refused) {
      ctx.options.events.emit("graph.gate_answer_refused", {
        work_item: ref,
        graph: graph.name,
        actor: answer.author,
        actor_kind: "human",
        reason_code: answer.reasonCode,
        reason: answer.reason,
      });
    }
  }
  // The refusals' events need no state: with no record, they name the item alone.
  if (recorded.state !== undefined) await carryOut(ctx, graph, recorded.state, recorded.effects);
  else emitGraphEvents(ctx, graph, { ref, node: "" }, recorded.effects);
  const authors = [...new Set(refused.map((answer) => `@${answer.author}`))].join(", ");
  const keywords = setup.keywords;
  const text = markSelfAuthored(
    [
      `⚠️ **the-loop**: the gate answer${refused.length > 1 ? "s" : ""} of ${authors} on \`${ref}\` did not count: ${first.reason}.`,
      "",
      `Please answer again (\`${keywords.approve}\` or \`${keywords.requestChanges}\`) once that is fixed.`,
    ].join("\n"),
  );
  try {
    await ctx.options.trackers.forRef(ref).postComment(parseWorkItemRef(ref), text);
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", {
      work_item: ref,
      graph: graph.name,
      node: recorded.state?.node ?? "",
      effect: "refuse-unchecked-answer",
      error: messageOf(error),
    });
  }
}

/** The answer decided with the-loop's own login known (or not needed): the graph moves, or the refusal is recorded. */
async function decideGateAnswer(
  ctx: MoveContext,
  setup: GraphSetup,
  graph: Graph,
  ref: string,
  state: GraphState,
  given: GivenAnswer,
  selfLogin: string | null,
): Promise<{ readonly moved: boolean } | undefined> {
  const actor: GraphActor = { kind: "human", id: given.author ?? "unknown" };
  const at = ctx.now();
  const via = given.via;
  // On a run a block ended, the answer begins a new one: its id minted once, so the move foreseen and the one decided agree.
  const nextRun = { loopRunId: randomUUID() };
  const origin: GraphState["origin"] = { kind: "comment", ...(given.deliveryId ? { ref: given.deliveryId } : {}) };
  const gateInput = (current: GraphState | undefined): Parameters<typeof decideGateInput>[0] => ({
    answer: given.answer,
    authorized: given.author !== null,
    author: given.author,
    selfLogin,
    allowSelfApproval: setup.allowSelfApproval,
    state: current,
    graph,
  });
  // An approval that would count passes the node's blocking gates first: one that still blocks holds the item where it is.
  const foreseen = decideGateInput(gateInput(state));
  const node = graph.nodes.get(state.node);
  const gateHolds =
    foreseen.kind === "accept" && foreseen.decision === "approved" && node !== undefined ? await recheckGates(ctx, graph, state, node) : undefined;
  // loop.gate.pre (and the next generation's loop.generation.pre) are answered before the decision is written.
  const outcome = await commitMove<MoveRefusal>(movePorts(ctx, setup.states), {
    ref,
    seen: state,
    graphOf: () => graph,
    room: roomPort(ctx),
    decide: (_graph, current, _foreseen, room) => {
      const decided = decideGateInput(gateInput(current));
      if (decided.kind === "refuse") return decided;
      if (current === undefined) return STAY;
      if (gateHolds !== undefined && decided.decision === "approved" && current.node === state.node) {
        return { kind: "refuse", reasonCode: gateHolds.reasonCode, reason: `the approval does not pass the node's blocking gate: ${gateHolds.reason}` };
      }
      const answered = applyGateAnswer(graph, current, { decision: decided.decision, actor, at, via, next: nextRun, ...(room !== undefined ? { room } : {}) });
      return answered.kind === "refuse"
        ? answered
        : { kind: "move", transition: answered, loop: loopGateMove(graph, current, answered, actor, decided.decision, origin) };
    },
    // A refusal is recorded with the answer (history, event); a stale move is refused as any other.
    recordRefusal: (_graph, current, refusal) => {
      const kind = refusal.reasonCode === "ambiguous" ? "gate-ambiguous" : "gate-refused";
      return recordRefusal(graph, current, { kind, ref, reasonCode: refusal.reasonCode, reason: refusal.reason, actor, at });
    },
  });
  if (outcome.kind === "stayed") return undefined;
  if (outcome.kind === "refused" && gateHolds !== undefined && outcome.refusal.reasonCode === gateHolds.reasonCode) {
    await holdAtGate(ctx, graph, outcome.state ?? state, gateHolds, actor.id);
  }
  return { moved: outcome.kind === "moved" && !outcome.denied };
}

/**
 * An approval a blocking gate still stops: the item stays blocked at its node with the gate's
 * message — a gate that waited is blocked now (its block comment, the session told) — and a
 * block that stood already gets one marked comment saying the approval did not pass it.
 */
async function holdAtGate(ctx: MoveContext, graph: Graph, state: GraphState, halt: PointHalt, author: string): Promise<void> {
  if (state.status !== "blocked") {
    await applyPointHalt(ctx, graph, state.ref, state.node, state.generation, halt);
    return;
  }
  const text = markSelfAuthored(
    [
      `🛑 **the-loop**: the approval of @${author} did not move \`${state.ref}\`: a blocking gate at node \`${state.node}\` still stops it.`,
      "",
      `> ${commentReason(halt.reason)}`,
      "",
      "Fix what it names and approve again; or `the-loop graph force` moves the item past it (audited).",
    ].join("\n"),
  );
  try {
    await ctx.options.trackers.forRef(state.ref).postComment(parseWorkItemRef(state.ref), text);
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", {
      work_item: state.ref,
      graph: graph.name,
      node: state.node,
      effect: "gate-holds",
      error: messageOf(error),
    });
  }
}
