import { describe, expect, it } from "vitest";
import { EVENT_CATALOG } from "../../src/events/catalog.js";
import {
  GRAPH_HISTORY_LIMIT,
  applyClaimResult,
  applyGateAnswer,
  blockRun,
  decideClaim,
  failRun,
  forceTo,
  recordRefusal,
  startRun,
} from "../../src/graph-run/advance.js";
import type { GraphEffect, Refusal, Transition } from "../../src/graph-run/advance.js";
import type { GraphState } from "../../src/graph-run/state.js";
import type { Graph } from "../../src/graph/types.js";
import { AGENT, ALICE, DAEMON, GRAPH, MISSING, OPERATOR, PASS, REF, T0, applied, at, deepFreeze, kinds, refused, started, stateAt } from "../graph/fixture.js";

const claim = (state: GraphState, node: string, results = [PASS], minutes = 5): Refusal | Transition =>
  applyClaimResult(GRAPH, state, { node, generation: state.generation, results, actor: AGENT, at: at(minutes) });

const approve = (state: GraphState, minutes = 10): Refusal | Transition =>
  applyGateAnswer(GRAPH, state, { decision: "approved", actor: ALICE, at: at(minutes), via: "keyword" });

const requestChanges = (state: GraphState, minutes = 10): Refusal | Transition =>
  applyGateAnswer(GRAPH, state, { decision: "changes-requested", actor: ALICE, at: at(minutes), via: "review" });

/** The state after walking the happy path up to `node`. */
function walkedTo(node: "design-approval" | "implement" | "review" | "complete"): GraphState {
  let state = applied(claim(started(), "design")).state;
  if (node === "design-approval") return state;
  state = applied(approve(state)).state;
  if (node === "implement") return state;
  state = applied(claim(state, "implement", [PASS], 20)).state;
  if (node === "review") return state;
  return applied(approve(state, 30)).state;
}

const labelEffects = (effects: readonly GraphEffect[]) => effects.filter((effect) => effect.kind === "phase-label");

describe("startRun", () => {
  it("enters the start node: event, label, phase_changed before the announcement, then the assignment", () => {
    const { state, effects, moved } = applied(startRun(GRAPH, { ref: REF, loopRunId: "run-1", at: T0, actor: DAEMON }));
    expect(moved).toBe(true);
    expect(effects).toEqual([
      {
        kind: "event",
        name: "graph.started",
        fields: { work_item: REF, graph: "tiny", node: "design", generation: 1, loop_run_id: "run-1", actor: "the-loop", actor_kind: "daemon" },
      },
      { kind: "phase-label", remove: null, add: "loop:design" },
      { kind: "hook", point: "phase_changed", graph: "tiny", node: "design", fromPhase: "", toPhase: "design", terminal: false },
      { kind: "announce-phase", node: "design", phase: "design", terminal: false },
      { kind: "deliver-assignment", node: "design", generation: 1 },
    ]);
    expect(state).toEqual({
      version: 1,
      ref: REF,
      graph: "tiny",
      loopRunId: "run-1",
      node: "design",
      phase: "design",
      status: "running",
      generation: 1,
      attempts: {},
      outcomes: {},
      startedAt: T0.toISOString(),
      updatedAt: T0.toISOString(),
      history: [
        { at: T0.toISOString(), kind: "started", node: "design", actor: DAEMON },
        { at: T0.toISOString(), kind: "entered", node: "design", actor: DAEMON },
      ],
    });
  });

  it("replaces the label of an earlier run's phase, and only that one", () => {
    const previous = stateAt({ status: "done", node: "complete", phase: "complete" });
    const { effects } = applied(startRun(GRAPH, { ref: REF, loopRunId: "run-2", at: T0, actor: DAEMON, previous }));
    expect(labelEffects(effects)).toEqual([{ kind: "phase-label", remove: "loop:complete", add: "loop:design" }]);
  });
});

