import { resolve } from "node:path";
import { AnswerGivenExit, EXIT_FAILURE, NotFoundError, UsageError } from "../../../errors.js";
import type { claimAnswerSchema } from "../../../daemon/socket/methods.js";
import { edgeWait } from "./edge-wait.js";
import type { EdgeWait } from "./edge-wait.js";
import type { GraphState } from "../../../graph-run/state.js";
import { openGraphStates } from "../../../graph-run/store.js";
import type { z } from "zod";
import { openDaemonProject, openProjectConfig } from "../../context.js";
import { SHELL_HASH_HINT } from "../../ref-hint.js";
import { canonicalRef, fullRefOf } from "../../canonical-ref.js";
import type { GlobalOptions, Project } from "../../context.js";
import { stdout } from "../../output.js";
import type { UsageSummary } from "../../../budget/summary.js";

/**
 * `the-loop graph status | complete | force`: a work item's run through its graph. `status` reads
 * the item's graph state; `complete` and `force` are decided by the running daemon (its config,
 * graphs and hooks), which this command only asks through the state root's socket.
 *
 * The socket's modules (and the session guard, with the session registry behind it) are imported
 * by `complete` and `force` alone: the socket's schemas load zod and its methods' ref checks load
 * the GitHub client, which `status`, reading one local file, must not pay for at every start.
 */

/** The daemon's socket client and the claim answer's schema, loaded when a command asks the daemon. */
async function daemonClaims() {
  const [{ callDaemon, callSessionSocket }, { claimAnswerSchema }] = await Promise.all([
    import("../../../daemon/socket/rpc.js"),
    import("../../../daemon/socket/methods.js"),
  ]);
  return { callDaemon, callSessionSocket, claimAnswerSchema };
}

export interface GraphStatusOptions {
  readonly json: boolean;
}

export interface GraphCompleteOptions {
  readonly node?: string;
  readonly json: boolean;
  /** How long to wait for the daemon's decision (its checks may run a test suite). */
  readonly timeout: string;
}

export interface GraphForceOptions {
  readonly to: string;
  readonly reason: string;
  readonly json: boolean;
}

/** What `graph status --json` prints: the item's run as scripts read it, and its live session's usage (null without one). */
export function statusDocument(ref: string, state: GraphState, phase: string | null, usage: UsageSummary | null, edge?: EdgeWait) {
  return {
    ref,
    graph: state.graph,
    node: state.node,
    phase,
    status: state.status,
    generation: state.generation,
    reason_code: state.reasonCode ?? null,
    reason: edge?.text ?? state.reason ?? null,
    held_edge: edge !== undefined ? { to: edge.to, outcome: edge.outcome, since: edge.since, cap: edge.cap, limit: edge.limit, ahead: edge.ahead } : null,
    loop_run_id: state.loopRunId,
    attempts: state.attempts,
    started_at: state.startedAt,
    updated_at: state.updatedAt,
    history: state.history,
    usage,
  };
}

export async function runGraphStatus(globals: GlobalOptions, given: string, options: GraphStatusOptions): Promise<void> {
  if (process.env.THE_LOOP_SESSION_SOCKET) {
    await graphStatusInSession(given, options);
    return;
  }
  const project = await openProjectConfig(globals);
  const ref = canonicalRef(given, project);
  const state = await (project.stores?.graphStates ?? openGraphStates(project.paths)).get(ref);
  if (state === undefined) {
    const missing = await missingLocalItem(project, ref);
    if (missing !== undefined) throw new NotFoundError(missing);
    throw new NotFoundError(
      `${ref} has no graph run${project.config.graph.enabled ? "; it begins when the item is started" : " (the process graph is off: graph.enabled)"}`,
    );
  }
  // The live session's usage against routing.budget (docs/fleet.md#budgets), as `why` and `sessions list` show it.
  const usage = (await import("../sessions/budget.js")).itemUsage(project, ref) ?? null;
  await printStatus(ref, state, usage, options, await edgeWait(project, state));
}

/**
 * Why a local ref with no run has none, when it is that the item does not exist: the tracker's
 * own words (`no work item local:demo#9; the items of "demo" are #1 to #3`). Asked only on this
 * path, so a status that finds its run loads no tracker. A GitHub item is not looked up: that
 * would be a network call, and a run's absence is the answer this command is asked for.
 */
