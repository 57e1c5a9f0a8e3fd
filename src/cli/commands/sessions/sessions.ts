import { userInfo } from "node:os";
import { dirname } from "node:path";
import type { ControlCommand, ControlOutcome, ControlRequest } from "../../../control/types.js";
import { AnswerGivenExit, EXIT_FAILURE, ExitError, NotFoundError, UsageError, messageOf } from "../../../errors.js";
import type { Runtime, RuntimeInput } from "../../../daemon/runtime.js";
import { RegistryRecordError, isLive } from "../../../registry/record.js";
import type { SessionRecord } from "../../../registry/record.js";
import { workItemActedOn } from "../../../registry/acted-on.js";
import { queuedPlace } from "./queued.js";
import { effectSentence } from "./effect-sentence.js";
import { WorkItemNotFoundError } from "../../../trackers/tracker.js";
import type { WorkItemState } from "../../../trackers/tracker.js";
import { RefError, formatWorkItemRef, parseWorkItemRef } from "../../../workitem/index.js";
import { canonicalRef } from "../../canonical-ref.js";
import { openDaemonProject } from "../../context.js";
import { SHELL_HASH_HINT } from "../../ref-hint.js";
import type { GlobalOptions, Project } from "../../context.js";
import { stderr, stdout } from "../../output.js";
import { refuseInsideSession } from "../../session-guard.js";
import { allowedHarnesses } from "../../../routing/harness-choice.js";
import type { ControlCommentResult } from "../../../dispatch/announce-control.js";

export interface SessionsCloseOptions {
  readonly workItem: string;
  readonly json: boolean;
}

/**
 * Loaded only by the commands that act on sessions: listing must not pay for the dispatcher. The
 * project is opened with openDaemonProject, so the runtime is built as the running daemon's is.
 */
export async function runtimeOf(project: Project): Promise<Runtime> {
  const { composeRuntime } = await import("../../../daemon/runtime.js");
  return composeRuntime(runtimeInputOf(project));
}

function runtimeInputOf(project: Project): RuntimeInput {
  return {
    config: project.config,
    paths: project.paths,
    baseDir: project.loaded.baseDir,
    configFile: project.loaded.source.path ?? undefined,
    events: project.events,
    ...(project.stores !== undefined ? { stores: project.stores } : {}),
  };
}

export function recordOrFail(runtime: Runtime, ref: string): SessionRecord {
  const record = runtime.registry.get(ref);
  if (!record) throw new NotFoundError(`no session for ${ref}; see \`the-loop sessions list\``);
  return record;
}

export async function runSessionsClose(globals: GlobalOptions, options: SessionsCloseOptions): Promise<void> {
  refuseInsideSession("sessions close");
  const project = await openDaemonProject(globals, "sessions");
  const runtime = await runtimeOf(project);
  const ref = canonicalRef(options.workItem, project);
  // On a shared database, an item another live daemon owns is closed by that daemon.
  const owned = (await (await import("./forwarded.js")).answeredByOwner(project, { command: "close", ref, actor: localActor() })) as
    { closed: string | null } | undefined;
  const { closeSession } = await import("../../../sessions/close.js");
  const closed =
    owned !== undefined ? (owned.closed !== null ? { tmuxTarget: owned.closed } : undefined) : await closeSession(runtime.closeOptions, ref, "cli");
  if (!closed) throw new NotFoundError(`${ref} has no live session; see \`the-loop sessions list\``);
  if (options.json) {
    stdout.json({ closed: ref, tmuxTarget: closed.tmuxTarget });
    return;
  }
  stdout.line(`closed the session of ${ref} (${closed.tmuxTarget})`);
}

export interface SessionsLinkPrOptions {
  /** Defaults to THE_LOOP_WORK_ITEM, which every session has. */
  readonly workItem?: string;
  readonly pullRequest: string;
  readonly json: boolean;
}

/**
 * `--pull-request` as typed: a bare number (or `#N`) names an item of the work item's own
 * repository — or, for a local work item, of its local project — anything else is a full ref.
 */
