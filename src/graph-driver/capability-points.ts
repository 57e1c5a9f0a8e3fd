import { activeHooks, fragmentText } from "../capabilities/active.js";
import { ConsentChangedError } from "../capabilities/consented.js";
import type { ActiveHook } from "../capabilities/active.js";
import { commandWordsOf, decideGate, decideStepFailure, failureOf, instructionOf, pointText, readCheckOutput } from "../capabilities/dispatch.js";
import type { CheckOutcome, GateHook, PointTextParts, StepHook } from "../capabilities/dispatch.js";
import { runtimeHalt } from "../capabilities/runtime-compat.js";
import { parsePlan, parseTrackerTasks, resolveTaskContent, resolveTrackerTask, resolverFor, taskContentText } from "../capabilities/tasks.js";
import type { TaskResolutionFailure } from "../capabilities/tasks.js";
import { messageOf } from "../errors.js";
import { blockRun, runHasEnded } from "../graph-run/advance.js";
import { firstArtifact, readChecklist, rootOf } from "../graph-run/checks.js";
import { pointsAt } from "../graph/points.js";
import type { PointMoment } from "../graph/points.js";
import type { GraphState } from "../graph-run/state.js";
import type { Graph, GraphActor, GraphNode, LoopPoint } from "../graph/types.js";
import { isLive } from "../registry/record.js";
import { runBounded } from "../subprocess/index.js";
import { markSelfAuthored, parseWorkItemRef } from "../workitem/index.js";
import { commentReason } from "../sessions/announce.js";
import type { CapabilityRuntime, ContextNeeds } from "../sessions/context.js";
import { STAY } from "./move.js";
import type { MoveDecision } from "./move.js";

/**
 * The capabilities' hooks at the loop points the graph's nodes bind (docs/capabilities.md,
 * "Dispatch"). Every active hook of every kind is dispatched, in code: a contribution's fragment
 * goes verbatim into the assignment under its role, a skill or agent step becomes an instruction
 * there, a command step runs `the-loop <words> --phase P --work-item REF --raw` and is waited
 * for, a gate's check is evaluated and its verdict applied, and a node with a task plan has its
 * tasks' content resolved (execute:task) — a resolver's failure blocks the node. The decisions
 * are src/capabilities/dispatch.ts; this runs the processes and writes what they decided.
 */

/** The longest a capability's step, query or predicate may run when the daemon does not say. */
export const CAPABILITY_HOOK_TIMEOUT_MS = 10 * 60_000;

const DAEMON: GraphActor = { kind: "daemon", id: "the-loop" };

/** Why a pass stops the node: a blocking gate's block, a halting step or check, a resolver's failure. */
export interface PointHalt {
  readonly reasonCode: "capability-gate" | "capability-step" | "task-resolver" | "capability-changed" | "capability-runtime";
  readonly reason: string;
}

export interface PointPass {
  /** The assignment's capability section (empty when the points gave it nothing). */
  readonly text: string;
  /** What the agent is told besides: advisories, warnings. */
  readonly notes: readonly string[];
  readonly halt?: PointHalt;
}

const NOTHING: PointPass = { text: "", notes: [] };

interface PassInput {
  readonly graph: Graph;
  readonly ref: string;
  readonly node: GraphNode;
  readonly phase: string;
  readonly points: readonly LoopPoint[];
  /** The session's working directory: predicates read artifacts there, commands run there. */
  readonly cwd: string;
  /** Resolve the tasks of the node's plan (execute:task), after the points. */
  readonly resolveTasks: boolean;
  /** The harness of the item's live session (its runtime, for runtimeCompat); undefined when it has none. */
  readonly harness: string | undefined;
}

/** The harness of the item's live session, the runtime a capability's runtimeCompat is read against. */
function sessionHarness(ctx: ContextNeeds<never, "registry">, ref: string): string | undefined {
  const record = ctx.options.registry.get(ref);
  return record !== undefined && isLive(record) ? record.harness : undefined;
}

/** The session's working directory, where the item's artifacts are. */
export function sessionCwd(ctx: ContextNeeds<never, "registry" | "spawnCwd">, ref: string): string {
  const record = ctx.options.registry.get(ref);
  return record !== undefined && isLive(record) ? record.cwd : ctx.options.spawnCwd;
}

/** The label word a command step is told: the node's phase, else the run's, else the node's id. */
function phaseOf(node: GraphNode, state: GraphState): string {
  return node.phase ?? state.phase ?? node.id;
}