describe("decideClaim", () => {
  const rows: [string, GraphState | undefined, string | undefined, string, RegExp][] = [
    ["no run", undefined, "design", "not-running", /no graph run/],
    ["the wrong node", started(), "implement", "not-current", /at node "design", not "implement".*graph complete --node design/],
    ["a human gate", walkedTo("design-approval"), undefined, "not-agent-node", /"design-approval" is a human gate/],
    ["a human gate, named", walkedTo("design-approval"), "design-approval", "not-agent-node", /waits for an authorized person/],
    ["a done run", walkedTo("complete"), undefined, "done", /run is done/],
    ["a done run, naming its node", walkedTo("complete"), "complete", "done", /takes no more input/],
    [
      "a failed run",
      stateAt({ status: "failed", reasonCode: "item-closed", reason: "the ticket closed" }),
      "design",
      "failed",
      /failed at node "design" \(the ticket closed\)/,
    ],
    [
      "a blocked item",
      stateAt({ status: "blocked", reasonCode: "max-attempts", reason: "design.md is missing" }),
      "design",
      "blocked",
      /blocked at node "design": design.md is missing.*graph force/,
    ],
    ["a node the graph lost", stateAt({ node: "gone" }), undefined, "unknown-node", /no node "gone"/],
  ];
  it.each(rows)("refuses a claim on %s", (_what, state, node, reasonCode, reason) => {
    const decision = refused(decideClaim(GRAPH, state, { node, actor: AGENT }));
    expect(decision.reasonCode).toBe(reasonCode);
    expect(decision.reason).toMatch(reason);
  });

  it("hands back the current agent node's checks, with or without the node named", () => {
    const state = started();
    const expected = { kind: "check", node: "design", generation: 1, checks: GRAPH.nodes.get("design")?.checks };
    expect(decideClaim(GRAPH, state, { node: "design", actor: AGENT })).toEqual(expected);
    expect(decideClaim(GRAPH, state, { actor: AGENT })).toEqual(expected);
  });
});