export function pullRequestRef(text: string, workItemRef: string, project: Project): string {
  const bare = /^#?([0-9]+)$/.exec(text.trim());
  if (bare === null) return canonicalRef(text, project);
  // The canonical ref up to its `#`: the tracker, host and repository (or local project).
  const repository = formatWorkItemRef(parseWorkItemRef(workItemRef)).replace(/#[0-9]+$/, "");
  try {
    // Parsed, not assembled, so `0` or a number past the tracker's range is a malformed ref (exit 2), not an item to look up.
    return formatWorkItemRef(parseWorkItemRef(`${repository}#${bare[1] ?? ""}`));
  } catch (error) {
    if (error instanceof RefError) throw new UsageError(error.message);
    throw error;
  }
}

/** The host of a GitHub ref; undefined for any other tracker's. */
function hostOfGitHub(ref: string): string | undefined {
  const parsed = parseWorkItemRef(ref);
  return parsed.tracker === "github" ? parsed.host : undefined;
}

/** The item as its tracker knows it; a failure to ask is an error of its own, never a silent bind. */
async function trackedItem(runtime: Runtime, ref: string): Promise<WorkItemState> {
  try {
    return await runtime.trackers.forRef(ref).getItem(parseWorkItemRef(ref));
  } catch (error) {
    if (error instanceof WorkItemNotFoundError) throw new NotFoundError(`${error.message}; nothing was bound`);
    throw new ExitError(`could not check ${ref} on its tracker: ${messageOf(error)}; nothing was bound`);
  }
}

/**
 * Binds a pull request to a work item explicitly, so the PR's events reach the work item's
 * session whatever they name (an explicit binding wins over every inference). The local tracker
 * has no pull requests, so there any existing item may stand for one.
 */
export async function runSessionsLinkPr(globals: GlobalOptions, options: SessionsLinkPrOptions): Promise<void> {
  const project = await openDaemonProject(globals, "sessions");
  const given = options.workItem ?? process.env.THE_LOOP_WORK_ITEM;
  if (!given) {
    throw new UsageError(`which work item? pass --work-item REF (inside a session, THE_LOOP_WORK_ITEM names it); ${SHELL_HASH_HINT}`);
  }
  const ref = canonicalRef(given, project);
  const pullRequest = pullRequestRef(options.pullRequest, ref, project);
  if (pullRequest === ref) throw new UsageError(`${ref} cannot be bound to itself`);
  const [itemHost, pullRequestHost] = [hostOfGitHub(ref), hostOfGitHub(pullRequest)];
  // One the-loop serves one GitHub host, so a PR on another would never bring an event here.
  if (itemHost !== undefined && pullRequestHost !== undefined && itemHost !== pullRequestHost) {
    throw new UsageError(
      `${pullRequest} is on ${pullRequestHost}, but ${ref} is on ${itemHost}: a pull request can only be bound to a work item of its own host`,
    );
  }

  const runtime = await runtimeOf(project);
  const workItem = (await trackedItem(runtime, ref)).item;
  const target = await trackedItem(runtime, pullRequest);
  if (target.item.tracker !== "local" && target.item.kind !== "pull_request") {
    throw new UsageError(`${pullRequest} is an issue, not a pull request`);
  }

  const now = new Date();
  const previous = runtime.links.get(pullRequest);
  const changed = await runtime.links.bind(pullRequest, workItem, "explicit", now);
  const linkedAt = now.toISOString();
  const record = await runtime.registry.update(ref, (current) => {
    if (!isLive(current)) return undefined;
    const listed = current.pullRequests ?? [];
    if (listed.some((link) => link.ref === pullRequest && link.source === "explicit")) return undefined;
    return {
      ...current,
      pullRequests: [...listed.filter((link) => link.ref !== pullRequest), { ref: pullRequest, source: "explicit", linkedAt }],
    };
  });
  // The PR's events no longer reach the item it was bound to before.
  if (previous !== undefined && previous.workItem.ref !== ref) {
    await runtime.registry.update(previous.workItem.ref, (current) =>
      current.pullRequests?.some((link) => link.ref === pullRequest)
        ? { ...current, pullRequests: current.pullRequests.filter((link) => link.ref !== pullRequest) }
        : undefined,
    );
  }
  if (changed) project.events.emit("session.pr_linked", { work_item: ref, pull_request: pullRequest, linked_by: "explicit" });

  const session = record !== undefined && isLive(record) ? record.tmuxTarget : undefined;
  if (options.json) {
    stdout.json({ workItem: ref, pullRequest, source: "explicit", ...(session ? { session } : {}) });
    return;
  }
  const bound = changed ? `bound ${pullRequest} to ${ref}` : `${pullRequest} was already bound to ${ref}`;
  stdout.line(session ? `${bound}: its events reach the session ${session}` : `${bound}: its events go to the session of ${ref} once it has one`);
}

export interface SessionsControlOptions {
  /** Defaults to THE_LOOP_WORK_ITEM, which every session has. */
  readonly workItem?: string;
  /** False under --no-comment: leave no comment on the work item. */
  readonly comment: boolean;
  readonly json: boolean;
  /** start only: the graph the item's run begins on, instead of graph.default. */
  readonly graph?: string;
  /** start only: the harness the item's session runs (one the config allows). */
  readonly agent?: string;
  readonly budget?: string; // resume only: `+N` raises the budget limit (docs/fleet.md#budgets)
}

/** A start's `--graph`, checked: an unknown name is refused here (exit 2), not run on the default as a comment's is. */
async function checkedGraphChoice(project: Project, name: string): Promise<string> {
  const { loadGraphs } = await import("../../../graph/registry.js");
  const configFile = project.loaded.source.path ?? undefined;
  const configDir = configFile !== undefined ? dirname(configFile) : project.loaded.baseDir;
  const loaded = await loadGraphs(project.config, configDir, configFile !== undefined ? { configFile } : {});
  const known = [...loaded.graphs.keys()].join(", ");
  if (!loaded.graphs.has(name)) throw new UsageError(`no graph is named ${JSON.stringify(name)} (--graph); known: ${known}`);
  if (!loaded.enabled) {
    stderr.warn(`graphs are off (graph.enabled: false): the start records graph ${name}, and the item's next run begins on it once they are on`);
  }
  return name;
}

/** A start's `--agent`, checked: only a harness the config names (docs/agents.md, "Choosing an agent per work item"); else exit 2. */
function checkedAgentChoice(project: Project, name: string): string {
  const allowed = allowedHarnesses(project.config.routing);
  if (!allowed.includes(name)) {
    throw new UsageError(
      `--agent ${JSON.stringify(name)} is not a harness this config allows (${allowed.join(", ")}); name it under routing.harnesses (or in routing.harnessByLabel) first`,
    );
  }
  return name;
}

/** The person at the keyboard: the local OS user (shell access is the authority: docs/control.md#from-the-cli). */
export function localActor(): string {
  try {
    const name = userInfo().username;
    if (name) return name;
  } catch {
    // No passwd entry for the uid (a container): the environment still names someone. Shell access is
    // the authority here, so the name only says who it was; it grants nothing.
  }
  return process.env.USER || process.env.LOGNAME || "unknown";
}

/**
 * Leaves the command on the work item's thread (dispatch/announce-control.ts, which the
 * dashboard's buttons share): best-effort, a failure is reported and the command stands.
 */
async function announceOnThread(runtime: Runtime, project: Project, request: ControlRequest): Promise<ControlCommentResult> {
  const { announceControl } = await import("../../../dispatch/announce-control.js");
  return announceControl({ trackers: runtime.trackers, events: project.events, keywords: project.config.routing.control.keywords }, request);
}

/**
 * `the-loop sessions start|stop|pause|resume`: the same command the comment keyword gives (docs/control.md#from-the-cli),
 * applied by the dispatcher the daemon uses (a start with no live session spawns here and now,
 * docs/control.md#from-the-cli), recorded with source `cli`, then left on the work item's thread as a marked
 * comment. Every applied command is posted, a no-op included (it is still a control action and
 * the thread is its record); a refused one is not, as nothing happened. Exit 0 when the command
 * applied (a no-op included), 1 when it was refused or its start is pending a failed spawn.
 */
/** Closes the item's session through close.ts when its record does not parse; otherwise nothing. */
async function closeDamagedSession(runtime: Runtime, ref: string): Promise<void> {
  try {
    runtime.registry.get(ref);
    return;
  } catch (error) {
    if (!(error instanceof RegistryRecordError)) return;
  }
  const { closeSession } = await import("../../../sessions/close.js");
  const closed = await closeSession(runtime.closeOptions, ref, "stopped");
  if (closed !== undefined) stderr.warn(`the session record of ${ref} was damaged: moved aside, its tmux session ${closed.tmuxTarget} ended`);
}

/** The command run by this process's own dispatcher, under the hooks the daemon would run. */
async function controlHere(project: Project, runtime: Runtime, request: ControlRequest): Promise<ControlOutcome> {
  const { loadCommandHooks, loadDaemonHooks } = await import("../../../daemon/hooks.js");
  // A start does what the daemon does, so it refuses a declaration that does not load, as the
  // daemon does: a required hook is never bypassed from the CLI. Stop, pause and resume hold an
  // agent back, which must work whatever state the hooks are in: they run with none instead.
  const hooks =
    request.command === "start"
      ? await loadDaemonHooks(runtimeInputOf(project))
      : await loadCommandHooks(runtimeInputOf(project), (message) => stderr.warn(message));
  const dispatcher = await runtime.dispatcher((message) => stderr.warn(message), hooks);
  try {
    return await dispatcher.control(request);
  } catch (error) {
    // The tracker's, the lock's and a damaged record's errors say what to do; anything else gets its context here.
    if (error instanceof ExitError) throw error;
    throw new ExitError(`could not carry out the ${request.command} of ${request.ref}: ${messageOf(error)}`);
  } finally {
    await dispatcher.drain();
    await hooks.close();
  }
}

export async function runSessionsControl(globals: GlobalOptions, command: ControlCommand, options: SessionsControlOptions): Promise<void> {
  refuseInsideSession(`sessions ${command}`);
  const project = await openDaemonProject(globals, "sessions");
  const given = options.workItem ?? process.env.THE_LOOP_WORK_ITEM;
  if (!given) {
    throw new UsageError(`which work item? pass --work-item REF (inside a session, THE_LOOP_WORK_ITEM names it); ${SHELL_HASH_HINT}`);
  }
  const named = canonicalRef(given, project);
  const runtime = await runtimeOf(project);
  const ref = workItemActedOn(named, runtime.links, runtime.registry);
  if (ref !== named) {
    stderr.line(`note: ${named} is bound to ${ref}, so the ${command} acts on ${ref}, as the keyword in a comment on ${named} would`);
  }
  const graph = command === "start" && options.graph !== undefined ? await checkedGraphChoice(project, options.graph) : undefined;
  const harness = command === "start" && options.agent !== undefined ? checkedAgentChoice(project, options.agent) : undefined;
  const note = `the-loop sessions ${command}${graph !== undefined ? ` --graph ${graph}` : ""}${harness !== undefined ? ` --agent ${harness}` : ""}`;
  const request: ControlRequest = {
    ref,
    command,
    source: "cli",
    actor: localActor(),
    note,
    ...(graph !== undefined ? { graph } : {}),
    ...(harness !== undefined ? { harness } : {}),
  };
  // A stop must end an agent whose session record does not parse: the record is moved aside and
  // its tmux session ended by name (close.ts), and the stop is then recorded as for an item with
  // no session. Start, pause and resume still refuse a damaged record, naming the file.
  if (command === "resume") await (await import("./budget.js")).budgetBeforeResume(project, runtime.registry.get(ref), ref, options.budget, !options.json);
  // On a shared database, an item another live daemon owns is that daemon's to command (docs/scale.md).
  const forwarded = { command: "control" as const, request: { ...request, source: "cli" as const } };
  const owned = (await (await import("./forwarded.js")).answeredByOwner(project, forwarded)) as ControlOutcome | undefined;
  if (command === "stop" && owned === undefined) await closeDamagedSession(runtime, ref);
  const outcome = owned ?? (await controlHere(project, runtime, request));

  // The pull request the command was given for, when it acted on the work item it is bound to.
  const via = ref === named ? {} : { pullRequest: named };
  if (!outcome.applied) {
    if (options.json) {
      stdout.json({ workItem: ref, ...via, command, applied: false, reason: outcome.reason, message: outcome.message });
      stderr.error(outcome.message);
      throw new AnswerGivenExit(EXIT_FAILURE);
    }
    throw new ExitError(outcome.message);
  }

  const comment = options.comment ? await announceOnThread(runtime, project, request) : undefined;
  const place = queuedPlace(project, ref);
  const pending = outcome.effect === "start-pending" && place === undefined; // queued: it starts by itself (docs/fleet.md)
  const retry = "the start stands and is retried at the item's next event or when the daemon starts";
  if (comment?.posted === false) {
    stderr.warn(`could not post the ${command} comment on ${ref}: ${comment.error}; the ${command} stands, applied locally`);
  }
  if (options.json) {
    stdout.json({
      workItem: ref,
      ...via,
      command,
      ...(request.graph !== undefined ? { graph: request.graph } : {}),
      applied: true,
      effect: outcome.effect,
      ...(outcome.session ? { session: outcome.session } : {}),
      ...(outcome.problem ? { problem: outcome.problem } : {}),
      ...(comment ? { comment } : {}),
    });
    if (pending) {
      stderr.error(`${effectSentence(command, ref, outcome)}; ${retry}`);
      throw new AnswerGivenExit(EXIT_FAILURE);
    }
    return;
  }
  if (pending) throw new ExitError(`${effectSentence(command, ref, outcome)}; ${retry}`);
  // A problem after the command applied (the re-read note could not be pasted, say) is worth knowing.
  if (outcome.problem) stderr.warn(outcome.problem);
  stdout.line(effectSentence(command, ref, outcome, place));
  if (comment?.posted) stdout.line(`recorded on ${ref}'s thread (comment ${comment.id})`);
}
