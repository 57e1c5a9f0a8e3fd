import { describe, expect, it } from "vitest";
import { applyClaimResult, applyGateAnswer, endRun, forceTo, runHasEnded } from "../../src/graph-run/advance.js";
import type { Transition } from "../../src/graph-run/advance.js";
import { deniedMove, planLoopMove } from "../../src/graph-loop/plan.js";
import type { LoopMoveInput, RunEffect } from "../../src/graph-loop/plan.js";
import type { GraphState } from "../../src/graph-run/state.js";
import { blockAtNode } from "../../src/graph-driver/capability-points.js";
import type { PointHalt } from "../../src/graph-driver/capability-points.js";
import { endedByBlockBefore, loopClaimMove, loopForceMove, loopGateMove, loopMoveInput } from "../../src/graph-driver/loop-events.js";
import type { LoopAsker } from "../../src/graph-driver/loop-events.js";
import { aghViolations } from "../hooks/support/agh-conformance.js";
import { AGENT, ALICE, DAEMON, GRAPH, MISSING, OPERATOR, PASS, REF, applied, at, refused, started } from "../graph/fixture.js";

/**
 * The new-run rule (docs/hooks.md, "When a run ends"): a block that ends the loop run sends
 * loop.terminal; an answer or a force after any end begins a new run — a new loop_run_id, its own
 * loop.started — and no loop event is sent on the ended run's id again.
 */

const ASKER: LoopAsker = {
  runLoop: async () => ({ annotations: [] }),
  handles: () => true,
  now: () => at(60),
  session: () => ({ agentName: "claude", sessionId: "0f3c" }),
};

const input = (rest: Omit<LoopMoveInput, "session" | "now" | "handled">): LoopMoveInput => loopMoveInput(ASKER, REF, rest);

const loopPayloads = (effects: readonly RunEffect[]): Readonly<Record<string, unknown>>[] =>
  effects.flatMap((effect) => (effect.kind === "loop" ? [effect.payload] : []));
const story = (effects: readonly RunEffect[]): string[] =>
  loopPayloads(effects).map((payload) => [payload["event"], payload["status"] ?? payload["task_status"]].filter((part) => part !== undefined).join(" "));

/** The run out of attempts at `design` (2 allowed): the claim's move and its loop plan. */
function outOfAttempts(): { readonly before: GraphState; readonly transition: Transition; readonly effects: readonly RunEffect[]; readonly state: GraphState } {
  const once = applied(applyClaimResult(GRAPH, started(), { node: "design", generation: 1, results: [MISSING], actor: AGENT, at: at(5) })).state;
  const transition = applied(applyClaimResult(GRAPH, once, { node: "design", generation: 1, results: [MISSING], actor: AGENT, at: at(6) }));
  const plan = planLoopMove(input(loopClaimMove(GRAPH, once, transition, AGENT, "design", [MISSING])));
  return { before: once, transition, effects: plan.effects, state: plan.state };
}