describe("applyClaimResult", () => {
  it("follows the pass edge when every check passed, into a waiting human gate", () => {
    const { state, effects, moved } = applied(claim(started(), "design"));
    expect(moved).toBe(true);
    expect(kinds(effects)).toEqual([
      "event:graph.advanced",
      "phase-label",
      "hook:phase_changed",
      "announce-phase",
      "hook:waiting_for_input",
      "request-review",
      "event:graph.waiting",
    ]);
    expect(effects[0]).toMatchObject({ fields: { from: "design", node: "design-approval", outcome: "pass", actor: "session-1", actor_kind: "agent" } });
    expect(effects).toContainEqual({ kind: "hook", point: "waiting_for_input", asker: "gate", node: "design-approval" });
    expect(state).toMatchObject({ node: "design-approval", status: "waiting", reasonCode: "awaiting-review", outcomes: { design: "pass" } });
    expect(state.history.slice(-2).map((entry) => entry.kind)).toEqual(["claimed", "entered"]);
  });

  it("keeps the item on the node after a failed check, counting the attempt and naming the check's message", () => {
    const { state, effects, moved } = applied(claim(started(), "design", [MISSING]));
    expect(moved).toBe(false);
    expect(state).toMatchObject({ node: "design", status: "running", attempts: { design: 1 }, reasonCode: "check-failed", reason: MISSING.message });
    expect(effects).toEqual([
      {
        kind: "event",
        name: "graph.claim_refused",
        fields: {
          work_item: REF,
          graph: "tiny",
          node: "design",
          claimed: "design",
          reason_code: "check-failed",
          reason: MISSING.message,
          attempts: 1,
          actor: "session-1",
          actor_kind: "agent",
        },
      },
    ]);
    expect(state.history.at(-1)).toMatchObject({ kind: "check-failed", node: "design", outcome: "fail", reason: MISSING.message });
  });

  it("blocks the item when failed claims reach maxAttempts", () => {
    const once = applied(claim(started(), "design", [PASS, MISSING], 1)).state;
    const { state, effects } = applied(claim(once, "design", [MISSING], 2));
    expect(state).toMatchObject({ status: "blocked", attempts: { design: 2 }, reasonCode: "max-attempts" });
    expect(state.reason).toContain(MISSING.message);
    expect(state.reason).toContain("2 of 2");
    expect(kinds(effects)).toEqual(["event:graph.blocked"]);
    expect(effects[0]).toMatchObject({ fields: { reason_code: "max-attempts", attempts: 2 } });
    expect(refused(claim(state, "design")).reasonCode).toBe("blocked");
  });

  it("follows a fail edge when the node has one; a node without a phase keeps the label", () => {
    const implement = walkedTo("implement");
    const failing = { check: "command" as const, passed: false, message: "`npm test` exited 1" };
    const toFix = applied(claim(implement, "implement", [failing]));
    expect(toFix.state).toMatchObject({ node: "fix", status: "running", phase: "implementation", attempts: { implement: 1 } });
    expect(toFix.state.reasonCode).toBeUndefined();
    expect(kinds(toFix.effects)).toEqual(["event:graph.advanced", "deliver-assignment"]);

    const back = applied(claim(toFix.state, "fix"));
    expect(back.state.node).toBe("implement");
    expect(labelEffects(back.effects)).toEqual([]); // the same phase again: no label change, no phase_changed

    // Attempts count across trips through the fail edge: the third failed claim blocks.
    const second = applied(claim(applied(claim(back.state, "implement", [failing])).state, "fix")).state;
    const third = applied(claim(second, "implement", [failing]));
    expect(third.state).toMatchObject({ node: "implement", status: "blocked", attempts: { implement: 3 }, reasonCode: "max-attempts" });
  });

  it("moves the item once when two claims race: the second finds it gone", () => {
    const state = started();
    const first = decideClaim(GRAPH, state, { node: "design", actor: AGENT });
    const second = decideClaim(GRAPH, state, { actor: AGENT });
    expect(first.kind).toBe("check");
    expect(second.kind).toBe("check");
    const moved = applied(claim(state, "design")).state;
    const late = refused(applyClaimResult(GRAPH, moved, { node: "design", generation: 1, results: [PASS], actor: AGENT, at: at(6) }));
    expect(late.reasonCode).toBe("not-current");
  });

  it("refuses results from an earlier generation of the same node", () => {
    const state = stateAt({ generation: 2 });
    const stale = refused(applyClaimResult(GRAPH, state, { node: "design", generation: 1, results: [PASS], actor: AGENT, at: at(1) }));
    expect(stale.reasonCode).toBe("not-current");
    expect(stale.reason).toMatch(/came back/);
  });

  it("treats a node without checks as passed", () => {
    const graph: Graph = { ...GRAPH, nodes: new Map([...GRAPH.nodes].map(([id, n]) => [id, id === "design" ? { ...n, checks: [] } : n])) };
    const state = started();
    const decided = decideClaim(graph, state, { actor: AGENT });
    expect(decided).toMatchObject({ kind: "check", checks: [] });
    const result = applied(applyClaimResult(graph, state, { node: "design", generation: 1, results: [], actor: AGENT, at: at(1) }));
    expect(result.state.node).toBe("design-approval");
  });
});