async function missingLocalItem(project: Pick<Project, "paths" | "stores">, ref: string): Promise<string | undefined> {
  if (!ref.startsWith("local:")) return undefined;
  const [{ openLocalTracker }, { MemoryEventSink }, { parseWorkItemRef }, { WorkItemNotFoundError }] = await Promise.all([
    import("../../../trackers/local/database-tracker.js"),
    import("../../../events/log.js"),
    import("../../../workitem/ref.js"),
    import("../../../trackers/tracker.js"),
  ]);
  // Reading writes nothing, so the sink only satisfies the constructor.
  const tracker = openLocalTracker({ trackerDir: project.paths.trackerDir, events: new MemoryEventSink(), database: project.stores?.backend.database });
  try {
    await tracker.getItem(parseWorkItemRef(ref));
    return undefined;
  } catch (error) {
    if (error instanceof WorkItemNotFoundError) return error.message;
    throw error;
  }
}

async function printStatus(ref: string, state: GraphState, usage: UsageSummary | null, options: GraphStatusOptions, edge?: EdgeWait): Promise<void> {
  const phase = state.phase ?? null;
  if (options.json) {
    stdout.json(statusDocument(ref, state, phase, usage, edge));
    return;
  }
  stdout.line(`${ref}: ${state.graph} graph, node ${state.node}${phase ? ` (phase ${phase})` : ""}, ${state.status}, generation ${state.generation}`);
  const reason = edge?.text ?? state.reason;
  if (reason) stdout.line(`  ${state.reasonCode ?? "reason"}: ${reason}`);
  if (usage !== null) stdout.line(`  usage: ${(await import("../../../budget/summary.js")).usageLine(usage)}`);
  for (const entry of state.history.slice(-10).reverse()) {
    stdout.line(
      `  ${entry.at}  ${entry.kind.padEnd(13)} ${entry.node}${entry.outcome ? ` (${entry.outcome})` : ""} by ${entry.actor.kind} ${entry.actor.id}${entry.reason ? `: ${entry.reason}` : ""}`,
    );
  }
}

/**
 * `graph status` inside a session with its own socket: the session's own run, asked of the daemon
 * (a sandboxed session sees no state root to read it from). Another item's run is not its to see.
 */
async function graphStatusInSession(given: string, options: GraphStatusOptions): Promise<void> {
  const guard = await import("../../session-guard.js");
  const session = guard.sessionCredential();
  const socket = guard.sessionSocket();
  if (session === undefined || socket === undefined) {
    throw new UsageError(
      "THE_LOOP_SESSION_SOCKET is set but THE_LOOP_SESSION_TOKEN is not: a session's environment has both; run this inside the session the-loop started",
    );
  }
  const ref = fullRefOf(session.workItem) ?? session.workItem;
  if (fullRefOf(given) !== ref) {
    throw new UsageError(`inside a session, graph status shows the session's own item: ${ref} (name it in full, or as "$THE_LOOP_WORK_ITEM")`);
  }
  const [{ callSessionSocket }, { graphStateSchema }, { usageOfAnswerSchema }] = await Promise.all([
    import("../../../daemon/socket/rpc.js"),
    import("../../../graph-run/state.js"),
    import("../../../daemon/socket/why-situation.js"),
  ]);
  const state = await callSessionSocket(socket, "graph.status", {}, 30_000, { session, result: graphStateSchema.nullable() });
  if (state === null) throw new NotFoundError(`${ref} has no graph run`);
  const usage = await callSessionSocket(socket, "session.usage", {}, 30_000, { session, result: usageOfAnswerSchema });
  await printStatus(ref, state, usage, options);
}

function printAnswer(answer: z.output<typeof claimAnswerSchema>, json: boolean, verb: string): void {
  if (json) {
    stdout.json({
      moved: answer.moved,
      ref: answer.ref,
      graph: answer.graph,
      node: answer.node,
      status: answer.status,
      reason_code: answer.reasonCode,
      reason: answer.reason,
      notes: answer.notes ?? [],
    });
  } else if (answer.moved) {
    stdout.line(`${answer.ref} ${verb}: now at node ${answer.node} (${answer.status})`);
  } else {
    stdout.line(
      `${answer.ref} did not move${answer.node ? ` (still at node ${answer.node}, ${answer.status})` : ""}: ${answer.reasonCode ?? "refused"}: ${answer.reason ?? "no reason given"}`,
    );
  }
  // What the capabilities' hooks at the claim said (advisories, warnings, the next attempt's steps): the agent reads them here.
  if (!json) for (const note of answer.notes ?? []) stdout.line(note);
  if (!answer.moved) throw new AnswerGivenExit(EXIT_FAILURE);
}

