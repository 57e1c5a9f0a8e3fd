import { userInfo } from "node:os";
import { dirname } from "node:path";
import type { LoadedConfig } from "../../../config/load.js";
import { ExitError, NotFoundError, messageOf } from "../../../errors.js";
import type { GraphState } from "../../../graph-run/state.js";
import type { LoopSession } from "../../../graph-loop/payload.js";
import type { Graph, GraphActor } from "../../../graph/types.js";
import type { HookContext } from "../../../hooks/index.js";
import type { SessionRecord } from "../../../registry/record.js";
import type { HookPoint, JsonValue, WorkItemEntity } from "../../../sdk/hooks/catalog.js";
import type { LoopPointName } from "../../../sdk/hooks/loop-catalog.js";
import { canonicalRef } from "../../canonical-ref.js";

import { commandStores, storesShared } from "../../stores.js";
/**
 * `the-loop hooks test NAME --point P --work-item REF`: the payload the daemon would send at P for
 * that work item, built from what its records hold now — its graph run, its session, its work
 * item — with the builders the daemon itself uses (loopPayload, workItemEntityOfRef). Nothing is
 * written. A fact no record holds (the text of an input not yet given, a start's delivery id)
 * keeps the point's sample value, and the report names the facts taken from the item.
 */

export interface ItemPayload {
  readonly payload: HookContext;
  /** The payload's keys whose values came from the item's records (the rest are the sample's). */
  readonly fromItem: readonly string[];
}

const DAEMON: GraphActor = { kind: "daemon", id: "the-loop" };

/** The operator running the test, as a gate answer given at the CLI is recorded. */
function operator(): GraphActor {
  let id = "operator";
  try {
    id = userInfo().username || id;
  } catch {
    // No user name (a container without a passwd entry): the actor is still an operator.
  }
  return { kind: "operator", id };
}

const isLoop = (point: HookPoint): boolean => point.family === "loop";

/**
 * The own fields of a loop event at the item's node, in the-loop's words, as the next move there
 * would state them: the run as it stands for loop.started, generation.* and terminal; at a human
 * gate, an approval for gate.*; the attempt under way passing for node.terminal.
 */
function loopOwnOf(name: LoopPointName, graph: Graph, state: GraphState): { own: Record<string, JsonValue>; actor: GraphActor; atGate: boolean } {
  const node = graph.nodes.get(state.node);
  const atGate = node !== undefined && node.actor === "human" && !node.terminal;
  switch (name) {
    case "loop.started":
      return { own: { status: "running", cause: "start", reason_code: null, details: null }, actor: DAEMON, atGate };
    case "loop.generation.pre":
      return { own: { status: "running", reason_code: null, details: null, denied: false, deny_reason: null }, actor: DAEMON, atGate };
    case "loop.generation.post":
      return { own: { status: state.status, reason_code: state.reasonCode ?? null, details: null }, actor: DAEMON, atGate };
    case "loop.gate.pre":
    case "loop.gate.post": {
      const own: Record<string, JsonValue> = {
        gate_id: atGate ? state.node : null,
        decision: atGate ? "approved" : null,
        status: "running",
        reason_code: null,
        details: null,
      };
      if (name === "loop.gate.pre") Object.assign(own, { denied: false, deny_reason: null });
      return { own, actor: atGate ? operator() : DAEMON, atGate };
    }
    case "loop.node.terminal":
      return { own: { task_status: "passed", run_status: state.status, error: null, details: null }, actor: atGate ? operator() : DAEMON, atGate };
    case "loop.terminal": {
      const ended = state.status !== "running" && state.status !== "waiting";
      const status = ended ? state.status : "done";
      return {
        own: { status, cause: status === "done" ? "node" : "contract", reason_code: status === "done" ? null : (state.reasonCode ?? null), details: null },
        actor: DAEMON,
        atGate,
      };
    }
  }
}

/** A loop event's payload for the item's run, as loopPayload builds the daemon's. */
async function loopItemPayload(point: HookPoint, graph: Graph, state: GraphState, session: LoopSession | undefined, now: Date): Promise<HookContext> {
  const name = point.name as LoopPointName;
  const { loopPayload, nextLoopTimestamp } = await import("../../../graph-loop/payload.js");
  const { own, actor } = loopOwnOf(name, graph, state);
  // An event about one attempt is about the next at the node: one more than those ended there.
  const attempt = name === "loop.node.terminal" || name === "loop.gate.pre" || name === "loop.gate.post";
  const task = { node: state.node, attempt: (state.tasks?.[state.node] ?? 0) + 1 };
  const subject = { node: state.node, actor, ...(attempt ? { task } : {}) };
  const input = { timestamp: nextLoopTimestamp(state.lastLoopAt, now), graph, state, session, subject };
  return loopPayload(name, input, own);
}