describe("a block that ends the run", () => {
  it("a claim out of attempts ends the loop run blocked: generation.post, then loop.terminal, in agh's words", () => {
    const { effects, state } = outOfAttempts();
    expect(state).toMatchObject({ status: "blocked", reasonCode: "max-attempts" });
    expect(runHasEnded(state)).toBe(true);
    expect(story(effects)).toEqual(["loop.node.terminal failed", "loop.generation.post blocked", "loop.terminal blocked"]);
    const terminal = loopPayloads(effects).at(-1);
    expect(terminal).toMatchObject({ status: "blocked", cause: "contract", reason_code: "max-attempts", details: { the_loop: { cause: "max-attempts" } } });
    expect(loopPayloads(effects).flatMap((payload) => aghViolations(payload))).toEqual([]);
  });

  it.each(["capability-gate", "capability-step", "task-resolver", "capability-changed", "capability-runtime"])(
    "a capability's halt (%s) ends it too, as gsd-core's stop: generation.post, then loop.terminal, and a close after it sends no second",
    (reasonCode) => {
      const before = started();
      const decided = blockAtNode(GRAPH, before, before.node, before.generation, { reasonCode, reason: "a gate stopped it" } as PointHalt, at(5));
      if (decided.kind !== "move" || decided.loop === undefined) throw new Error(`the halt moved nothing: ${decided.kind}`);
      const plan = planLoopMove(input(decided.loop));
      expect(plan.state).toMatchObject({ status: "blocked", reasonCode });
      expect(runHasEnded(plan.state)).toBe(true);
      expect(story(plan.effects)).toEqual(["loop.generation.post blocked", "loop.terminal blocked"]);
      const terminal = loopPayloads(plan.effects).at(-1);
      expect(terminal).toMatchObject({ status: "blocked", cause: "contract", reason_code: reasonCode, details: { the_loop: { cause: reasonCode } } });
      expect(loopPayloads(plan.effects).flatMap((payload) => aghViolations(payload))).toEqual([]);
      const closed = applied(endRun(GRAPH, plan.state, { status: "canceled", reasonCode: "item-closed", reason: "closed", actor: DAEMON, at: at(6) })).state;
      expect(endedByBlockBefore(GRAPH, closed)).toBe(true);
      // Blocked again on the ended run, it moves nothing: nothing more is sent on its id.
      expect(blockAtNode(GRAPH, plan.state, plan.state.node, plan.state.generation, { reasonCode, reason: "again" } as PointHalt, at(7))).toEqual({
        kind: "stay",
      });
    },
  );

  it("a force after a capability's halt begins a new run", () => {
    const before = started();
    const decided = blockAtNode(GRAPH, before, before.node, before.generation, { reasonCode: "capability-gate", reason: "a gate stopped it" }, at(5));
    if (decided.kind !== "move") throw new Error("the halt moved nothing");
    const blocked = decided.transition.state;
    expect(refused(forceTo(GRAPH, blocked, { to: "design", reason: "fixed", actor: OPERATOR, at: at(6) })).reasonCode).toBe("blocked");
    const renewed = applied(forceTo(GRAPH, blocked, { to: "design", reason: "fixed", actor: OPERATOR, at: at(6), start: { ref: REF, loopRunId: "run-2" } }));
    expect(renewed.state).toMatchObject({ loopRunId: "run-2", node: "design", status: "running", generation: 1 });
  });
});

