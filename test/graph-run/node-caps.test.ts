import { describe, expect, it } from "vitest";
import { EVENT_CATALOG } from "../../src/events/catalog.js";
import { applyClaimResult, applyGateAnswer, decideClaim, endRun, forceTo, gateRefusal, releaseHeld } from "../../src/graph-run/advance.js";
import type { Refusal, Transition } from "../../src/graph-run/advance.js";
import { heldAhead, heldRuns, heldText, nodeKeys, occupancy, releaseOrder, roomFor, runsAt, unmatchedNodeCaps } from "../../src/graph-run/node-caps.js";
import type { NodeCaps, NodeRoom, RunAt } from "../../src/graph-run/node-caps.js";
import type { GraphState } from "../../src/graph-run/state.js";
import { AGENT, ALICE, DAEMON, GRAPH, OPERATOR, PASS, applied, at, deepFreeze, kinds, refused, started, stateAt } from "../graph/fixture.js";

const run = (ref: string, ...keys: string[]): RunAt => ({ ref, keys });

describe("nodeKeys", () => {
  it.each([
    [{ id: "design", phase: "design" }, ["design"]],
    [{ id: "implement", phase: "implementation" }, ["implement", "implementation"]],
    [{ id: "review" }, ["review"]],
  ])("%j answers to %j", (node, keys) => {
    expect(nodeKeys(node)).toEqual(keys);
  });
});

describe("unmatchedNodeCaps", () => {
  it("names the keys no node of any graph answers to, by id or phase", () => {
    expect(unmatchedNodeCaps({ review: 1, implementation: 2, "design-review": 1, reviews: 1, complete: 1 }, [GRAPH])).toEqual(["reviews"]);
    expect(unmatchedNodeCaps({ review: 1 }, [])).toEqual(["review"]);
  });
});

describe("runsAt", () => {
  it("places each run short of a final status at its node's id and phase; an unknown graph's run at its node's id", () => {
    const base = started();
    const states: GraphState[] = [
      stateAt({ ref: "local:demo#1", node: "implement" }, base),
      stateAt({ ref: "local:demo#2", node: "review", status: "waiting" }, base),
      stateAt({ ref: "local:demo#3", node: "implement", status: "blocked" }, base),
      stateAt({ ref: "local:demo#4", node: "complete", status: "done" }, base),
      stateAt({ ref: "local:demo#5", node: "implement", status: "canceled" }, base),
      stateAt({ ref: "local:demo#6", graph: "gone", node: "implement" }, base),
    ];
    expect(runsAt(new Map([[GRAPH.name, GRAPH]]), states)).toEqual([
      run("local:demo#1", "implement", "implementation"),
      run("local:demo#2", "review"),
      run("local:demo#3", "implement", "implementation"),
      run("local:demo#6", "implement"),
    ]);
  });
});

describe("occupancy and roomFor", () => {
  const runs = [run("a", "implement", "implementation"), run("b", "implement", "implementation"), run("c", "review")];

  it("counts the runs at each capped key; a key no run is at is 0", () => {
    expect(Object.fromEntries(occupancy({ implement: 3, implementation: 1, review: 1, fix: 2 }, runs))).toEqual({
      implement: 2,
      implementation: 2,
      review: 1,
      fix: 0,
    });
  });

  it.each<[string, NodeCaps, string, { id: string; phase?: string }, ReturnType<NodeRoom["full"]>]>([
    ["no caps: room everywhere", {}, "z", { id: "review" }, undefined],
    ["a cap not reached", { review: 2 }, "z", { id: "review" }, undefined],
    ["a cap reached by others", { review: 1 }, "z", { id: "review" }, { key: "review", limit: 1, count: 1 }],
    ["the run itself is not counted", { review: 1 }, "c", { id: "review" }, undefined],
    ["a phase cap", { implementation: 2 }, "z", { id: "implement", phase: "implementation" }, { key: "implementation", limit: 2, count: 2 }],
    [
      "the id's cap before the phase's",
      { implement: 1, implementation: 1 },
      "z",
      { id: "implement", phase: "implementation" },
      { key: "implement", limit: 1, count: 2 },
    ],
    ["a lowered cap: more runs at it than it allows", { implement: 1 }, "z", { id: "implement" }, { key: "implement", limit: 1, count: 2 }],
    ["a cap on another node", { fix: 1 }, "z", { id: "review" }, undefined],
  ])("%s", (_name, caps, ref, target, full) => {
    expect(roomFor(caps, runs, ref).full(target)).toEqual(full);
  });
});