/** The lifecycle facts the item's records hold: its entity, and its session's harness, pane and directory. */
function lifecycleFacts(point: HookPoint, entity: WorkItemEntity, record: SessionRecord | undefined): Record<string, unknown> {
  const known: Record<string, unknown> = { workItem: entity };
  if (record !== undefined) {
    known["harness"] = record.harness;
    known["tmuxTarget"] = record.tmuxTarget;
    known["cwd"] = record.cwd;
    known["harnessSessionId"] = record.harnessSessionId;
  }
  return Object.fromEntries(Object.entries(known).filter(([key]) => Object.hasOwn(point.facts, key)));
}

/** The item's records, read only: its graph state (with the graph it runs) and its session. */
async function readRecords(
  loaded: LoadedConfig,
  ref: string,
): Promise<{ readonly state: GraphState | undefined; readonly graph: Graph | undefined; readonly record: SessionRecord | undefined }> {
  const [{ openGraphStates }, { SessionRegistry }] = await Promise.all([import("../../../graph-run/store.js"), import("../../../registry/registry.js")]);
  const stores = storesShared(loaded.config) ? await commandStores(loaded) : undefined;
  let state: GraphState | undefined;
  try {
    state = await (stores?.graphStates ?? openGraphStates(loaded.paths)).get(ref);
  } catch (error) {
    throw new ExitError(`cannot read ${ref}'s graph run: ${messageOf(error)}; \`the-loop why ${ref}\` says more`);
  }
  const record = (stores?.registry ?? new SessionRegistry({ dir: loaded.paths.registryDir })).get(ref);
  if (state === undefined) return { state, graph: undefined, record };
  const { loadGraphs } = await import("../../../graph/registry.js");
  const file = loaded.source.path;
  const graphs = await loadGraphs(loaded.config, file !== null ? dirname(file) : loaded.baseDir, file !== null ? { configFile: file } : {});
  return { state, graph: graphs.graphs.get(state.graph), record };
}

/** The live session as the daemon names it in a loop event, its usage read from the same budget record the daemon's payload reads. */
async function loopSessionOfRecord(loaded: LoadedConfig, ref: string, live: SessionRecord, now: Date): Promise<LoopSession> {
  const [{ BudgetStore, budgetDir }, { readUsage }] = await Promise.all([import("../../../budget/store.js"), import("../../../budget/summary.js")]);
  const stores = storesShared(loaded.config) ? await commandStores(loaded) : undefined;
  const usage = readUsage(stores?.budgets ?? new BudgetStore({ dir: budgetDir(loaded.paths.root) }), loaded.config.routing.budget, ref, live, now);
  return { agentName: live.harness, sessionId: live.harnessSessionId, usage };
}

/**
 * The payload at `point` for the work item `given` (a ref as the CLI takes it), over `sample` (the
 * point's sample payload): a loop event needs the item's graph run; a lifecycle point takes the
 * item's entity and its session's facts, where it has them.
 */
export async function itemPayload(loaded: LoadedConfig, given: string, point: HookPoint, sample: HookContext, now: Date = new Date()): Promise<ItemPayload> {
  const ref = canonicalRef(given, loaded);
  const { state, graph, record } = await readRecords(loaded, ref);
  const { isLive } = await import("../../../registry/record.js");
  const live = record !== undefined && isLive(record) ? record : undefined;
  if (isLoop(point)) {
    if (state === undefined) {
      throw new NotFoundError(`${ref} has no graph run, so there is no ${point.name} to build for it; start the item, or give --payload FILE`);
    }
    if (graph === undefined) throw new ExitError(`${ref} runs the graph "${state.graph}", which the config no longer has; \`the-loop graph list\` lists them`);
    const session = live === undefined ? undefined : await loopSessionOfRecord(loaded, ref, live, now);
    const payload = await loopItemPayload(point, graph, state, session, now);
    return { payload, fromItem: Object.keys(payload).filter((key) => key !== "event" && key !== "timestamp") };
  }
  const { workItemEntityOfRef } = await import("../../../sessions/lifecycle.js");
  const facts = lifecycleFacts(point, workItemEntityOfRef(ref, record), live);
  return { payload: { ...sample, ...facts } as HookContext, fromItem: Object.keys(facts) };
}
