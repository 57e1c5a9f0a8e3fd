import { describe, expect, it } from "vitest";
import { applyClaimResult, forceTo, recordRefusal, startRun } from "../../src/graph-run/advance.js";
import type { Refusal } from "../../src/graph-run/advance.js";
import type { RunEffect } from "../../src/graph-loop/plan.js";
import type { GraphState } from "../../src/graph-run/state.js";
import type { LoopOutcome } from "../../src/hooks/types.js";
import type { LoopPointName } from "../../src/sdk/hooks/loop-catalog.js";
import { parseJournalledEffect } from "../../src/graph-driver/carry-out.js";
import { loopClaimMove, loopForceMove } from "../../src/graph-driver/loop-events.js";
import type { LoopAsker } from "../../src/graph-driver/loop-events.js";
import { commitMove, STAY } from "../../src/graph-driver/move.js";
import type { GraphMove, MovePorts } from "../../src/graph-driver/move.js";
import { AGENT, GRAPH, OPERATOR, PASS, REF, at } from "../graph/fixture.js";

/**
 * commitMove, the one way a graph moves, driven with the pure advance, the real loop planning and
 * asking (graph-loop.ts), and fakes for what is outside: an in-memory record store, the loop
 * hooks, and the carrying out of effects.
 */

const RUNNING: GraphState = startRun(GRAPH, { ref: REF, loopRunId: "run-1", at: at(0), actor: OPERATOR }).state;
/** The same run, moved on by someone else meanwhile. */
const MOVED_ON: GraphState = { ...RUNNING, updatedAt: at(3).toISOString() };
const NEXT_GENERATION: GraphState = { ...RUNNING, generation: RUNNING.generation + 1, updatedAt: at(3).toISOString() };

interface World {
  record: GraphState | undefined;
  readonly writes: GraphState[];
  readonly asked: string[];
  /** Each carry-out: the effects, and the record as stored when it began. */
  readonly carried: { readonly effects: readonly RunEffect[]; readonly stored: GraphState | undefined }[];
  readonly ports: MovePorts;
}

interface Hooks {
  /** The `.pre` events a hook runs at. */
  readonly handles?: (name: LoopPointName) => boolean;
  /** The events a hook denies. */
  readonly deny?: (name: LoopPointName) => boolean;
  /** What happens to the record while a hook decides. */
  readonly meanwhile?: (world: World) => void;
  /** The carry-out is killed before it begins (a crash between the commit and the effects). */
  readonly crash?: boolean;
}

function worldOf(stored: GraphState | undefined, hooks: Hooks = {}): World {
  const world: World = {
    record: stored,
    writes: [],
    asked: [],
    carried: [],
    ports: undefined as never,
  };
  const loop: LoopAsker = {
    runLoop: async (name): Promise<LoopOutcome> => {
      world.asked.push(name);
      hooks.meanwhile?.(world);
      return hooks.deny?.(name) === true ? { denied: { hook: "guard", reason: "not today" }, annotations: [] } : { annotations: [] };
    },
    handles: (name) => hooks.handles?.(name) ?? false,
    now: () => at(5),
    session: () => undefined,
  };
  const ports: MovePorts = {
    states: {
      transaction: async (_item, work) =>
        work({
          read: () => world.record,
          write: async (record) => {
            world.record = record;
            world.writes.push(record);
            return record;
          },
          remove: async () => {
            world.record = undefined;
          },
        }),
    },
    loop,
    carryOut: async (_graph, _written, effects) => {
      if (hooks.crash === true) throw new Error("killed");
      world.carried.push({ effects, stored: world.record });
    },
  };
  return Object.assign(world, { ports });
}

const isPre = (name: string): boolean => name.endsWith(".pre");

function forceMove(seen: GraphState | undefined, to: string, reason = "an operator's reason"): GraphMove {
  const forced = { to, reason, actor: OPERATOR, at: at(4), start: { ref: REF, loopRunId: "run-2" } };
  return {
    ref: REF,
    seen,
    graphOf: () => GRAPH,
    decide: (graph, state) => {
      const applied = forceTo(graph, state, forced);
      return applied.kind === "refuse" ? applied : { kind: "move", transition: applied, loop: loopForceMove(graph, state, applied, OPERATOR, forced) };
    },
  };
}