describe("releaseOrder and heldAhead", () => {
  it("offers a freed place oldest first, ties by ref", () => {
    const held = [
      { ref: "b", since: "2025-03-01T10:02:00.000Z" },
      { ref: "c", since: "2025-03-01T10:01:00.000Z" },
      { ref: "a", since: "2025-03-01T10:02:00.000Z" },
    ];
    expect(releaseOrder(held).map((entry) => entry.ref)).toEqual(["c", "a", "b"]);
  });

  it("counts the runs held under the same cap before this one", () => {
    const heldAt = (ref: string, minute: number, cap = "review"): GraphState =>
      stateAt({
        ref,
        node: "implement",
        status: "waiting",
        reasonCode: "node-full",
        reason: "full",
        heldEdge: { to: "review", outcome: "pass", since: at(minute).toISOString(), cap },
      });
    const states = [heldAt("local:demo#1", 3), heldAt("local:demo#2", 1), heldAt("local:demo#3", 2, "other"), stateAt({ ref: "local:demo#4" })];
    expect(heldRuns(states).map((state) => state.ref)).toEqual(["local:demo#1", "local:demo#2", "local:demo#3"]);
    expect(heldAhead(states[0]!, states)).toBe(1);
    expect(heldAhead(states[1]!, states)).toBe(0);
    expect(heldAhead(states[2]!, states)).toBe(0);
    expect(heldAhead(states[3]!, states)).toBe(0);
  });

  it("says the edge, the cap and how many are ahead", () => {
    expect(heldText({ node: "implement" }, { to: "review", cap: "review" }, 1, 2)).toBe(
      "waiting at edge implement → review: node review full, cap routing.limits.perNode.review = 1, 2 ahead",
    );
    expect(heldText({ node: "implement" }, { to: "review", cap: "review" }, undefined)).toContain("no longer set");
  });
});

// ---- the advance ----------------------------------------------------------------------------------

const FULL_REVIEW: NodeRoom = { full: (target) => (target.id === "review" ? { key: "review", limit: 1, count: 1 } : undefined) };
const FULL_APPROVAL: NodeRoom = { full: (target) => (target.id === "design-approval" ? { key: "design-approval", limit: 2, count: 2 } : undefined) };
const ROOMY: NodeRoom = { full: () => undefined };

const atImplement = (): GraphState => stateAt({ node: "implement", phase: "implementation" });
const claimWith = (state: GraphState, node: string, room: NodeRoom, minutes = 5): Refusal | Transition =>
  applyClaimResult(GRAPH, state, { node, generation: state.generation, results: [PASS], actor: AGENT, at: at(minutes), room });

describe("a claim whose pass edge leads to a full node", () => {
  it("stays at the node, waiting with node-full and the edge it waits at; graph.edge_held says the cap", () => {
    const before = deepFreeze(atImplement());
    const { moved, state, effects } = applied(claimWith(before, "implement", FULL_REVIEW));
    expect(moved).toBe(false);
    expect(state).toMatchObject({
      node: "implement",
      status: "waiting",
      reasonCode: "node-full",
      reason: "waiting at edge implement → review: node review full, cap routing.limits.perNode.review = 1",
      heldEdge: { to: "review", outcome: "pass", since: at(5).toISOString(), cap: "review" },
      outcomes: { implement: "pass" },
    });
    expect(state.history.slice(-2).map((entry) => entry.kind)).toEqual(["claimed", "held"]);
    expect(kinds(effects)).toEqual(["event:graph.edge_held"]);
    const fields = (effects[0] as { fields: Record<string, unknown> }).fields;
    expect(fields).toEqual({
      work_item: before.ref,
      graph: "tiny",
      from: "implement",
      node: "review",
      outcome: "pass",
      cap: "review",
      limit: 1,
      count: 1,
      actor: AGENT.id,
      actor_kind: "agent",
    });
    expect(Object.keys(fields).sort()).toEqual(Object.keys(EVENT_CATALOG["graph.edge_held"].fields).sort());
  });

  it("moves as before when the node has room, or no room is given", () => {
    expect(applied(claimWith(atImplement(), "implement", ROOMY)).state.node).toBe("review");
    const unroomed = applyClaimResult(GRAPH, atImplement(), { node: "implement", generation: 1, results: [PASS], actor: AGENT, at: at(5) });
    expect(applied(unroomed).state.node).toBe("review");
  });

  it("a held run refuses another claim and a gate answer with node-full, saying what it waits for", () => {
    const held = applied(claimWith(atImplement(), "implement", FULL_REVIEW)).state;
    const claim = refused(decideClaim(GRAPH, held, { actor: AGENT }));
    expect(claim.reasonCode).toBe("node-full");
    expect(claim.reason).toContain("waiting at edge implement → review: node review full, cap routing.limits.perNode.review = 1");
    expect(claim.reason).toContain("graph force");
    expect(refused(applyGateAnswer(GRAPH, held, { decision: "approved", actor: ALICE, at: at(6) })).reasonCode).toBe("node-full");
    expect(gateRefusal(GRAPH, held)?.reasonCode).toBe("node-full");
  });

  it("a force moves past the cap and forgets the edge", () => {
    const held = applied(claimWith(atImplement(), "implement", FULL_REVIEW)).state;
    const forced = applied(forceTo(GRAPH, held, { to: "review", reason: "urgent", actor: OPERATOR, at: at(7) })).state;
    expect(forced).toMatchObject({ node: "review", status: "waiting", reasonCode: "awaiting-review" });
    expect(forced.heldEdge).toBeUndefined();
  });

  it("an end of the run forgets the edge", () => {
    const held = applied(claimWith(atImplement(), "implement", FULL_REVIEW)).state;
    const ended = applied(endRun(GRAPH, held, { status: "canceled", reasonCode: "stopped", reason: "stopped", actor: ALICE, at: at(8) })).state;
    expect(ended.heldEdge).toBeUndefined();
    expect(heldRuns([ended])).toEqual([]);
  });
});

