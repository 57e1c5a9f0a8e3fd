import { messageOf } from "../errors.js";
import { releaseHeld } from "../graph-run/advance.js";
import { hasNodeCaps, heldRuns, releaseOrder, roomFor, runsAt } from "../graph-run/node-caps.js";
import type { NodeCaps, NodeRoom } from "../graph-run/node-caps.js";
import type { GraphActor } from "../graph/types.js";
import { withLock } from "../state/index.js";
import type { ContextNeeds, GraphSetup } from "../sessions/context.js";
import type { MoveContext } from "./move-context.js";
import { movePorts } from "./carry-out.js";
import { commitMove, STAY } from "./move.js";
import type { RoomPort } from "./move.js";

/**
 * routing.limits.perNode at the moves (docs/fleet.md, "Caps on graph nodes"): the runs at each
 * capped node counted for a move that may follow an edge, under one lock that every such move
 * takes — a claim, a gate answer, a release — so two moves never both take a node's last place;
 * and the daemon's release of the runs waiting at an edge, oldest first, each through the one
 * committed move (move.ts). The caps are read at each move (a reload changes them): a lowered cap
 * holds the next move and moves no run back.
 */

const DAEMON: GraphActor = { kind: "daemon", id: "the-loop" };

/** The lock's wait: a move under it lists the records and writes one, in well under a second. */
const ROOM_LOCK = { staleMs: 3_000, timeoutMs: 15_000 } as const;

// The lock is the setup's: a file under the state root, or (state.store: postgres) a database lock,
// so that daemons on one database count a node's runs under one lock (daemon/graph-setup.ts).
// One chain per setup, for a setup that names no lock (a test's): the moves of one process in turn.
const chains = new WeakMap<GraphSetup, Promise<unknown>>();

function inTurn<T>(setup: GraphSetup, work: () => Promise<T>): Promise<T> {
  if (typeof setup.roomLock === "function") return setup.roomLock(work);
  if (setup.roomLock !== undefined) return withLock(setup.roomLock, work, ROOM_LOCK);
  const before = chains.get(setup) ?? Promise.resolve();
  // The chain only orders the moves: one that failed has told its own caller.
  const run = before.then(work, work);
  chains.set(
    setup,
    run.catch(() => undefined),
  );
  return run;
}

async function roomOf(setup: GraphSetup, caps: NodeCaps, ref: string): Promise<NodeRoom> {
  const { records } = await setup.states.list();
  return roomFor(caps, runsAt(setup.graphs, records), ref);
}

/** The node caps for a move of the item, or undefined when none is set (nothing is counted, no lock taken). */
export function roomPort(ctx: ContextNeeds<"routing", "graph">): RoomPort | undefined {
  const setup = ctx.options.graph;
  const caps = ctx.routing.limits.perNode;
  if (setup === undefined || !hasNodeCaps(caps)) return undefined;
  return {
    peek: (ref) => roomOf(setup, caps, ref),
    within: (ref, work) => inTurn(setup, async () => work(await roomOf(setup, caps, ref))),
  };
}

/** The items whose run waits at an edge, oldest first: what the daemon's release looks at (one listing, cached while unchanged). */
export async function runsHeldAtEdges(ctx: ContextNeeds<never, "graph">): Promise<string[]> {
  const setup = ctx.options.graph;
  if (setup === undefined) return [];
  const { records } = await setup.states.list({ keep: (state) => state.status === "waiting" && state.heldEdge !== undefined });
  return releaseOrder(heldRuns(records).map((state) => ({ ref: state.ref, since: state.heldEdge.since }))).map((held) => held.ref);
}

/**
 * Moves the item's run along the edge it waits at, if a place is free there now (counted under
 * the lock); whether it moved. Never throws: a failure is recorded (`graph.effect_failed`, effect
 * `edge-release`) and the next look tries again.
 */
export async function releaseHeldRun(ctx: MoveContext, ref: string): Promise<boolean> {
  const setup = ctx.options.graph;
  if (setup === undefined) return false;
  try {
    const seen = await setup.states.get(ref);
    const target = seen?.heldEdge !== undefined ? setup.graphs.get(seen.graph)?.nodes.get(seen.heldEdge.to) : undefined;
    const port = roomPort(ctx);
    // Still full as far as a look without the lock can tell: nothing to take the lock for.
    if (target === undefined || (port !== undefined && (await port.peek(ref)).full(target) !== undefined)) return false;
    const outcome = await commitMove<never>(movePorts(ctx, setup.states), {
      ref,
      seen,
      graphOf: (state) => (state !== undefined ? (setup.graphs.get(state.graph) ?? setup.defaultGraph) : setup.defaultGraph),
      room: port,
      decide: (graph, current, _foreseen, room) => {
        if (current === undefined || current.graph !== graph.name) return STAY;
        const transition = releaseHeld(graph, current, { actor: DAEMON, at: ctx.now(), ...(room !== undefined ? { room } : {}) });
        return transition === undefined ? STAY : { kind: "move", transition, loop: { graph, before: current, transition, actor: DAEMON } };
      },
    });
    return outcome.kind === "moved";
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", { work_item: ref, graph: "", node: "", effect: "edge-release", error: messageOf(error) });
    return false;
  }
}

/**
 * The daemon's look (twice a second): every run waiting at an edge, oldest first, one after
 * another, each in its item's queue (`inQueue`) and moved if its node has a place now. One after
 * another, so the oldest is offered a freed place first. How many moved.
 */
export async function releaseHeldRuns(ctx: MoveContext, inQueue: (ref: string, job: () => Promise<boolean>) => Promise<boolean>): Promise<number> {
  let moved = 0;
  for (const ref of await runsHeldAtEdges(ctx)) if (await inQueue(ref, () => releaseHeldRun(ctx, ref))) moved += 1;
  return moved;
}