describe("applyGateAnswer", () => {
  it("moves an approved gate along its edge and replaces the one phase label", () => {
    const { state, effects } = applied(approve(walkedTo("design-approval")));
    expect(kinds(effects)).toEqual([
      "event:graph.gate_decided",
      "event:graph.advanced",
      "phase-label",
      "hook:phase_changed",
      "announce-phase",
      "deliver-assignment",
    ]);
    expect(effects[0]).toMatchObject({
      fields: { node: "design-approval", decision: "approved", generation: 1, actor: "alice", actor_kind: "human", via: "keyword" },
    });
    expect(labelEffects(effects)).toEqual([{ kind: "phase-label", remove: "loop:design-review", add: "loop:implementation" }]);
    expect(state).toMatchObject({ node: "implement", status: "running", generation: 1, outcomes: { design: "pass", "design-approval": "approved" } });
    expect(state.reasonCode).toBeUndefined();
    expect(state.history.slice(-2).map((entry) => entry.kind)).toEqual(["gate-decided", "entered"]);
  });

  it("sends changes-requested back along its edge, starting the next generation with no attempts counted", () => {
    const waiting = stateAt({ attempts: { design: 1 } }, walkedTo("design-approval"));
    const { state, effects } = applied(requestChanges(waiting));
    expect(state).toMatchObject({ node: "design", status: "running", generation: 2, attempts: {}, outcomes: { "design-approval": "changes-requested" } });
    expect(labelEffects(effects)).toEqual([{ kind: "phase-label", remove: "loop:design-review", add: "loop:design" }]);
    expect(effects.at(-1)).toEqual({ kind: "deliver-assignment", node: "design", generation: 2 });
    expect(effects[0]).toMatchObject({ fields: { decision: "changes-requested", generation: 1, via: "review" } });
  });

  it("reaches the terminal node: done, phase_changed with the terminal flag, the run ends", () => {
    const { state, effects } = applied(approve(walkedTo("review"), 30));
    expect(state).toMatchObject({ node: "complete", status: "done", phase: "complete" });
    expect(kinds(effects)).toEqual([
      "event:graph.gate_decided",
      "event:graph.advanced",
      "phase-label",
      "hook:phase_changed",
      "announce-phase",
      "event:graph.completed",
      "run-ended",
    ]);
    expect(effects).toContainEqual({
      kind: "hook",
      point: "phase_changed",
      graph: "tiny",
      node: "complete",
      fromPhase: "implementation",
      toPhase: "complete",
      terminal: true,
    });
    expect(effects.at(-1)).toEqual({ kind: "run-ended", status: "done" });
    expect(state.history.slice(-2).map((entry) => entry.kind)).toEqual(["entered", "completed"]);
  });

  it("fires phase_changed at a terminal node that has no phase of its own, the label left as it is", () => {
    const graph: Graph = {
      ...GRAPH,
      nodes: new Map(
        [...GRAPH.nodes].map(([id, n]) => [
          id,
          id === "complete" ? { id: n.id, actor: n.actor, description: "", produces: [], checks: [], maxAttempts: 3, terminal: true, points: [] } : n,
        ]),
      ),
    };
    const { effects } = applied(applyGateAnswer(graph, walkedTo("review"), { decision: "approved", actor: ALICE, at: at(40) }));
    expect(labelEffects(effects)).toEqual([]);
    expect(effects).toContainEqual({
      kind: "hook",
      point: "phase_changed",
      graph: "tiny",
      node: "complete",
      fromPhase: "implementation",
      toPhase: "implementation",
      terminal: true,
    });
  });

  it("enters a human gate without a phase with no label change and no phase_changed", () => {
    const { effects } = applied(claim(walkedTo("implement"), "implement"));
    expect(kinds(effects)).toEqual(["event:graph.advanced", "hook:waiting_for_input", "request-review", "event:graph.waiting"]);
  });

  describe("on a blocked item", () => {
    // A block whose code ends no run — an older record's: every block the-loop writes now ends it (new-run.test.ts).
    const blocked = (): GraphState => stateAt({ status: "blocked", attempts: { design: 2 }, reasonCode: "hook-vetoed", reason: "design.md is missing" });

    it("approved accepts the agent node's work and follows its pass edge", () => {
      const { state, effects } = applied(approve(blocked()));
      expect(state).toMatchObject({ node: "design-approval", status: "waiting" });
      expect(effects[1]).toMatchObject({ name: "graph.advanced", fields: { from: "design", outcome: "approved" } });
    });

    it("changes-requested gives the agent the node again, in the next generation", () => {
      const { state, effects, moved } = applied(requestChanges(blocked()));
      expect(moved).toBe(true);
      expect(state).toMatchObject({ node: "design", status: "running", generation: 2, attempts: {} });
      expect(state.reasonCode).toBeUndefined();
      expect(kinds(effects)).toEqual(["event:graph.gate_decided", "deliver-assignment"]);
    });

    it("a blocked human gate takes its answer as usual", () => {
      const gate = stateAt({ status: "blocked", reasonCode: "hook-vetoed", reason: "policy says no" }, walkedTo("design-approval"));
      expect(applied(approve(gate)).state.node).toBe("implement");
    });
  });

  it.each<[string, () => GraphState, string]>([
    ["an agent node at work", () => started(), "not-waiting"],
    ["a done run", () => walkedTo("complete"), "done"],
    ["a failed run", () => stateAt({ status: "failed", reasonCode: "item-closed", reason: "closed" }), "failed"],
  ])("refuses an answer on %s", (_what, state, reasonCode) => {
    expect(refused(approve(state())).reasonCode).toBe(reasonCode);
  });

  it("refuses an answer the node has no edge for", () => {
    const graph: Graph = { ...GRAPH, edges: GRAPH.edges.filter((edge) => !(edge.from === "design-approval" && edge.on === "changes-requested")) };
    const answer = refused(applyGateAnswer(graph, walkedTo("design-approval"), { decision: "changes-requested", actor: ALICE, at: at(9) }));
    expect(answer.reasonCode).toBe("no-edge");
  });
});