describe("a gate answer whose edge leads to a full node", () => {
  it("an approval at a human gate waits at its edge", () => {
    const gate = stateAt({ node: "design-approval", status: "waiting", reasonCode: "awaiting-review", reason: "waiting", phase: "design-review" });
    const room: NodeRoom = { full: (target) => (target.id === "implement" ? { key: "implementation", limit: 1, count: 1 } : undefined) };
    const { state, effects } = applied(applyGateAnswer(GRAPH, gate, { decision: "approved", actor: ALICE, at: at(9), room }));
    expect(state).toMatchObject({
      node: "design-approval",
      status: "waiting",
      reasonCode: "node-full",
      heldEdge: { to: "implement", outcome: "approved", cap: "implementation" },
    });
    expect(kinds(effects)).toEqual(["event:graph.gate_decided", "event:graph.edge_held"]);
  });

  it("changes requested start the next generation and wait at the edge back", () => {
    const gate = stateAt({ node: "design-approval", status: "waiting", reasonCode: "awaiting-review", reason: "waiting" });
    const room: NodeRoom = { full: (target) => (target.id === "design" ? { key: "design", limit: 1, count: 1 } : undefined) };
    const { state } = applied(applyGateAnswer(GRAPH, gate, { decision: "changes-requested", actor: ALICE, at: at(9), room }));
    expect(state).toMatchObject({ node: "design-approval", generation: 2, status: "waiting", heldEdge: { to: "design", outcome: "changes-requested" } });
  });

  it("an agent node's pass into a full gate holds the claim too", () => {
    const { state } = applied(claimWith(started(), "design", FULL_APPROVAL));
    expect(state).toMatchObject({ node: "design", status: "waiting", heldEdge: { to: "design-approval", outcome: "pass" } });
  });
});

describe("releaseHeld", () => {
  const held = (): GraphState => applied(claimWith(atImplement(), "implement", FULL_REVIEW)).state;

  it("takes the edge once the node has room: released, advanced, then the node entered as any move enters it", () => {
    const before = deepFreeze(held());
    const released = releaseHeld(GRAPH, before, { actor: DAEMON, at: at(12), room: ROOMY });
    const { moved, state, effects } = applied(released!);
    expect(moved).toBe(true);
    expect(state).toMatchObject({ node: "review", status: "waiting", reasonCode: "awaiting-review" });
    expect(state.heldEdge).toBeUndefined();
    expect(kinds(effects).slice(0, 2)).toEqual(["event:graph.edge_released", "event:graph.advanced"]);
    expect(kinds(effects)).toContain("request-review");
    const fields = (effects[0] as { fields: Record<string, unknown> }).fields;
    expect(fields).toMatchObject({ from: "implement", node: "review", outcome: "pass", since: at(5).toISOString(), actor_kind: "daemon" });
    expect(Object.keys(fields).sort()).toEqual(Object.keys(EVENT_CATALOG["graph.edge_released"].fields).sort());
    expect(state.history.at(-1)).toMatchObject({ kind: "entered", node: "review", from: "implement" });
  });

  it.each<[string, () => GraphState, NodeRoom]>([
    ["the node is still full", held, FULL_REVIEW],
    ["the run waits at no edge", atImplement, ROOMY],
    ["the run ended", () => ({ ...held(), status: "canceled" as const }), ROOMY],
  ])("moves nothing when %s", (_name, state, room) => {
    expect(releaseHeld(GRAPH, state(), { actor: DAEMON, at: at(12), room })).toBeUndefined();
  });
});
