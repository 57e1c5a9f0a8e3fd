import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { EVENT_CATALOG } from "../../src/events/catalog.js";
import { applyClaimResult, applyGateAnswer, decideClaim, failRun, forceTo } from "../../src/graph-run/advance.js";
import type { Refusal, Transition } from "../../src/graph-run/advance.js";
import { parseGraphText } from "../../src/graph/load.js";
import { END_REASON_CODES, durationText, endRun, finalRefusal, lastProgressOf, outOfGenerations, stallReason } from "../../src/graph-run/outcomes.js";
import type { GraphState } from "../../src/graph-run/state.js";
import { FINAL_GRAPH_STATUSES, GRAPH_STATUSES, isFinalGraphStatus } from "../../src/graph/types.js";
import type { Graph, RunEndStatus } from "../../src/graph/types.js";
import { ALICE, DAEMON, GRAPH, OPERATOR, PASS, T0, applied, at, kinds, refused, started, stateAt } from "../graph/fixture.js";

/** The run ends the-loop decides without a terminal node: exhausted, stalled, canceled (and failed). */

const limited = (maxGenerations: number): Graph => ({ ...GRAPH, maxGenerations });

const claim = (graph: Graph, state: GraphState, node: string, minutes = 5): Refusal | Transition =>
  applyClaimResult(graph, state, { node, generation: state.generation, results: [PASS], actor: { kind: "agent", id: "s" }, at: at(minutes) });

const answer = (graph: Graph, state: GraphState, decision: "approved" | "changes-requested", minutes = 10): Refusal | Transition =>
  applyGateAnswer(graph, state, { decision, actor: ALICE, at: at(minutes), via: "keyword" });

/** At design-approval in `generation` (the gate that sends the work back on changes-requested). */
const atGate = (graph: Graph, generation: number): GraphState => ({ ...applied(claim(graph, started(), "design")).state, generation });

