import { afterAll, expect, it } from "vitest";
import { roomLockFor } from "../../src/daemon/graph-setup.js";
import { applyClaimResult, startRun } from "../../src/graph-run/advance.js";
import type { GraphState } from "../../src/graph-run/state.js";
import type { LoopAsker } from "../../src/graph-driver/loop-events.js";
import { commitMove } from "../../src/graph-driver/move.js";
import type { MovePorts } from "../../src/graph-driver/move.js";
import { roomPort } from "../../src/graph-driver/node-room.js";
import type { GraphSetup } from "../../src/sessions/context.js";
import { openRecordBackend } from "../../src/state/backend.js";
import type { RecordBackend } from "../../src/state/backend.js";
import { configSchema } from "../../src/config/schema.js";
import { deriveStatePaths } from "../../src/state/layout.js";
import { storesOn } from "../../src/stores/index.js";
import type { Stores } from "../../src/stores/index.js";
import { AGENT, GRAPH, OPERATOR, PASS, at } from "../graph/fixture.js";
import { postgresServer } from "../support/postgres.js";
import { tempDir } from "../support/temp.js";

/**
 * routing.limits.perNode on PostgreSQL: two daemons (two state roots, two connections to one
 * database) race claims for a capped node's last place. The perNode lock is a database lock there,
 * not a file under either state root, so exactly one run takes the place across both.
 */

const NO_HOOKS: LoopAsker = { runLoop: async () => ({ annotations: [] }), handles: () => false, now: () => at(5), session: () => undefined };

const cluster = postgresServer();
const backends: RecordBackend[] = [];

afterAll(async () => {
  await Promise.all(backends.splice(0).map((backend) => backend.close()));
});

async function daemon(url: string, name: string) {
  const paths = deriveStatePaths(configSchema.parse({ state: { store: "postgres" } }), await tempDir());
  const backend = await openRecordBackend({ store: "postgres", url, name, lockTimeoutMs: 10_000 });
  backends.push(backend);
  const stores: Stores = storesOn(paths, backend);
  const roomLock = roomLockFor(paths, stores);
  const setup = { graphs: new Map([[GRAPH.name, GRAPH]]), defaultGraph: GRAPH, states: stores.graphStates, roomLock } as unknown as GraphSetup;
  const ctx = { routing: { limits: { perNode: { review: 1 } } }, options: { graph: setup } } as unknown as Parameters<typeof roomPort>[0];
  const ports: MovePorts = { states: stores.graphStates, loop: NO_HOOKS, carryOut: async () => undefined };
  return { stores, ctx, ports, roomLock };
}

it("two daemons on one database count a capped node's runs under one database lock: one run takes the last place", async () => {
  const url = await cluster.freshDatabase();
  const one = await daemon(url, "host-a");
  const two = await daemon(url, "host-b");
  expect(typeof one.roomLock).toBe("function");
  const refs = ["local:demo#1", "local:demo#2", "local:demo#3", "local:demo#4", "local:demo#5", "local:demo#6"];
  const seen: GraphState[] = [];
  for (const ref of refs) {
    const started = startRun(GRAPH, { ref, loopRunId: `run-${ref}`, at: at(0), actor: OPERATOR }).state;
    seen.push(await one.stores.graphStates.transaction(ref, async (tx) => tx.write({ ...started, node: "implement", phase: "implementation" })));
  }
  const outcomes = await Promise.all(
    refs.map((ref, index) => {
      const host = index % 2 === 0 ? one : two;
      return commitMove(host.ports, {
        ref,
        seen: seen[index],
        graphOf: () => GRAPH,
        room: roomPort(host.ctx),
        decide: (_graph, current, _foreseen, room) => {
          if (current === undefined) return { kind: "refuse", reasonCode: "not-running", reason: "none" };
          const claimed = { node: "implement", generation: 1, results: [PASS], actor: AGENT, at: at(index + 1), ...(room ? { room } : {}) };
          const applied = applyClaimResult(GRAPH, current, claimed);
          return applied.kind === "refuse" ? applied : { kind: "move", transition: applied };
        },
      });
    }),
  );
  expect(outcomes.every((outcome) => outcome.kind === "moved")).toBe(true);
  const { records } = await two.stores.graphStates.list();
  expect(records.filter((state) => state.node === "review")).toHaveLength(1);
  expect(records.filter((state) => state.reasonCode === "node-full")).toHaveLength(5);
});

it("on files the perNode lock stays the file under the state root", async () => {
  const root = await tempDir();
  expect(roomLockFor({ root }, undefined)).toBe(`${root}/queue/graph-nodes`);
});
