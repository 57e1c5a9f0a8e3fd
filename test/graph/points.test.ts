import { describe, expect, it } from "vitest";
import { pointsAt } from "../../src/graph/points.js";
import type { PointMoment } from "../../src/graph/points.js";
import { LOOP_POINTS } from "../../src/graph/types.js";
import type { GraphNode, LoopPoint } from "../../src/graph/types.js";

const nodeOf = (kind: "agent" | "human" | "terminal", points: readonly LoopPoint[]): GraphNode => ({
  id: kind,
  actor: kind === "human" ? "human" : "agent",
  description: kind === "terminal" ? "" : "Do it.",
  produces: [],
  checks: [],
  maxAttempts: 3,
  terminal: kind === "terminal",
  points,
});

/** What the shipped work-item graph's implementation node binds. */
const EXECUTE: readonly LoopPoint[] = ["execute:pre", "execute:wave:pre", "execute:wave:post", "execute:post"];
/** Every point, in the loop's order: an agent node may bind them all. */
const ALL: readonly LoopPoint[] = LOOP_POINTS;
const HUMAN_PRE: readonly LoopPoint[] = ["discuss:pre", "verify:pre", "ship:pre"];

describe("pointsAt", () => {
  it.each<{ kind: "agent" | "human" | "terminal"; points: readonly LoopPoint[]; moment: PointMoment; expected: LoopPoint[] }>([
    // An agent node: its :pre points on entry, then the first attempt's wave opens.
    { kind: "agent", points: EXECUTE, moment: "enter", expected: ["execute:pre", "execute:wave:pre"] },
    { kind: "agent", points: EXECUTE, moment: "attempt-end", expected: ["execute:wave:post"] },
    { kind: "agent", points: EXECUTE, moment: "claim-passed", expected: ["execute:post"] },
    { kind: "agent", points: EXECUTE, moment: "retry", expected: ["execute:wave:pre"] },
    { kind: "agent", points: ALL, moment: "enter", expected: ["discuss:pre", "plan:pre", "execute:pre", "verify:pre", "ship:pre", "execute:wave:pre"] },
    { kind: "agent", points: ALL, moment: "attempt-end", expected: ["execute:wave:post"] },
    { kind: "agent", points: ALL, moment: "claim-passed", expected: ["discuss:post", "plan:post", "execute:post", "verify:post", "ship:post"] },
    { kind: "agent", points: ALL, moment: "retry", expected: ["execute:wave:pre"] },
    { kind: "agent", points: ["plan:pre", "plan:post"], moment: "enter", expected: ["plan:pre"] },
    { kind: "agent", points: ["plan:pre", "plan:post"], moment: "attempt-end", expected: [] },
    { kind: "agent", points: ["plan:pre", "plan:post"], moment: "claim-passed", expected: ["plan:post"] },
    { kind: "agent", points: ["plan:pre", "plan:post"], moment: "retry", expected: [] },
    { kind: "agent", points: [], moment: "enter", expected: [] },
    { kind: "agent", points: [], moment: "claim-passed", expected: [] },
    // A human node passes its points on entry, and only then.
    { kind: "human", points: HUMAN_PRE, moment: "enter", expected: ["discuss:pre", "verify:pre", "ship:pre"] },
    { kind: "human", points: HUMAN_PRE, moment: "attempt-end", expected: [] },
    { kind: "human", points: HUMAN_PRE, moment: "claim-passed", expected: [] },
    { kind: "human", points: HUMAN_PRE, moment: "retry", expected: [] },
    // A terminal node passes everything it binds when it is reached, wave points included.
    { kind: "terminal", points: ALL, moment: "enter", expected: [...LOOP_POINTS] },
    { kind: "terminal", points: ["ship:post"], moment: "enter", expected: ["ship:post"] },
    { kind: "terminal", points: ALL, moment: "attempt-end", expected: [] },
    { kind: "terminal", points: ALL, moment: "claim-passed", expected: [] },
    { kind: "terminal", points: ALL, moment: "retry", expected: [] },
  ])("$kind node binding $points at $moment → $expected", ({ kind, points, moment, expected }) => {
    expect(pointsAt(nodeOf(kind, points), moment)).toEqual(expected);
  });

  it("hands back a list of its own, never the node's", () => {
    const node = nodeOf("terminal", ["ship:post"]);
    pointsAt(node, "enter").push("ship:pre");
    expect(node.points).toEqual(["ship:post"]);
  });
});