describe("endRun", () => {
  const ends: { status: RunEndStatus; event: string; reasonCode: string }[] = [
    { status: "failed", event: "graph.failed", reasonCode: "hook-denied" },
    { status: "exhausted", event: "graph.exhausted", reasonCode: END_REASON_CODES.exhausted },
    { status: "stalled", event: "graph.stalled", reasonCode: END_REASON_CODES.stalled },
    { status: "canceled", event: "graph.canceled", reasonCode: END_REASON_CODES.itemClosed },
  ];

  it.each(ends)("ends the run $status: the record, a history entry, $event, then run-ended with the status", ({ status, event, reasonCode }) => {
    // Without a phase: a canceled run's label removal has its own test below.
    const { state, effects, moved } = applied(endRun(GRAPH, stateAt({ phase: undefined }), { status, reasonCode, reason: "why", actor: OPERATOR, at: at(3) }));
    expect(moved).toBe(false);
    expect(state).toMatchObject({ status, reasonCode, reason: "why", node: "design", updatedAt: at(3).toISOString() });
    expect(state.history.at(-1)).toEqual({ at: at(3).toISOString(), kind: status, node: "design", actor: OPERATOR, reason: "why" });
    expect(kinds(effects)).toEqual([`event:${event}`, "run-ended"]);
    expect(effects.at(-1)).toEqual({ kind: "run-ended", status });
    const announced = effects[0];
    if (announced?.kind !== "event") throw new Error("no event");
    // Exactly the catalog's fields.
    expect(Object.keys(announced.fields).sort()).toEqual(Object.keys(EVENT_CATALOG[announced.name].fields).sort());
    expect(announced.fields).toMatchObject({
      work_item: state.ref,
      graph: "tiny",
      node: "design",
      reason_code: reasonCode,
      actor: "ops",
      actor_kind: "operator",
    });
  });

  it("is what failRun does, with status failed", () => {
    const halt = { reasonCode: "hook-denied", reason: "no", actor: DAEMON, at: at(1) };
    expect(failRun(GRAPH, started(), halt)).toEqual(endRun(GRAPH, started(), { ...halt, status: "failed" }));
  });

  it("puts prior effects of the same input first", () => {
    const before = [{ kind: "phase-label", remove: null, add: "loop:x" }] as const;
    const { effects } = applied(endRun(GRAPH, started(), { status: "failed", reasonCode: "stopped", reason: "r", actor: ALICE, at: T0 }, before));
    expect(kinds(effects)).toEqual(["phase-label", "event:graph.failed", "run-ended"]);
  });

  it("takes a canceled run's phase label off the item (and the phase off its record); every other end keeps it", () => {
    const phased = stateAt({ phase: "design" });
    const canceled = applied(endRun(GRAPH, phased, { status: "canceled", reasonCode: "stopped", reason: "r", actor: ALICE, at: T0 }));
    expect(canceled.effects[0]).toEqual({ kind: "phase-label", remove: "loop:design", add: null });
    expect(kinds(canceled.effects)).toEqual(["phase-label", "event:graph.canceled", "run-ended"]);
    expect(canceled.state.phase).toBeUndefined();
    for (const status of ["failed", "exhausted", "stalled"] as const) {
      const ended = applied(endRun(GRAPH, phased, { status, reasonCode: "x", reason: "r", actor: ALICE, at: T0 }));
      expect(kinds(ended.effects)).not.toContain("phase-label");
      expect(ended.state.phase).toBe("design");
    }
    const unphased = stateAt({ phase: undefined });
    const { effects } = applied(endRun(GRAPH, unphased, { status: "canceled", reasonCode: "stopped", reason: "r", actor: ALICE, at: T0 }));
    expect(kinds(effects)).toEqual(["event:graph.canceled", "run-ended"]);
  });

  it.each(FINAL_GRAPH_STATUSES)("refuses a %s run, by its status, and every other input on it too", (status) => {
    const final = stateAt({ status, reasonCode: "x", reason: "the reason" });
    const refusal = refused(endRun(GRAPH, final, { status: "canceled", reasonCode: "stopped", reason: "r", actor: ALICE, at: T0 }));
    expect(refusal.reasonCode).toBe(status);
    expect(refused(decideClaim(GRAPH, final, { actor: ALICE })).reasonCode).toBe(status);
    expect(refused(forceTo(GRAPH, final, { to: "implement", reason: "r", actor: OPERATOR, at: T0 })).reasonCode).toBe(status);
    if (status !== "done") expect(refusal.reason).toContain("the reason");
  });
});

describe("the statuses", () => {
  it.each(GRAPH_STATUSES.map((status) => ({ status, final: ["done", "failed", "exhausted", "stalled", "canceled"].includes(status) })))(
    "$status is final: $final",
    ({ status, final }) => {
      expect(isFinalGraphStatus(status)).toBe(final);
      expect(finalRefusal(stateAt({ status })) !== undefined).toBe(final);
    },
  );
});