function claimMove(seen: GraphState | undefined, record = false): GraphMove {
  const claimed = { node: "design", generation: RUNNING.generation, results: [PASS], actor: AGENT, at: at(4) };
  return {
    ref: REF,
    seen,
    graphOf: () => GRAPH,
    decide: (graph, state) => {
      if (state === undefined) return { kind: "refuse", reasonCode: "not-running", reason: "no run" };
      const applied = applyClaimResult(graph, state, claimed);
      return applied.kind === "refuse" ? applied : { kind: "move", transition: applied, loop: loopClaimMove(graph, state, applied, AGENT, "design", [PASS]) };
    },
    ...(record
      ? {
          recordRefusal: (graph, current, refusal: Refusal) =>
            recordRefusal(graph, current, {
              kind: "claim-refused",
              ref: REF,
              reasonCode: refusal.reasonCode,
              reason: refusal.reason,
              actor: AGENT,
              at: at(4),
              claimed: "design",
            }),
        }
      : {}),
  };
}

interface Row {
  readonly name: string;
  readonly stored: GraphState | undefined;
  readonly move: GraphMove;
  readonly hooks?: Hooks;
  readonly kind: "moved" | "refused" | "stayed";
  readonly reasonCode?: string;
  readonly denied?: boolean;
  /** The `.pre` events asked, in order. */
  readonly asked: readonly string[] | "some";
  readonly writes: number;
  readonly carried: number;
}

const ROWS: readonly Row[] = [
  {
    name: "applied: asked ahead, written with its effects journalled, then carried out",
    stored: RUNNING,
    move: forceMove(RUNNING, "complete"),
    hooks: { handles: isPre },
    kind: "moved",
    denied: false,
    asked: "some",
    writes: 1,
    carried: 1,
  },
  {
    name: "applied with no hook at its events: nothing asked",
    stored: RUNNING,
    move: forceMove(RUNNING, "implement"),
    kind: "moved",
    denied: false,
    asked: [],
    writes: 1,
    carried: 1,
  },
  {
    name: "refused at foresee: nothing asked, written or carried out",
    stored: RUNNING,
    move: forceMove(RUNNING, "implement", "  "),
    hooks: { handles: isPre },
    kind: "refused",
    reasonCode: "no-reason",
    asked: [],
    writes: 0,
    carried: 0,
  },
  {
    name: "refused in the transaction: the record moved on before the lock",
    stored: NEXT_GENERATION,
    move: claimMove(RUNNING),
    kind: "refused",
    reasonCode: "not-current",
    asked: [],
    writes: 0,
    carried: 0,
  },
  {
    name: "refused in the transaction, with its refusal recorded: history written, its event carried out",
    stored: NEXT_GENERATION,
    move: claimMove(RUNNING, true),
    kind: "refused",
    reasonCode: "not-current",
    asked: [],
    writes: 1,
    carried: 1,
  },
  {
    name: "stale after ask-ahead: the item moved while a hook decided, refused to be given again",
    stored: RUNNING,
    move: forceMove(RUNNING, "complete"),
    hooks: { handles: isPre, meanwhile: (world) => (world.record = MOVED_ON) },
    kind: "refused",
    reasonCode: "not-current",
    asked: "some",
    writes: 0,
    carried: 0,
  },
  {
    name: "changed since it was read, with no .pre event to ask: planned afresh and written",
    stored: MOVED_ON,
    move: forceMove(RUNNING, "implement"),
    kind: "moved",
    denied: false,
    asked: [],
    writes: 1,
    carried: 1,
  },
  {
    name: "denied by a .pre hook: the first denial stops the asking, and what it makes of the move is written",
    stored: RUNNING,
    move: forceMove(RUNNING, "complete"),
    hooks: { handles: isPre, deny: isPre },
    kind: "moved",
    denied: true,
    asked: "some",
    writes: 1,
    carried: 1,
  },
  {
    name: "stays: nothing to move, nothing written or carried out",
    stored: RUNNING,
    move: { ref: REF, seen: RUNNING, graphOf: () => GRAPH, decide: () => STAY },
    hooks: { handles: isPre },
    kind: "stayed",
    asked: [],
    writes: 0,
    carried: 0,
  },
];

