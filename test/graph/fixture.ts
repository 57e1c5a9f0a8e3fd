import { expect } from "vitest";
import { startRun } from "../../src/graph-run/advance.js";
import type { GraphEffect, Refusal, Transition } from "../../src/graph-run/advance.js";
import { graphStateSchema } from "../../src/graph-run/state.js";
import type { GraphState } from "../../src/graph-run/state.js";
import type { CheckResult, Graph, GraphActor, GraphEdge, GraphNode } from "../../src/graph/types.js";

/**
 * A small graph built by hand with the types (not through the loader):
 *
 *   design (agent, loop:design, produces design.md, 2 attempts)
 *     -pass-> design-approval (human, loop:design-review)
 *                -approved-> implement   -changes-requested-> design
 *   implement (agent, loop:implementation, a command check, 3 attempts)
 *     -pass-> review   -fail-> fix (agent, no phase) -pass-> implement
 *   review (human, no phase) -approved-> complete (terminal, loop:complete)   -changes-requested-> implement
 */

const node = (id: string, fields: Partial<GraphNode> = {}): GraphNode => ({
  id,
  actor: "agent",
  description: `Do the ${id} work.`,
  produces: [],
  checks: [],
  maxAttempts: 3,
  terminal: false,
  points: [],
  ...fields,
});

const edge = (from: string, to: string, on: GraphEdge["on"]): GraphEdge => ({ from, to, on });

export const GRAPH: Graph = {
  name: "tiny",
  source: "built-in",
  start: "design",
  nodes: new Map(
    [
      node("design", {
        phase: "design",
        description: "Write the design.",
        produces: [["design.md", "docs/design.md"]],
        checks: [{ kind: "artifact-exists", anyOf: ["design.md", "docs/design.md"] }],
        maxAttempts: 2,
      }),
      node("design-approval", { phase: "design-review", actor: "human", description: "A person reads the design." }),
      node("implement", {
        phase: "implementation",
        checks: [
          { kind: "checklist-complete", anyOf: ["tasks.md"] },
          { kind: "command", argv: ["npm", "test"], timeoutSeconds: 600 },
        ],
      }),
      node("fix", { description: "Fix what the tests found." }),
      node("review", { actor: "human", description: "" }),
      node("complete", { phase: "complete", description: "", terminal: true }),
    ].map((n) => [n.id, n]),
  ),
  edges: [
    edge("design", "design-approval", "pass"),
    edge("design-approval", "implement", "approved"),
    edge("design-approval", "design", "changes-requested"),
    edge("implement", "review", "pass"),
    edge("implement", "fix", "fail"),
    edge("fix", "implement", "pass"),
    edge("review", "complete", "approved"),
    edge("review", "implement", "changes-requested"),
  ],
};

export const REF = "github:octo/repo#7";
export const T0 = new Date("2025-03-01T10:00:00.000Z");
export const at = (minutes: number): Date => new Date(T0.getTime() + minutes * 60_000);

export const AGENT: GraphActor = { kind: "agent", id: "session-1" };
export const ALICE: GraphActor = { kind: "human", id: "alice" };
export const OPERATOR: GraphActor = { kind: "operator", id: "ops" };
export const DAEMON: GraphActor = { kind: "daemon", id: "the-loop" };

export const PASS: CheckResult = { check: "artifact-exists", passed: true, message: "design.md exists" };
export const MISSING: CheckResult = { check: "artifact-exists", passed: false, message: "design.md is missing (or docs/design.md)" };

/** Fails the test when `value` is a refusal; the transition otherwise. */
export function applied(value: Refusal | Transition | { kind: string }): Transition {
  if (value.kind !== "applied") throw new Error(`expected a transition, got ${JSON.stringify(value)}`);
  const transition = value as Transition;
  // Every state the advance produces is a record the store would write.
  const parsed = graphStateSchema.safeParse(transition.state);
  expect(parsed.success, parsed.success ? "" : JSON.stringify(parsed.error.issues)).toBe(true);
  return transition;
}

export function refused(value: Refusal | Transition | { kind: string }): Refusal {
  if (value.kind !== "refuse") throw new Error(`expected a refusal, got ${JSON.stringify(value)}`);
  return value as Refusal;
}

/** A fresh run at the start node. */
export function started(): GraphState {
  return applied(startRun(GRAPH, { ref: REF, loopRunId: "run-1", at: T0, actor: DAEMON })).state;
}

/** A state like `base` with fields replaced (for situations the advance only reaches after many steps). */
export function stateAt(fields: Partial<GraphState>, base: GraphState = started()): GraphState {
  return { ...base, ...fields };
}

/** The kinds of effects, events shown by name: ["event:graph.advanced", "phase-label", …]. */
export function kinds(effects: readonly GraphEffect[]): string[] {
  return effects.map((effect) => (effect.kind === "event" ? `event:${effect.name}` : effect.kind === "hook" ? `hook:${effect.point}` : effect.kind));
}

/** Freezes a value deeply: an advance that mutates its input throws. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
