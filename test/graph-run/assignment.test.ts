import { describe, expect, it } from "vitest";
import { applyClaimResult, applyGateAnswer } from "../../src/graph-run/advance.js";
import { assignmentText, claimCommand, graphContext } from "../../src/graph-run/assignment.js";
import type { GraphNode } from "../../src/graph/types.js";
import { AGENT, ALICE, GRAPH, MISSING, PASS, REF, applied, at, started, stateAt } from "../graph/fixture.js";

const nodeOf = (id: string): GraphNode => {
  const node = GRAPH.nodes.get(id);
  if (node === undefined) throw new Error(`no node ${id}`);
  return node;
};

describe("assignmentText", () => {
  it("says which node, what to produce and how to claim", () => {
    const text = assignmentText(GRAPH, nodeOf("design"), started());
    expect(text).toBe(
      [
        `the-loop assignment for ${REF}: you are now at node "design" (phase design, label loop:design) of the tiny graph.`,
        "",
        "Write the design.",
        "",
        "Produce (paths relative to your working directory):",
        "- design.md or docs/design.md",
        "",
        "When the node's work is done, claim it: the-loop graph complete --node design",
        "The-loop runs the node's checks and answers whether the item moved; when it did not, the answer says what is missing.",
      ].join("\n"),
    );
  });

  it("lists the declared checks, and says when changes were requested", () => {
    const state = stateAt({ node: "implement", phase: "implementation", generation: 2 });
    const text = assignmentText(GRAPH, nodeOf("implement"), state);
    expect(text).toContain("generation 2 (changes were requested: read the latest review on the ticket first)");
    expect(text).toContain('- every "- [ ]" item in tasks.md is ticked');
    expect(text).toContain("- `npm test` exits 0 (within 600 s)");
    expect(text).not.toContain("Produce");
  });

  it("names the phase label the item keeps at a node without a phase", () => {
    const text = assignmentText(GRAPH, nodeOf("fix"), stateAt({ node: "fix", phase: "implementation" }));
    expect(text).toContain('node "fix" (phase implementation, label loop:implementation)');
  });

  it("claims with the command the CLI takes", () => {
    expect(claimCommand("design")).toBe("the-loop graph complete --node design");
  });
});

describe("graphContext", () => {
  it("is empty without a run", () => {
    expect(graphContext(GRAPH, undefined)).toBe("");
  });

  it("tells a running session what the node is and how to claim it", () => {
    expect(graphContext(GRAPH, started())).toBe(
      [
        'Process graph: tiny; node "design" (phase design, label loop:design); status running; generation 1.',
        "This node: Write the design.",
        "When this node's work is done, run: the-loop graph complete --node design",
      ].join("\n"),
    );
  });

  it("carries the last failed claim's reason", () => {
    const state = applied(applyClaimResult(GRAPH, started(), { node: "design", generation: 1, results: [MISSING], actor: AGENT, at: at(1) })).state;
    expect(graphContext(GRAPH, state)).toContain(`Last claim: ${MISSING.message}`);
  });

  it("tells a session at a gate to wait", () => {
    const state = applied(applyClaimResult(GRAPH, started(), { node: "design", generation: 1, results: [PASS], actor: AGENT, at: at(1) })).state;
    const text = graphContext(GRAPH, state);
    expect(text).toContain("status waiting");
    expect(text).toContain("do not start the next phase, and do not answer the gate yourself");
    expect(text).not.toContain("graph complete");
  });

  it.each([
    [stateAt({ status: "blocked", reasonCode: "max-attempts", reason: "design.md is missing" }), "Blocked: design.md is missing. A person resumes it"],
    [stateAt({ status: "done", node: "complete", phase: "complete" }), "The run is done"],
    [stateAt({ status: "failed", reasonCode: "item-closed", reason: "the ticket closed" }), "The run failed: the ticket closed."],
  ])("says where a %# item stands", (state, expected) => {
    expect(graphContext(GRAPH, state)).toContain(expected);
  });

  it("follows the item after a gate answer", () => {
    const waiting = applied(applyClaimResult(GRAPH, started(), { node: "design", generation: 1, results: [PASS], actor: AGENT, at: at(1) })).state;
    const moved = applied(applyGateAnswer(GRAPH, waiting, { decision: "approved", actor: ALICE, at: at(2) })).state;
    expect(graphContext(GRAPH, moved)).toContain("run: the-loop graph complete --node implement");
  });
});