describe("maxGenerations", () => {
  const cases: { max: number | undefined; generation: number; exhausted: boolean }[] = [
    { max: undefined, generation: 50, exhausted: false },
    { max: 1, generation: 1, exhausted: true },
    { max: 2, generation: 1, exhausted: false },
    { max: 2, generation: 2, exhausted: true },
    { max: 3, generation: 2, exhausted: false },
  ];

  it.each(cases)("max $max, changes requested in generation $generation: exhausted $exhausted", ({ max, generation, exhausted }) => {
    const graph = max === undefined ? GRAPH : limited(max);
    const state = atGate(graph, generation);
    expect(outOfGenerations(graph, state)).toBe(exhausted);
    const { state: next, effects } = applied(answer(graph, state, "changes-requested"));
    if (!exhausted) {
      expect(next).toMatchObject({ status: "running", node: "design", generation: generation + 1 });
      expect(kinds(effects)).toContain("deliver-assignment");
      return;
    }
    expect(next).toMatchObject({ status: "exhausted", node: "design-approval", generation, reasonCode: "max-generations" });
    expect(next.reason).toContain(`allows ${max}`);
    // The answer is recorded, the run ends, and no node is entered: no assignment, no label.
    expect(next.history.slice(-2).map((entry) => entry.kind)).toEqual(["gate-decided", "exhausted"]);
    expect(kinds(effects)).toEqual(["event:graph.gate_decided", "event:graph.exhausted", "run-ended"]);
    expect(effects.at(-1)).toEqual({ kind: "run-ended", status: "exhausted" });
  });

  it("never stops an approval, in the last generation allowed", () => {
    const { state } = applied(answer(limited(1), atGate(limited(1), 1), "approved"));
    expect(state).toMatchObject({ status: "running", node: "implement", generation: 1 });
  });

  it("counts a changes-requested answer at a blocked agent node too", () => {
    // A block whose code ends no run (an older record's): the answer is decided on that run.
    const blocked = stateAt({ status: "blocked", reasonCode: "hook-vetoed", reason: "r" });
    expect(applied(answer(limited(1), blocked, "changes-requested")).state.status).toBe("exhausted");
    expect(applied(answer(limited(2), blocked, "changes-requested")).state).toMatchObject({ status: "running", generation: 2 });
  });

  const file = (extra: Record<string, unknown>): string =>
    stringify({
      name: "g",
      start: "a",
      nodes: [
        { id: "a", description: "A." },
        { id: "b", terminal: true },
      ],
      edges: [{ from: "a", to: "b", on: "pass" }],
      ...extra,
    });

  it.each([
    { extra: {}, max: undefined, problem: false },
    { extra: { maxGenerations: 3 }, max: 3, problem: false },
    { extra: { maxGenerations: 0 }, max: undefined, problem: true },
    { extra: { maxGenerations: 1.5 }, max: undefined, problem: true },
  ])("a graph file with $extra: maxGenerations $max (refused: $problem)", ({ extra, max, problem }) => {
    const parsed = parseGraphText(file(extra), { source: "/g.yaml" });
    expect(parsed.problems.length > 0).toBe(problem);
    if (!problem) expect(parsed.graph?.maxGenerations).toBe(max);
  });
});

describe("stallReason", () => {
  const WINDOW = 10 * 60_000;
  const gate = atGate(GRAPH, 1);
  const cases: { what: string; state: GraphState; minutes: number; stalled: boolean }[] = [
    { what: "running at an agent node, idle past the window", state: started(), minutes: 11, stalled: true },
    { what: "running at an agent node, idle exactly the window", state: started(), minutes: 10, stalled: true },
    { what: "running at an agent node, within the window", state: started(), minutes: 9, stalled: false },
    { what: "waiting at a human gate", state: gate, minutes: 600, stalled: false },
    { what: "blocked", state: stateAt({ status: "blocked", reasonCode: "no-edge", reason: "r" }), minutes: 600, stalled: false },
    { what: "done", state: stateAt({ status: "done" }), minutes: 600, stalled: false },
    { what: "a node the graph does not have", state: stateAt({ node: "gone" }), minutes: 600, stalled: false },
    {
      what: "progress recorded after its last change",
      state: { ...started(), lastProgressAt: at(5).toISOString() },
      minutes: 11,
      stalled: false,
    },
  ];

  it.each(cases)("$what → stalled $stalled", ({ state, minutes, stalled }) => {
    const reason = stallReason(GRAPH, state, at(minutes), WINDOW);
    expect(reason !== undefined).toBe(stalled);
    if (stalled) expect(reason).toContain(`no progress at node "${state.node}"`);
  });

  it("reads the last progress from lastProgressAt where the record has it, else its last change", () => {
    expect(lastProgressOf(started())).toBe(T0.toISOString());
    expect(lastProgressOf({ ...started(), lastProgressAt: at(7).toISOString() })).toBe(at(7).toISOString());
  });

  it.each([
    { ms: 1_000, text: "1 second" },
    { ms: 45_000, text: "45 seconds" },
    { ms: 12 * 60_000, text: "12 minutes" },
    { ms: 210 * 60_000, text: "3.5 hours" },
  ])("says $ms ms as $text", ({ ms, text }) => {
    expect(durationText(ms)).toBe(text);
  });
});