describe("commitMove", () => {
  it.each(ROWS)("$name", async (row) => {
    const world = worldOf(row.stored, row.hooks);
    const outcome = await commitMove(world.ports, row.move);
    expect(outcome.kind).toBe(row.kind);
    if (row.reasonCode !== undefined) expect(outcome.kind === "refused" ? outcome.refusal.reasonCode : undefined).toBe(row.reasonCode);
    if (row.denied !== undefined) expect(outcome.kind === "moved" ? outcome.denied : undefined).toBe(row.denied);
    if (row.asked === "some") expect(world.asked.length).toBeGreaterThan(0);
    else expect(world.asked).toEqual(row.asked);
    if (row.denied === true) expect(world.asked).toHaveLength(1);
    expect(world.writes).toHaveLength(row.writes);
    expect(world.carried).toHaveLength(row.carried);
  });

  it("writes the effects with the state, and carries them out only after the write", async () => {
    const world = worldOf(RUNNING, { handles: isPre });
    const outcome = await commitMove(world.ports, forceMove(RUNNING, "implement"));
    if (outcome.kind !== "moved") throw new Error(`not moved: ${outcome.kind}`);
    expect(outcome.state.node).toBe("implement");
    const [carried] = world.carried;
    expect(carried?.effects).toEqual(outcome.effects);
    // When the effects begin, the record already holds the new state and its journal.
    expect(carried?.stored?.node).toBe("implement");
    expect(carried?.stored?.pendingEffects).toEqual(outcome.effects.map((effect) => JSON.stringify(effect)));
  });

  it("a denial writes what it makes of the move: the run blocked, the denial said", async () => {
    const world = worldOf(RUNNING, { handles: isPre, deny: isPre });
    const outcome = await commitMove(world.ports, forceMove(RUNNING, "complete"));
    if (outcome.kind !== "moved") throw new Error(`not moved: ${outcome.kind}`);
    expect(world.record?.status).toBe("blocked");
    expect(outcome.effects.some((effect) => effect.kind === "loop-denial")).toBe(true);
  });

  it("a crash between the commit and the effects leaves them journalled with the state: repeated, never lost", async () => {
    const world = worldOf(RUNNING, { handles: isPre, crash: true });
    await expect(commitMove(world.ports, forceMove(RUNNING, "implement"))).rejects.toThrow("killed");
    expect(world.record?.node).toBe("implement");
    const journalled = (world.record?.pendingEffects ?? []).map(parseJournalledEffect);
    expect(journalled.length).toBeGreaterThan(0);
    expect(journalled.every((effect) => effect !== undefined)).toBe(true);
    expect(journalled.some((effect) => effect?.kind === "phase-label")).toBe(true);
  });

  it("a move that cannot be refused (always) is written with its events unasked when it went stale", async () => {
    const world = worldOf(RUNNING, { handles: isPre, meanwhile: (w) => (w.record = MOVED_ON) });
    const outcome = await commitMove(world.ports, { ...forceMove(RUNNING, "complete"), always: true });
    expect(world.asked).toEqual(["loop.gate.pre"]);
    expect(outcome.kind).toBe("moved");
    expect(world.writes).toHaveLength(1);
    expect(world.record?.node).toBe("complete");
  });

  it("a move without loop events asks nothing and writes its transition as the advance made it", async () => {
    const world = worldOf(RUNNING, { handles: () => true });
    const forced = { to: "implement", reason: "r", actor: OPERATOR, at: at(4), start: { ref: REF, loopRunId: "run-2" } };
    const outcome = await commitMove(world.ports, {
      ref: REF,
      seen: undefined,
      graphOf: () => GRAPH,
      decide: (graph, state) => {
        if (state === undefined) return STAY;
        const applied = forceTo(graph, state, forced);
        return applied.kind === "refuse" ? applied : { kind: "move", transition: applied };
      },
    });
    if (outcome.kind !== "moved") throw new Error(`not moved: ${outcome.kind}`);
    expect(world.asked).toEqual([]);
    expect(outcome.effects).toEqual(outcome.transition.effects);
  });
});