describe("after the run ended", () => {
  it("an answer is refused unless it is given the new run's id", () => {
    const { state } = outOfAttempts();
    expect(refused(applyGateAnswer(GRAPH, state, { decision: "approved", actor: ALICE, at: at(10) })).reasonCode).toBe("blocked");
  });

  it("an approval begins a new run: graph.started, loop.started, and every loop event on the new id", () => {
    const { state: ended } = outOfAttempts();
    const transition = applied(applyGateAnswer(GRAPH, ended, { decision: "approved", actor: ALICE, at: at(10), next: { loopRunId: "run-2" } }));
    expect(transition.state).toMatchObject({ loopRunId: "run-2", generation: 1, node: "design-approval", status: "waiting", attempts: {} });
    expect(transition.effects[0]).toMatchObject({ kind: "event", name: "graph.started", fields: { loop_run_id: "run-2", node: "design", generation: 1 } });
    const plan = planLoopMove(input(loopGateMove(GRAPH, ended, transition, ALICE, "approved", { kind: "comment", ref: "d-9" })));
    expect(plan.asks.map((ask) => [ask.name, ask.payload["loop_run_id"]])).toEqual([
      ["loop.gate.pre", "run-2"],
      ["loop.generation.pre", "run-2"],
    ]);
    expect(story(plan.effects)).toEqual(["loop.started running", "loop.node.terminal completed", "loop.gate.post needs-approval"]);
    const payloads = [...plan.asks.map((ask) => ask.payload), ...loopPayloads(plan.effects)];
    expect(new Set(payloads.map((payload) => payload["loop_run_id"]))).toEqual(new Set(["run-2"]));
    expect(payloads.map((payload) => payload["generation"])).toEqual(payloads.map(() => 1));
    expect(loopPayloads(plan.effects)[0]).toMatchObject({ event: "loop.started", cause: "start", node_id: "design", origin_kind: "web", origin_ref: "d-9" });
    expect(payloads.find((payload) => payload["event"] === "loop.node.terminal")).toMatchObject({ task_id: "design#1" });
    expect(payloads.flatMap((payload) => aghViolations(payload))).toEqual([]);
  });

  it("changes requested at the ended node give it again in the new run's first generation", () => {
    const { state: ended } = outOfAttempts();
    const transition = applied(applyGateAnswer(GRAPH, ended, { decision: "changes-requested", actor: ALICE, at: at(10), next: { loopRunId: "run-2" } }));
    expect(transition.state).toMatchObject({ loopRunId: "run-2", generation: 1, node: "design", status: "running" });
    const plan = planLoopMove(input(loopGateMove(GRAPH, ended, transition, ALICE, "changes-requested")));
    expect(plan.effects.some((effect) => effect.kind === "loop" && effect.name === "loop.generation.post")).toBe(false);
  });

  it("a vetoed approval on the new run blocks that run, which began and ended on its own id", () => {
    const { state: ended } = outOfAttempts();
    const transition = applied(applyGateAnswer(GRAPH, ended, { decision: "approved", actor: ALICE, at: at(10), next: { loopRunId: "run-2" } }));
    const move = input(loopGateMove(GRAPH, ended, transition, ALICE, "approved"));
    const plan = planLoopMove(move);
    const ask = plan.asks.find((one) => one.name === "loop.gate.pre");
    if (ask === undefined) throw new Error("no loop.gate.pre asked");
    const denied = deniedMove({ ...move, plan, at: ask, denial: { hook: "freeze", reason: "the release is frozen" } });
    expect(denied.state).toMatchObject({ loopRunId: "run-2", status: "blocked", reasonCode: "hook_denied", node: "design" });
    expect(story(denied.effects)).toEqual(["loop.started running", "loop.gate.post blocked", "loop.terminal blocked"]);
    expect(new Set(loopPayloads(denied.effects).map((payload) => payload["loop_run_id"]))).toEqual(new Set(["run-2"]));
    expect(denied.effects.some((effect) => effect.kind === "event" && effect.name === "graph.started")).toBe(true);
  });

  it.each<[string, () => GraphState]>([
    ["a block that ended it", () => outOfAttempts().state],
    ["a failed end", () => applied(endRun(GRAPH, started(), { status: "failed", reasonCode: "item-closed", reason: "closed", actor: ALICE, at: at(3) })).state],
  ])("a force after %s begins a new run at its target, with no attempt of it to leave", (_what, ended) => {
    const before = ended();
    const forced = { to: "implement", reason: "done by hand" };
    const transition = applied(forceTo(GRAPH, before, { ...forced, actor: OPERATOR, at: at(20), start: { ref: REF, loopRunId: "run-3" } }));
    expect(transition.state).toMatchObject({ loopRunId: "run-3", node: "implement", generation: 1, status: "running" });
    const plan = planLoopMove(input(loopForceMove(GRAPH, before, transition, OPERATOR, forced)));
    const payloads = [...loopPayloads(plan.effects), ...plan.asks.map((ask) => ask.payload)];
    expect(payloads.map((payload) => payload["event"])).toEqual(["loop.started", "loop.generation.pre"]);
    expect(new Set(payloads.map((payload) => payload["loop_run_id"]))).toEqual(new Set(["run-3"]));
    expect(payloads[0]).toMatchObject({ origin_kind: "cli", actor_kind: "human", details: { the_loop: { actor_kind: "operator" } } });
  });

  it("a force without a new run's id is refused on an ended run, as before", () => {
    expect(refused(forceTo(GRAPH, outOfAttempts().state, { to: "design", reason: "r", actor: OPERATOR, at: at(20) })).reasonCode).toBe("blocked");
  });

  it("the item closed while its run was ended by a block sends no second loop.terminal", () => {
    const { state: blocked } = outOfAttempts();
    const canceled = applied(endRun(GRAPH, blocked, { status: "canceled", reasonCode: "item-closed", reason: "closed", actor: ALICE, at: at(30) })).state;
    expect(endedByBlockBefore(GRAPH, canceled)).toBe(true);
    const running = applied(applyClaimResult(GRAPH, started(), { node: "design", generation: 1, results: [PASS], actor: AGENT, at: at(5) })).state;
    const closedAtGate = applied(endRun(GRAPH, running, { status: "canceled", reasonCode: "item-closed", reason: "closed", actor: DAEMON, at: at(6) })).state;
    expect(endedByBlockBefore(GRAPH, closedAtGate)).toBe(false);
  });
});