/** The config file this command runs under, as the daemon compares it with its own. */
function configFileOf(project: Project): string | null {
  return project.loaded.source.path ? resolve(project.loaded.source.path) : null;
}

/**
 * `the-loop graph complete`: the agent's claim that its node is done. The daemon runs the node's
 * checks and decides; this prints its answer and exits 1 when the item did not move. Inside a
 * session the session's credential goes with it: the claim is the session's agent's, for its own
 * item only. Without one it is the operator's (the daemon records its OS user).
 */
export async function runGraphComplete(globals: GlobalOptions, given: string | undefined, options: GraphCompleteOptions): Promise<void> {
  const guard = await import("../../session-guard.js");
  const session = guard.sessionCredential();
  const socket = session !== undefined ? guard.sessionSocket() : undefined;
  if (session !== undefined && socket !== undefined) {
    // The session's own socket: its item is the claim's, under the daemon's config; nothing here is read.
    const timeout = Number(options.timeout);
    if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError(`--timeout takes seconds, got ${JSON.stringify(options.timeout)}`);
    const { callSessionSocket, claimAnswerSchema } = await daemonClaims();
    const answer = await callSessionSocket(
      socket,
      "graph.complete",
      { ref: given ?? session.workItem, node: options.node ?? null, configFile: null },
      timeout * 1000,
      {
        session,
        result: claimAnswerSchema,
      },
    );
    printAnswer(answer, options.json, "moved on");
    return;
  }
  const project = await openDaemonProject(globals);
  const written = given ?? process.env.THE_LOOP_WORK_ITEM;
  if (!written) throw new UsageError(`which work item? pass REF (inside a session, THE_LOOP_WORK_ITEM names it); ${SHELL_HASH_HINT}`);
  const timeout = Number(options.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) throw new UsageError(`--timeout takes seconds, got ${JSON.stringify(options.timeout)}`);
  const ref = canonicalRef(written, project);
  const { callDaemon, claimAnswerSchema } = await daemonClaims();
  const answer = await callDaemon(
    project.paths.root,
    "graph.complete",
    { ref, node: options.node ?? null, configFile: configFileOf(project) },
    timeout * 1000,
    {
      session,
      result: claimAnswerSchema,
    },
  );
  printAnswer(answer, options.json, "moved on");
}

/** `the-loop graph force`: an operator puts the item on a node; audited by the daemon (event, history, comment). */
export async function runGraphForce(globals: GlobalOptions, given: string, options: GraphForceOptions): Promise<void> {
  (await import("../../session-guard.js")).refuseInsideSession("graph force");
  const project = await openDaemonProject(globals);
  const ref = canonicalRef(given, project);
  if (options.reason.trim() === "") throw new UsageError("a force is audited: give the reason with --reason TEXT");
  const { callDaemon, claimAnswerSchema } = await daemonClaims();
  const answer = await callDaemon(project.paths.root, "graph.force", { ref, to: options.to, reason: options.reason }, 120_000, { result: claimAnswerSchema });
  printAnswer(answer, options.json, "forced");
}

export interface GraphAnswerOptions {
  readonly reason?: string;
  readonly json: boolean;
}

/**
 * `the-loop graph approve | request-changes`: the operator answers the item's gate, as the
 * keyword in an authorized person's comment would; decided and audited by the daemon (event,
 * history, marked comment). Refused, exit 1, when the item is not waiting for an answer.
 */
export async function runGraphAnswer(
  globals: GlobalOptions,
  given: string,
  decision: "approved" | "changes-requested",
  options: GraphAnswerOptions,
): Promise<void> {
  const command = decision === "approved" ? "graph approve" : "graph request-changes";
  (await import("../../session-guard.js")).refuseInsideSession(command);
  const project = await openDaemonProject(globals);
  const ref = canonicalRef(given, project);
  const reason = options.reason ?? "";
  if (decision === "changes-requested" && reason.trim() === "") {
    throw new UsageError("a request for changes says what to change: give it with --reason TEXT");
  }
  const { callDaemon, claimAnswerSchema } = await daemonClaims();
  const answer = await callDaemon(project.paths.root, "graph.answer", { ref, decision, reason: reason === "" ? null : reason }, 120_000, {
    result: claimAnswerSchema,
  });
  printAnswer(answer, options.json, decision === "approved" ? "approved" : "sent back for changes");
}