/** Passes the points `node` binds at `moment`; nothing at all when no capability is installed. */
export async function passAt(
  ctx: ContextNeeds<never, "events" | "graph" | "registry">,
  graph: Graph,
  state: GraphState,
  node: GraphNode,
  moment: PointMoment,
  cwd: string,
): Promise<PointPass> {
  const runtime = ctx.options.graph?.capabilities;
  if (runtime === undefined || runtime.loaded.length === 0) return NOTHING;
  const points = pointsAt(node, moment);
  const resolveTasks = moment === "enter" && node.taskPlan !== undefined && node.actor === "agent" && !node.terminal;
  if (points.length === 0 && !resolveTasks) return NOTHING;
  const harness = sessionHarness(ctx, state.ref);
  return passPoints(ctx, runtime, { graph, ref: state.ref, node, phase: phaseOf(node, state), points, cwd, resolveTasks, harness });
}

/**
 * An approval at `node` (a person's gate answer): its blocking gates evaluated again, on the
 * artifacts as they are now — a human gate's (its `:pre` points, passed on entry), or an agent
 * node's claim gates (its `execute:wave:post` and `:post` points), whose pass the approval stands
 * in for. Only gates run: no step, contribution or resolver runs again, and an advisory gate or
 * an agent's verdict is not asked. The first that still blocks, or undefined when none does.
 * `graph force` is the operator's way past them (docs/capabilities.md, "A blocking gate holds").
 */
export async function recheckGates(
  ctx: ContextNeeds<never, "events" | "graph" | "registry" | "spawnCwd">,
  graph: Graph,
  state: GraphState,
  node: GraphNode,
): Promise<PointHalt | undefined> {
  const runtime = ctx.options.graph?.capabilities;
  if (runtime === undefined || runtime.loaded.length === 0 || node.terminal) return undefined;
  const moments: readonly PointMoment[] = node.actor === "human" ? ["enter"] : ["attempt-end", "claim-passed"];
  const points = moments.flatMap((moment) => pointsAt(node, moment));
  const input: PassInput = {
    graph,
    ref: state.ref,
    node,
    phase: phaseOf(node, state),
    points,
    cwd: sessionCwd(ctx, state.ref),
    resolveTasks: false,
    harness: sessionHarness(ctx, state.ref),
  };
  for (const point of points) {
    for (const hook of activeHooks(runtime.loaded, point)) {
      if (hook.kind !== "gate" || !hook.blocking || instructionOf(hook, point) !== undefined) continue;
      const outcome = await evaluateCheck(runtime, input, hook);
      const verdict = decideGate(hook, outcome);
      ctx.options.events.emit("capability.gate_decided", {
        ...hookFields(input, point, hook),
        check: hook.check.query !== undefined ? "query" : "predicate",
        blocking: hook.blocking,
        decision: verdict.decision,
        message: verdict.message,
        ...(verdict.error !== undefined ? { error: verdict.error } : {}),
      });
      if (verdict.halt) return { reasonCode: "capability-gate", reason: verdict.message };
    }
  }
  return undefined;
}

async function passPoints(ctx: ContextNeeds<never, "events">, runtime: CapabilityRuntime, input: PassInput): Promise<PointPass> {
  const parts = {
    points: [...input.points],
    contributions: [] as { role: string; text: string }[],
    instructions: [] as string[],
    notes: [] as string[],
    tasks: [] as PointTextParts["tasks"][number][],
  };
  const finish = (halt?: PointHalt): PointPass => ({ text: pointText(parts), notes: parts.notes, ...(halt ? { halt } : {}) });
  for (const point of input.points) {
    for (const hook of activeHooks(runtime.loaded, point)) {
      const halt = refuseRuntime(ctx, runtime, input, point, hook) ?? (await dispatchHook(ctx, runtime, input, point, hook, parts));
      // A gate's block (or a halting step) stops the step: no later hook, no later point.
      if (halt !== undefined) return finish(halt);
    }
  }
  if (input.resolveTasks) {
    const halt = await resolveTasks(ctx, runtime, input, parts);
    if (halt !== undefined) return finish(halt);
  }
  return finish();
}

/** A bundle file that is no longer what was consented to: its use refused, recorded, and the node halted. */
function refuseChanged(ctx: ContextNeeds<never, "events">, input: PassInput, point: string, source: string, error: ConsentChangedError): PointHalt {
  ctx.options.events.emit("capability.use_refused", {
    work_item: input.ref,
    graph: input.graph.name,
    node: input.node.id,
    point,
    capability: error.capability,
    hook: source,
    path: error.dir,
    files: error.paths.join(", "),
    reason: error.message,
  });
  return { reasonCode: "capability-changed", reason: error.message };
}

