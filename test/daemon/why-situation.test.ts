import { describe, expect, it } from "vitest";
import { heldAtEdgeOf, whyAnswerSchema, whySituationOf } from "../../src/daemon/socket/why-situation.js";
import type { WhyAnswer } from "../../src/daemon/socket/why-situation.js";
import type { GraphState } from "../../src/graph-run/state.js";
import { explainWhy } from "../../src/why/explain.js";
import { at, stateAt } from "../graph/fixture.js";
import { whySettings } from "../support/builders.js";

/** A run done with `implement`, waiting for a place at `review` since `minute`, under the cap `cap`. */
const heldAt = (ref: string, minute: number, cap = "review"): GraphState =>
  stateAt({
    ref,
    node: "implement",
    status: "waiting",
    reasonCode: "node-full",
    reason: `waiting at edge implement → review: node review full, cap routing.limits.perNode.${cap} = 1`,
    heldEdge: { to: "review", outcome: "pass", since: at(minute).toISOString(), cap },
  });

const first = heldAt("local:demo#1", 1);
const second = heldAt("local:demo#2", 2);
const third = heldAt("local:demo#3", 3);
const elsewhere = heldAt("local:demo#4", 0, "implementation");
const running = stateAt({ ref: "local:demo#5", node: "review" });
const gate = stateAt({ ref: "local:demo#6", node: "review", status: "waiting", reasonCode: "gate", reason: "a person decides" });
const all = [first, second, third, elsewhere, running, gate];

describe("heldAtEdgeOf: a run held at a full perNode node, as the daemon's why tells it", () => {
  it.each<{ name: string; state: GraphState; states: GraphState[] | undefined; perNode: Record<string, number>; expected: string | undefined }>([
    {
      name: "the oldest held run has none ahead",
      state: first,
      states: all,
      perNode: { review: 1 },
      expected: "waiting at edge implement → review: node review full, cap routing.limits.perNode.review = 1, 0 ahead",
    },
    {
      name: "a later one counts those held under the same cap before it",
      state: third,
      states: all,
      perNode: { review: 1 },
      expected: "waiting at edge implement → review: node review full, cap routing.limits.perNode.review = 1, 2 ahead",
    },
    {
      name: "runs held under another cap are not ahead of it",
      state: elsewhere,
      states: all,
      perNode: { review: 1, implementation: 2 },
      expected: "waiting at edge implement → review: node review full, cap routing.limits.perNode.implementation = 2, 0 ahead",
    },
    {
      name: "the cap as the config sets it now",
      state: second,
      states: all,
      perNode: { review: 3 },
      expected: "waiting at edge implement → review: node review full, cap routing.limits.perNode.review = 3, 1 ahead",
    },
    {
      name: "a cap no longer set says the daemon moves it",
      state: second,
      states: all,
      perNode: {},
      expected:
        "waiting at edge implement → review: node review full, routing.limits.perNode.review (no longer set: the daemon moves it within a second), 1 ahead",
    },
    {
      name: "an unreadable listing leaves the count out, and still tells the wait",
      state: second,
      states: undefined,
      perNode: { review: 1 },
      expected: "waiting at edge implement → review: node review full, cap routing.limits.perNode.review = 1",
    },
    { name: "a running run waits at no edge", state: running, states: all, perNode: { review: 1 }, expected: undefined },
    { name: "a run at a gate waits at no edge", state: gate, states: all, perNode: { review: 1 }, expected: undefined },
  ])("$name", ({ state, states, perNode, expected }) => {
    expect(heldAtEdgeOf(state, states, perNode)).toBe(expected);
  });
});

describe("the daemon's why answer carries the wait at the edge", () => {
  const answer = (heldAtEdge: string | null | undefined): WhyAnswer =>
    whyAnswerSchema.parse({
      ref: third.ref,
      settings: whySettings(),
      session: null,
      control: null,
      graph: third,
      held: null,
      events: [],
      log: { scannedBytes: 0, complete: true, malformed: 0, missing: false },
      ...(heldAtEdge !== undefined ? { heldAtEdge } : {}),
    });

  it("and the verdict says how many runs are ahead, as the CLI's why does reading the files", () => {
    const words = heldAtEdgeOf(third, all, { review: 1 });
    const verdict = explainWhy(whySituationOf(answer(words)));
    expect(verdict.state).toBe("waiting-at-edge");
    expect(verdict.summary).toContain("cap routing.limits.perNode.review = 1, 2 ahead");
  });

  it.each([null, undefined])("without one (%s: none, or a daemon from before), the verdict falls back on the run's reason", (none) => {
    const situation = whySituationOf(answer(none));
    expect(situation.heldAtEdge).toBeUndefined();
    expect(explainWhy(situation).summary).toContain(third.reason);
  });
});