describe("forceTo", () => {
  it("puts the item on a node with an audited event, a comment and a history entry", () => {
    const { state, effects } = applied(forceTo(GRAPH, walkedTo("implement"), { to: "design", reason: "redo the design", actor: OPERATOR, at: at(50) }));
    expect(kinds(effects)).toEqual(["event:graph.forced", "announce-force", "phase-label", "hook:phase_changed", "announce-phase", "deliver-assignment"]);
    expect(effects[0]).toMatchObject({ fields: { from: "implement", node: "design", reason: "redo the design", actor: "ops", actor_kind: "operator" } });
    expect(effects[1]).toEqual({ kind: "announce-force", from: "implement", to: "design", reason: "redo the design", actor: OPERATOR });
    expect(state.history.at(-2)).toEqual({
      at: at(50).toISOString(),
      kind: "forced",
      node: "design",
      from: "implement",
      actor: OPERATOR,
      reason: "redo the design",
    });
    expect(state).toMatchObject({ node: "design", status: "running" });
  });

  it("resumes a blocked node forced onto itself, with its attempts forgotten", () => {
    const blocked = stateAt({ status: "blocked", attempts: { design: 2, implement: 1 }, reasonCode: "hook-vetoed", reason: "missing" });
    const { state, effects } = applied(forceTo(GRAPH, blocked, { to: "design", reason: "fixed by hand", actor: OPERATOR, at: at(3) }));
    expect(state).toMatchObject({ node: "design", status: "running", attempts: { implement: 1 } });
    expect(state.attempts.design).toBeUndefined();
    expect(kinds(effects)).toEqual(["event:graph.forced", "announce-force", "deliver-assignment"]);
  });

  it("begins a run at the node for an item with none, when told which", () => {
    const { state, effects } = applied(
      forceTo(GRAPH, undefined, { to: "implement", reason: "record was damaged", actor: OPERATOR, at: T0, start: { ref: REF, loopRunId: "run-9" } }),
    );
    expect(state).toMatchObject({ ref: REF, loopRunId: "run-9", node: "implement", phase: "implementation", generation: 1 });
    expect(state.history.map((entry) => entry.kind)).toEqual(["forced", "entered"]);
    expect(effects[0]).toMatchObject({ name: "graph.forced" });
    expect((effects[0] as { fields: object }).fields).not.toHaveProperty("from");
  });

  it.each<[string, GraphState | undefined, { to: string; reason: string }, string]>([
    ["without a reason", started(), { to: "design", reason: "  " }, "no-reason"],
    ["to a node the graph does not have", started(), { to: "deploy", reason: "x" }, "unknown-node"],
    ["an item with no run, no start given", undefined, { to: "design", reason: "x" }, "not-running"],
    ["a done run", walkedTo("complete"), { to: "design", reason: "again" }, "done"],
    ["a failed run", stateAt({ status: "failed", reasonCode: "x", reason: "y" }), { to: "design", reason: "again" }, "failed"],
  ])("refuses %s", (_what, state, input, reasonCode) => {
    expect(refused(forceTo(GRAPH, state, { ...input, actor: OPERATOR, at: T0 })).reasonCode).toBe(reasonCode);
  });
});