/**
 * A hook of a capability whose runtimeCompat excludes the session's harness: not run, and the node
 * halted naming the harness and the fix (runtime-compat.ts says why the-loop does not drop it quietly).
 */
function refuseRuntime(
  ctx: ContextNeeds<never, "events">,
  runtime: CapabilityRuntime,
  input: PassInput,
  point: LoopPoint,
  hook: ActiveHook,
): PointHalt | undefined {
  if (input.harness === undefined) return undefined;
  const capability = runtime.loaded.find((loaded) => loaded.manifest.id === hook.capId);
  const reason = capability === undefined ? undefined : runtimeHalt(capability.manifest, input.harness);
  if (reason === undefined) return undefined;
  ctx.options.events.emit("capability.runtime_refused", { ...hookFields(input, point, hook), harness: input.harness, reason });
  return { reasonCode: "capability-runtime", reason };
}

function hookFields(input: PassInput, point: LoopPoint, hook: ActiveHook) {
  return { work_item: input.ref, graph: input.graph.name, node: input.node.id, point, capability: hook.capId, hook: hook.source };
}

async function dispatchHook(
  ctx: ContextNeeds<never, "events">,
  runtime: CapabilityRuntime,
  input: PassInput,
  point: LoopPoint,
  hook: ActiveHook,
  parts: { contributions: { role: string; text: string }[]; instructions: string[]; notes: string[] },
): Promise<PointHalt | undefined> {
  const events = ctx.options.events;
  switch (hook.kind) {
    case "contribution": {
      const capability = runtime.loaded.find((loaded) => loaded.manifest.id === hook.capId);
      if (capability === undefined) return undefined;
      try {
        parts.contributions.push({ role: hook.into, text: await fragmentText(capability, hook.fragment) });
      } catch (error) {
        // Not what was consented to: never delivered, and the node stops until consent is given again.
        if (error instanceof ConsentChangedError) return refuseChanged(ctx, input, point, hook.source, error);
        parts.notes.push(`warning: the contribution ${hook.capId} ${hook.source} could not be read: ${messageOf(error)}`);
      }
      return undefined;
    }
    case "step":
      return dispatchStep(ctx, runtime, input, point, hook, parts);
    case "gate": {
      const fields = hookFields(input, point, hook);
      const instruction = instructionOf(hook, point);
      if (instruction !== undefined) {
        // An agent's verdict is never blocking: it is the agent's to ask, and its answer is advisory.
        parts.instructions.push(instruction);
        events.emit("capability.gate_decided", { ...fields, check: "agentVerdict", blocking: false, decision: "agent-verdict", message: hook.message ?? "" });
        return undefined;
      }
      const outcome = await evaluateCheck(runtime, input, hook);
      const verdict = decideGate(hook, outcome);
      events.emit("capability.gate_decided", {
        ...fields,
        check: hook.check.query !== undefined ? "query" : "predicate",
        blocking: hook.blocking,
        decision: verdict.decision,
        message: verdict.message,
        ...(verdict.error !== undefined ? { error: verdict.error } : {}),
      });
      if (verdict.halt) return { reasonCode: "capability-gate", reason: verdict.message };
      if (verdict.message !== "") parts.notes.push(verdict.message);
      return undefined;
    }
    default:
      return undefined;
  }
}

async function dispatchStep(
  ctx: ContextNeeds<never, "events">,
  runtime: CapabilityRuntime,
  input: PassInput,
  point: LoopPoint,
  hook: StepHook,
  parts: { instructions: string[]; notes: string[] },
): Promise<PointHalt | undefined> {
  const events = ctx.options.events;
  const fields = hookFields(input, point, hook);
  const instruction = instructionOf(hook, point);
  if (instruction !== undefined) {
    parts.instructions.push(instruction);
    const how = hook.ref.skill !== undefined ? "skill" : "agent";
    events.emit("capability.step_run", { ...fields, how, ref: hook.ref.skill ?? hook.ref.agent ?? "" });
    return undefined;
  }
  const words = commandWordsOf(hook.ref.command, `${hook.source}.ref.command`);
  if ("refused" in words) {
    // A malformed command is a malformed manifest: warned and skipped, whatever its onError.
    events.emit("capability.step_failed", { ...fields, ref: String(hook.ref.command ?? ""), error: words.refused, on_error: "skip" });
    parts.notes.push(`warning: ${hook.capId} ${words.refused}`);
    return undefined;
  }
  const result = await runSelf(runtime, input, [...words.words, "--phase", input.phase, "--work-item", input.ref, "--raw"]);
  const failure = failureOf(result, `\`the-loop ${words.words.join(" ")}\``);
  if (failure === undefined) {
    events.emit("capability.step_run", { ...fields, how: "command", ref: words.words.join(" ") });
    return undefined;
  }
  const verdict = decideStepFailure(hook, failure);
  events.emit("capability.step_failed", { ...fields, ref: words.words.join(" "), error: failure, on_error: hook.onError });
  if (verdict.halt) return { reasonCode: "capability-step", reason: verdict.message };
  parts.notes.push(verdict.message);
  return undefined;
}

