import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { applyClaimResult, startRun } from "../../src/graph-run/advance.js";
import type { GraphState } from "../../src/graph-run/state.js";
import { openGraphStates } from "../../src/graph-run/store.js";
import type { LoopAsker } from "../../src/graph-driver/loop-events.js";
import { commitMove } from "../../src/graph-driver/move.js";
import type { MovePorts } from "../../src/graph-driver/move.js";
import { roomPort, runsHeldAtEdges } from "../../src/graph-driver/node-room.js";
import type { GraphSetup } from "../../src/sessions/context.js";
import { AGENT, GRAPH, OPERATOR, PASS, at } from "../graph/fixture.js";
import { tempDir } from "../support/temp.js";

/**
 * routing.limits.perNode at the moves (node-room.ts): moves racing for a capped node's last place
 * over real graph state records, counted under the node caps' lock (or, with no lock file, in
 * this process's turn), so exactly one takes it and the others wait at their edges.
 */

const NO_HOOKS: LoopAsker = { runLoop: async () => ({ annotations: [] }), handles: () => false, now: () => at(5), session: () => undefined };

async function world(withLock: boolean) {
  const root = await tempDir();
  const states = openGraphStates({ root, graphsDir: join(root, "graphs") });
  const setup = {
    graphs: new Map([[GRAPH.name, GRAPH]]),
    defaultGraph: GRAPH,
    states,
    ...(withLock ? { roomLock: join(root, "queue", "graph-nodes") } : {}),
  } as unknown as GraphSetup;
  const ctx = { routing: { limits: { perNode: { review: 1 } } }, options: { graph: setup } } as unknown as Parameters<typeof roomPort>[0];
  const ports: MovePorts = { states, loop: NO_HOOKS, carryOut: async () => undefined };
  return { states, ctx, ports };
}

/** A run of `ref` at `implement`, written as a record. */
async function atImplement(states: ReturnType<typeof openGraphStates>, ref: string): Promise<GraphState> {
  const started = startRun(GRAPH, { ref, loopRunId: `run-${ref}`, at: at(0), actor: OPERATOR }).state;
  return states.transaction(ref, async (tx) => tx.write({ ...started, node: "implement", phase: "implementation" }));
}

describe.each([
  ["the lock file", true],
  ["this process's turn", false],
])("claims racing for a capped node's last place, under %s", (_name, withLock) => {
  it("one moves, the others wait at their edges, oldest first", async () => {
    const { states, ctx, ports } = await world(withLock);
    const refs = ["local:demo#1", "local:demo#2", "local:demo#3", "local:demo#4"];
    const seen = await Promise.all(refs.map((ref) => atImplement(states, ref)));
    const outcomes = await Promise.all(
      refs.map((ref, index) =>
        commitMove(ports, {
          ref,
          seen: seen[index],
          graphOf: () => GRAPH,
          room: roomPort(ctx),
          decide: (_graph, current, _foreseen, room) => {
            if (current === undefined) return { kind: "refuse", reasonCode: "not-running", reason: "none" };
            const claimed = { node: "implement", generation: 1, results: [PASS], actor: AGENT, at: at(index + 1), ...(room ? { room } : {}) };
            const applied = applyClaimResult(GRAPH, current, claimed);
            return applied.kind === "refuse" ? applied : { kind: "move", transition: applied };
          },
        }),
      ),
    );
    expect(outcomes.every((outcome) => outcome.kind === "moved")).toBe(true);
    const { records } = await states.list();
    expect(records.filter((state) => state.node === "review")).toHaveLength(1);
    const held = records.filter((state) => state.reasonCode === "node-full");
    expect(held).toHaveLength(3);
    for (const state of held) expect(state).toMatchObject({ node: "implement", status: "waiting", heldEdge: { to: "review", cap: "review" } });
    // The release offers a freed place by `since`: the claims' own times here.
    const order = await runsHeldAtEdges(ctx);
    expect(order).toEqual([...held].sort((a, b) => (a.heldEdge!.since < b.heldEdge!.since ? -1 : 1)).map((state) => state.ref));
  });
});

it("no perNode cap: no room is counted and no lock is taken", async () => {
  const { ctx } = await world(true);
  const none = { ...ctx, routing: { limits: { perNode: {} } } } as unknown as Parameters<typeof roomPort>[0];
  expect(roomPort(none)).toBeUndefined();
});