describe("blockRun and failRun", () => {
  it("blocks the item at its node (a hook's veto)", () => {
    const { state, effects } = applied(blockRun(GRAPH, started(), { reasonCode: "hook-vetoed", reason: "policy hook said no", actor: DAEMON, at: at(1) }));
    expect(state).toMatchObject({ status: "blocked", node: "design", reasonCode: "hook-vetoed", reason: "policy hook said no" });
    expect(kinds(effects)).toEqual(["event:graph.blocked"]);
  });

  it("fails the run, which is then final", () => {
    const { state, effects } = applied(failRun(GRAPH, started(), { reasonCode: "item-closed", reason: "the ticket was closed", actor: DAEMON, at: at(1) }));
    expect(state).toMatchObject({ status: "failed", reasonCode: "item-closed" });
    expect(kinds(effects)).toEqual(["event:graph.failed", "run-ended"]);
    expect(effects.at(-1)).toEqual({ kind: "run-ended", status: "failed" });
    expect(refused(decideClaim(GRAPH, state, { actor: AGENT })).reasonCode).toBe("failed");
    expect(refused(failRun(GRAPH, state, { reasonCode: "x", reason: "y", actor: DAEMON, at: at(2) })).reasonCode).toBe("failed");
    expect(refused(blockRun(GRAPH, state, { reasonCode: "x", reason: "y", actor: DAEMON, at: at(2) })).reasonCode).toBe("failed");
  });

  it("refuses every input on a done run", () => {
    const done = walkedTo("complete");
    const halt = { reasonCode: "x", reason: "y", actor: DAEMON, at: at(99) };
    expect(refused(decideClaim(GRAPH, done, { actor: AGENT })).reasonCode).toBe("done");
    expect(refused(claim(done, "complete")).reasonCode).toBe("done");
    expect(refused(approve(done)).reasonCode).toBe("done");
    expect(refused(forceTo(GRAPH, done, { to: "design", reason: "again", actor: OPERATOR, at: at(99) })).reasonCode).toBe("done");
    expect(refused(blockRun(GRAPH, done, halt)).reasonCode).toBe("done");
    expect(refused(failRun(GRAPH, done, halt)).reasonCode).toBe("done");
  });
});

describe("recordRefusal", () => {
  it("logs the refusal and records it in the history once, however often it is repeated", () => {
    const state = started();
    const input = {
      kind: "claim-refused" as const,
      ref: REF,
      reasonCode: "not-current",
      reason: 'the item is at node "design"',
      claimed: "implement",
      actor: AGENT,
      at: at(1),
    };
    const once = recordRefusal(GRAPH, state, input);
    expect(once.effects).toEqual([
      {
        kind: "event",
        name: "graph.claim_refused",
        fields: {
          work_item: REF,
          graph: "tiny",
          node: "design",
          claimed: "implement",
          reason_code: "not-current",
          reason: input.reason,
          actor: "session-1",
          actor_kind: "agent",
        },
      },
    ]);
    const twice = recordRefusal(GRAPH, once.state, { ...input, at: at(2) });
    expect(twice.state?.history.length).toBe(state.history.length + 1);
    expect(twice.state?.history.at(-1)).toMatchObject({ kind: "claim-refused", node: "implement", at: at(2).toISOString() });
    const other = recordRefusal(GRAPH, twice.state, { ...input, actor: { kind: "agent", id: "session-2" } });
    expect(other.state?.history.length).toBe(state.history.length + 2);
  });

  it("logs the refusal of an item with no run, with no node and no record", () => {
    const result = recordRefusal(GRAPH, undefined, { kind: "gate-ambiguous", ref: REF, reasonCode: "ambiguous", reason: "both", actor: ALICE, at: T0 });
    expect(result.state).toBeUndefined();
    expect(result.effects).toEqual([
      { kind: "event", name: "graph.gate_ambiguous", fields: { work_item: REF, graph: "tiny", reason: "both", actor: "alice", actor_kind: "human" } },
    ]);
  });
});