/** A query runs its command; a predicate goes, as JSON in one argv element, to the-loop's evaluator. Neither meets a shell. */
async function evaluateCheck(runtime: CapabilityRuntime, input: PassInput, gate: GateHook): Promise<CheckOutcome> {
  if (gate.check.predicate !== undefined) {
    const result = await runSelf(runtime, input, ["loop", "predicate", JSON.stringify(gate.check.predicate), "--cwd", input.cwd, "--raw"]);
    return readCheckOutput(result, `the predicate ${gate.check.predicate.kind}`);
  }
  const words = commandWordsOf(gate.check.query, `${gate.source}.check.query`);
  if ("refused" in words) return { ok: false, error: words.refused };
  const result = await runSelf(runtime, input, [...words.words, "--phase", input.phase, "--work-item", input.ref, "--raw"]);
  return readCheckOutput(result, `\`the-loop ${words.words.join(" ")}\``);
}

function runSelf(runtime: CapabilityRuntime, input: PassInput, args: readonly string[]) {
  return runBounded({
    argv: [...runtime.selfArgv, ...args],
    cwd: input.cwd,
    env: { ...runtime.env, THE_LOOP_WORK_ITEM: input.ref },
    timeoutMs: runtime.timeoutMs,
    keep: "tail",
  });
}

/** One task of the node's plan to resolve, in either grammar, and how. */
interface PlanEntry {
  readonly id: string;
  readonly title: string;
  readonly line: number;
  resolve(): Promise<{ readonly content: string } | TaskResolutionFailure | undefined>;
}

/**
 * The tasks of the plan a resolver may own, in the plan's order, whatever grammar each is written
 * in: the-loop's checklist items (unticked, their id's prefix a resolver's) and gsd-core's
 * `<task tracker-id>` elements (a checkpoint's is never read). A task no resolver owns, or one it
 * resolves to nothing, keeps the plan's own text: it is left out, as gsd-core falls back to the plan.
 */
function planEntries(runtime: CapabilityRuntime, plan: string): PlanEntry[] {
  const loaded = runtime.loaded;
  const checklist = parsePlan(plan)
    .filter((task) => !task.done && resolverFor(loaded, task.id) !== undefined)
    .map((task): PlanEntry => ({
      id: task.id,
      title: task.title,
      line: task.line,
      resolve: async () => {
        const resolution = await resolveTaskContent(loaded, task.id);
        return resolution.kind === "unresolved" ? undefined : resolution.kind === "resolved" ? { content: resolution.content } : resolution;
      },
    }));
  const tracker = parseTrackerTasks(plan).map((task): PlanEntry => ({
    id: task.trackerId,
    title: task.name,
    line: task.line,
    resolve: async () => {
      const resolution = await resolveTrackerTask(loaded, task.trackerId);
      return resolution.kind === "unresolved" ? undefined : resolution.kind === "resolved" ? { content: taskContentText(resolution.content) } : resolution;
    },
  }));
  return [...checklist, ...tracker].sort((a, b) => a.line - b.line);
}

/**
 * execute:task: each task of the node's plan a resolver owns gets its content from that resolver,
 * in the-loop's checklist grammar or gsd-core's `<task tracker-id>` one. A failure blocks the
 * node: the agent is never handed a task without the content it was meant to have (gsd-core's
 * hard halt). A task no resolver owns keeps the plan's own text.
 */
async function resolveTasks(
  ctx: ContextNeeds<never, "events">,
  runtime: CapabilityRuntime,
  input: PassInput,
  parts: { tasks: PointTextParts["tasks"][number][]; notes: string[] },
): Promise<PointHalt | undefined> {
  const planPath = input.node.taskPlan;
  if (planPath === undefined) return undefined;
  const plan = await readPlan(input.cwd, planPath);
  if (typeof plan !== "string") {
    if (plan.missing) return undefined;
    parts.notes.push(`warning: the task plan ${planPath} was not read: ${plan.problem}`);
    return undefined;
  }
  for (const task of planEntries(runtime, plan)) {
    const resolution = await task.resolve();
    if (resolution === undefined) continue;
    if ("content" in resolution) {
      parts.tasks.push({ id: task.id, title: task.title, content: resolution.content });
      continue;
    }
    if (resolution.consentChanged !== undefined) return refuseChanged(ctx, input, "execute:task", "taskContentResolver", resolution.consentChanged);
    ctx.options.events.emit("capability.resolver_failed", {
      work_item: input.ref,
      graph: input.graph.name,
      node: input.node.id,
      capability: resolution.capability,
      task_id: task.id,
      error: resolution.error,
    });
    return { reasonCode: "task-resolver", reason: `the content of task ${task.id} could not be resolved (${planPath}): ${resolution.error}` };
  }
  return undefined;
}