describe("every transition", () => {
  it("keeps the newest history entries only", () => {
    const entry = { at: T0.toISOString(), kind: "entered" as const, node: "design", actor: DAEMON };
    const full = stateAt({ history: Array.from({ length: GRAPH_HISTORY_LIMIT }, () => entry) });
    const { state } = applied(claim(full, "design", [MISSING]));
    expect(GRAPH_HISTORY_LIMIT).toBe(200);
    expect(state.history).toHaveLength(GRAPH_HISTORY_LIMIT);
    expect(state.history.at(-1)).toMatchObject({ kind: "check-failed" });
    const moved = applied(claim(full, "design"));
    expect(moved.state.history).toHaveLength(GRAPH_HISTORY_LIMIT);
  });

  it("forgets a reason and an undelivered assignment of the node it leaves", () => {
    const state = stateAt({ reasonCode: "check-failed", reason: "design.md is missing", undelivered: { node: "design", generation: 1 } });
    const moved = applied(claim(state, "design")).state;
    expect(moved.undelivered).toBeUndefined();
    const stayed = applied(claim(state, "design", [MISSING])).state;
    expect(stayed.undelivered).toEqual({ node: "design", generation: 1 });
  });

  it("leaves its input untouched", () => {
    const state = deepFreeze(started());
    const snapshot = structuredClone(state);
    applied(claim(state, "design", [MISSING]));
    applied(claim(state, "design"));
    applied(forceTo(GRAPH, state, { to: "implement", reason: "skip", actor: OPERATOR, at: at(1) }));
    applied(blockRun(GRAPH, state, { reasonCode: "hook-vetoed", reason: "no", actor: DAEMON, at: at(1) }));
    const waiting = deepFreeze(walkedTo("design-approval"));
    applied(requestChanges(waiting));
    expect(state).toEqual(snapshot);
  });

  it("logs only catalogued events, with every required field", () => {
    const effects = [
      ...applied(startRun(GRAPH, { ref: REF, loopRunId: "r", at: T0, actor: DAEMON })).effects,
      ...applied(claim(started(), "design", [MISSING])).effects,
      ...applied(approve(walkedTo("review"))).effects,
      ...applied(forceTo(GRAPH, started(), { to: "review", reason: "r", actor: OPERATOR, at: T0 })).effects,
      ...applied(blockRun(GRAPH, started(), { reasonCode: "hook-vetoed", reason: "no", actor: DAEMON, at: T0 })).effects,
      ...applied(failRun(GRAPH, started(), { reasonCode: "item-closed", reason: "closed", actor: DAEMON, at: T0 })).effects,
    ];
    const events = effects.flatMap((effect) => (effect.kind === "event" ? [effect] : []));
    expect(new Set(events.map((effect) => effect.name)).size).toBeGreaterThanOrEqual(8);
    for (const effect of events) {
      const spec: Readonly<Record<string, string>> = EVENT_CATALOG[effect.name].fields;
      const required = Object.entries(spec)
        .filter(([, kind]) => !kind.endsWith("?"))
        .map(([field]) => field);
      expect(
        Object.keys(effect.fields).filter((field) => !(field in spec)),
        effect.name,
      ).toEqual([]);
      for (const field of required) expect(effect.fields, `${effect.name}.${field}`).toHaveProperty(field);
    }
  });
});