/**
 * The plan, read as the graph's checks read a checklist (nothing in the working directory is
 * trusted: a regular file inside it only, no symlink out); `missing` when it is not there yet.
 */
async function readPlan(cwd: string, path: string): Promise<string | { readonly missing: boolean; readonly problem: string }> {
  const root = await rootOf(cwd);
  if (typeof root === "string") return { missing: true, problem: root };
  const found = await firstArtifact(root, [path]);
  if (typeof found === "string") return { missing: found.endsWith(" is missing"), problem: found };
  const text = await readChecklist(found.real);
  if (text === undefined || text === "too-large") return { missing: false, problem: text === "too-large" ? "it is too large to read" : "it could not be read" };
  return text;
}

// ---- applying a pass -------------------------------------------------------------------------

/**
 * A pass that halted: the item is blocked at the node it passed, if it is still there in the same
 * generation — a move (graph-move.ts), decided on the record under its lock; then postBlock's comment.
 * The block ends the loop run (RUN_ENDING_BLOCKS): its loop events say so — loop.generation.post
 * and loop.terminal, status `blocked`, cause `contract`, the halt's reason code — and an answer or
 * a force after it begins a new run. A block on a run that has ended already (blocked by a denial,
 * say) moves nothing.
 */
export function blockAtNode(graph: Graph, current: GraphState | undefined, nodeId: string, generation: number, halt: PointHalt, at: Date): MoveDecision<never> {
  if (current === undefined || current.node !== nodeId || current.generation !== generation || runHasEnded(current)) return STAY;
  const blocked = blockRun(graph, current, { reasonCode: halt.reasonCode, reason: halt.reason, actor: DAEMON, at });
  return blocked.kind === "refuse" ? STAY : { kind: "move", transition: blocked, loop: { graph, before: current, transition: blocked, actor: DAEMON } };
}

/** The block's marked comment on the item. */
export async function postBlock(ctx: ContextNeeds<never, "events" | "trackers">, graph: Graph, ref: string, nodeId: string, halt: PointHalt): Promise<void> {
  try {
    await ctx.options.trackers.forRef(ref).postComment(parseWorkItemRef(ref), capabilityBlockText(ref, nodeId, halt));
  } catch (error) {
    ctx.options.events.emit("graph.effect_failed", { work_item: ref, graph: graph.name, node: nodeId, effect: "capability-block", error: messageOf(error) });
  }
}

/** The marked comment of a capability's block: its reason, one line, bounded and redacted. */
export function capabilityBlockText(ref: string, node: string, halt: PointHalt): string {
  const what = {
    "task-resolver": "a task's content could not be resolved",
    "capability-gate": "a capability's gate stopped it",
    "capability-step": "a capability's step failed and halts",
    "capability-changed": "a capability's bundle changed since it was consented to, so it was not used",
    "capability-runtime": "a capability does not run in the harness of its session",
  }[halt.reasonCode];
  return markSelfAuthored(
    [
      `🛑 **the-loop**: \`${ref}\` is blocked at node \`${node}\`: ${what}.`,
      "",
      `> ${commentReason(halt.reason)}`,
      "",
      "Fix what it names; then an authorized person's gate answer, or `the-loop graph force`, resumes it.",
    ].join("\n"),
  );
}

/**
 * Keeps what the points gave the node's assignment on its state, so every later delivery of the
 * same assignment (a resumed session, a restarted one) says the same without running anything again.
 */
export async function rememberPointText(
  ctx: ContextNeeds<never, "graph">,
  ref: string,
  nodeId: string,
  generation: number,
  text: string,
): Promise<GraphState | undefined> {
  const states = ctx.options.graph?.states;
  if (states === undefined || text === "") return undefined;
  return states.transaction(ref, async (tx) => {
    const current = tx.read();
    if (current === undefined || current.node !== nodeId || current.generation !== generation) return undefined;
    return tx.write({ ...current, capabilityText: { node: nodeId, generation, text } });
  });
}
