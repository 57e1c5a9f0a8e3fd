import { userInfo } from "node:os";
import { dirname, join } from "node:path";
import { ControlStore } from "../../../control/store.js";
import type { ControlListingProblem } from "../../../control/store.js";
import type { ControlCommand, ControlOutcome, ControlRecord, ControlRequest } from "../../../control/types.js";
import { openGraphStates } from "../../../graph-run/store.js";
import { AnswerGivenExit, EXIT_FAILURE, ExitError, NotFoundError, UsageError, messageOf } from "../../../errors.js";
import type { Runtime, RuntimeInput } from "../../../daemon/runtime.js";
import { RegistryRecordError, isLive } from "../../../registry/record.js";
import type { SessionRecord, SessionStatus } from "../../../registry/record.js";
import { listSessionRecords, listSessionSummaries } from "../../../registry/listing.js";
import { workItemActedOn } from "../../../registry/acted-on.js";
import type { RegistryListing, SessionSummary } from "../../../registry/listing.js";
import { cachedListing } from "./listing-cache.js";
import { queuedPlace, queuedStarts } from "./queued.js";
import { effectSentence } from "./effect-sentence.js";
import { WorkItemNotFoundError } from "../../../trackers/tracker.js";
import type { WorkItemState } from "../../../trackers/tracker.js";
import { RefError, formatWorkItemRef, parseWorkItemRef } from "../../../workitem/index.js";
import { canonicalRef } from "../../canonical-ref.js";
import { openDaemonProject, openProject } from "../../context.js";
import { SHELL_HASH_HINT } from "../../ref-hint.js";
import type { GlobalOptions, Project } from "../../context.js";
import { formatTable, stderr, stdout } from "../../output.js";
import { refuseInsideSession } from "../../session-guard.js";
import { allowedHarnesses } from "../../../routing/harness-choice.js";
import type { ControlCommentResult } from "../../../dispatch/announce-control.js";
import type { FleetView, Placement } from "../../../fleet/index.js";

export interface SessionsListOptions {
  readonly status?: SessionStatus | "live";
  readonly json: boolean;
}
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

/** The item's last control command as the list shows it: `pause (comment, alice)`, `start (cleared)`, `-`. */
export function controlSummary(record: ControlRecord | undefined): string {
  if (record === undefined) return "-";
  return record.clearedAt === undefined ? `${record.command} (${record.source}, ${record.actor})` : `${record.command} (cleared)`;
}

/** A row of the table's control column: the item's ref and its controlSummary. */
type ControlRow = [ref: string, summary: string];

/**
 * Every item's last control command, read from the control folder once for the whole listing
 * (not once per row), with the store's own light reader: no schema library, no runtime. With the
 * start gate on, every item that ever started has a record, so the folder can hold thousands:
 * what the listing needs of them is kept in `<state.root>/cache/` while the folder is unchanged.
 */
function listControls<T>(
  project: Project,
  cacheName: string,
  entriesOf: (records: ControlRecord[]) => T[],
): { entries: T[]; problems: ControlListingProblem[] } {
  const dir = project.paths.controlDir;
  const read = (): { entries: T[]; problems: ControlListingProblem[] } => {
    const { records, problems } = (project.stores?.control ?? new ControlStore({ dir })).list();
    return { entries: entriesOf(records), problems };
  };
  // In a database the listing is the mirror's, in memory: nothing to cache.
  return project.stores !== undefined ? read() : cachedListing(dir, join(project.paths.root, "cache", cacheName), read);
}

const CONTROL_CACHE = "sessions-list-control.json";

/** Each item's last control record, by ref (`sessions list --json`). */
function controlRecordsByRef(project: Project): { byRef: Map<string, ControlRecord>; problems: ControlListingProblem[] } {
  const { entries, problems } = listControls(project, CONTROL_CACHE, (records) => records);
  return { byRef: new Map(entries.map((record) => [record.ref, record])), problems };
}

/** Each item's control column, by ref (the `sessions list` table). */
function controlColumnByRef(project: Project): { byRef: Map<string, string>; problems: ControlListingProblem[] } {
  const { entries, problems } = listControls(project, `${CONTROL_CACHE}.rows`, (records) =>
    records.map((record): ControlRow => [record.ref, controlSummary(record)]),
  );
  return { byRef: new Map(entries), problems };
}

/** Where an item is in its graph, as `sessions list --json` shows it (`graph status` has the rest). */
export interface GraphRunSummary {
  readonly name: string;
  readonly node: string;
  readonly status: string;
  readonly phase: string | null;
}

/** What the listing keeps of a graph state record: a few words of a record that carries its history. */
type GraphRow = [ref: string, name: string, node: string, status: string, phase: string | null];

/** The node column of the `sessions list` table: `review (waiting)`; `?` for a damaged record; `-` without a run. */
export function graphColumn(run: GraphRunSummary | "damaged" | undefined): string {
  if (run === undefined) return "-";
  return run === "damaged" ? "?" : `${run.node} (${run.status})`;
}

interface GraphRuns {
  /** Each item's graph run; "damaged" when its record does not read (the file is among `problems`). */
  readonly of: (ref: string) => GraphRunSummary | "damaged" | undefined;
  readonly problems: ControlListingProblem[];
}

const GRAPH_CACHE = "sessions-list-graph.json";

/**
 * Every item's graph run, read from the graph state folder once for the whole listing, with the
 * store's light reader (no schema library). The records carry their history, so only the few
 * fields shown are kept in `<state.root>/cache/` while the folder is unchanged.
 */
function graphRunsByRef(project: Project): GraphRuns {
  const states = project.stores?.graphStates ?? openGraphStates(project.paths);
  const read = (): { entries: GraphRow[]; problems: { file: string; message: string }[] } => {
    const listing = states.listSync();
    return {
      entries: listing.records.map((state): GraphRow => [state.ref, state.graph, state.node, state.status, state.phase ?? null]),
      problems: listing.problems.map(({ where, message }) => ({ file: where, message })),
    };
  };
  const { entries, problems } =
    project.stores !== undefined ? read() : cachedListing(project.paths.graphsDir, join(project.paths.root, "cache", GRAPH_CACHE), read);
  const byRef = new Map(entries.map(([ref, name, node, status, phase]) => [ref, { name, node, status, phase }]));
  const damagedFiles = new Set(problems.map((problem) => problem.file));
  const fileOf = (ref: string): string | undefined => {
    try {
      return states.locate(ref);
    } catch {
      // Not a ref a record could be kept for: it has no graph state file at all.
      return undefined;
    }
  };
  return {
    of: (ref) => {
      const run = byRef.get(ref);
      if (run !== undefined || damagedFiles.size === 0) return run;
      const file = fileOf(ref);
      return file !== undefined && damagedFiles.has(file) ? "damaged" : undefined;
    },
    problems,
  };
}

/**
 * Sessions with their status, their item's last control command and, once the process graph is
 * in use, the node their item is on. An item with a control record and no session record (paused
 * or stopped before anything spawned) is listed too, with status `-`, when no --status filter is
 * given: it has no session status to match.
 */
export async function runSessionsList(globals: GlobalOptions, options: SessionsListOptions): Promise<void> {
  const project = await openProject(globals, "sessions");
  const listing = { cache: join(project.paths.root, "cache", "sessions-list.json") };
  const wanted = options.status;
  const keep = (status: SessionStatus): boolean => (wanted === "live" ? isLive({ status }) : wanted === undefined || status === wanted);
  // Every session record is read (the filter applies afterwards) so that an item with a
  // filtered-out session is never mistaken for one without a session.
  const withoutSession = <T>(byRef: ReadonlyMap<string, T>, refs: ReadonlySet<string>): [string, T][] =>
    wanted === undefined ? [...byRef].filter(([ref]) => !refs.has(ref)) : [];
  const graphRuns = graphRunsByRef(project);
  const queued = queuedStarts(project, wanted);
  const fleet = await fleetOf(project);
  const usage = (await import("./budget.js")).liveUsage(project.paths.root, project.config.routing.budget, project.stores?.budgets, {
    cache: join(project.paths.root, "cache", "sessions-list-budget.json"),
  });
  if (options.json) {
    const controls = controlRecordsByRef(project);
    const { records, problems } = project.stores?.registry.list() ?? listSessionRecords(project.paths.registryDir, listing);
    const allProblems = [...problems, ...controls.problems, ...graphRuns.problems];
    for (const problem of allProblems) stderr.warn(`${problem.file}: ${problem.message}`);
    const graphOf = (ref: string): GraphRunSummary | null => {
      const run = graphRuns.of(ref);
      return run === undefined || run === "damaged" ? null : run;
    };
    stdout.json({
      sessions: records
        .filter((record) => keep(record.status))
        // Each record was read for this listing alone: its two columns are added to it rather than
        // to a copy (10,000 copies were a tenth of the command's time).
        .map((record) =>
          Object.assign(
            record,
            { control: controls.byRef.get(record.workItem.ref) ?? null, graph: graphOf(record.workItem.ref) },
            usage.of(record),
            fleet === undefined ? {} : placementFields(fleet.placementOf(record.workItem.ref)),
          ),
        ),
      controls: withoutSession(controls.byRef, new Set(records.map((record) => record.workItem.ref))).map(([, record]) => record),
      queued,
      problems: allProblems,
      ...(fleet === undefined ? {} : { daemons: fleet.daemons }),
    });
    return;
  }
  const controls = controlColumnByRef(project);
  const { summaries, problems } =
    project.stores !== undefined ? summariesOf(project.stores.registry.list()) : listSessionSummaries(project.paths.registryDir, listing);
  for (const problem of [...problems, ...controls.problems, ...graphRuns.problems]) stderr.warn(`${problem.file}: ${problem.message}`);
  const rows = summaries
    .filter((summary) => keep(summary.status))
    .map((summary) => [
      summary.ref,
      summary.status,
      controls.byRef.get(summary.ref) ?? controlSummary(undefined),
      summary.harness,
      isLive(summary) ? usage.column(summary) : "-",
      summary.tmuxTarget,
      summary.lastEventAt,
    ]);
  const queuedRefs = new Set(queued.map((entry) => entry.ref));
  for (const [ref, control] of withoutSession(controls.byRef, new Set(summaries.map((summary) => summary.ref)))) {
    if (!queuedRefs.has(ref)) rows.push([ref, "-", control, "-", "-", "-", "-"]);
  }
  for (const entry of queued) {
    rows.push([entry.ref, `queued (${entry.position})`, controls.byRef.get(entry.ref) ?? controlSummary(undefined), entry.harness, "-", "-", entry.queuedAt]);
  }
  if (rows.length === 0) {
    stdout.line(wanted ? `no ${wanted} sessions` : "no sessions yet");
    return;
  }
  const header = ["work item", "status", "control", "harness", "usage", "tmux", "last event"];
  // On a shared database: which daemon each session runs under, and on which host.
  if (fleet !== undefined) {
    header.push("daemon", "host");
    for (const cells of rows) {
      const placement = fleet.placementOf(cells[0] ?? "");
      cells.push(placement?.daemon ?? "-", placement?.host ?? "-");
    }
  }
  // Without the process graph every row's node would be `-`: the column appears once it is in use.
  const nodes = rows.map(([ref]) => graphRuns.of(ref ?? ""));
  if (!project.config.graph.enabled && nodes.every((run) => run === undefined)) {
    stdout.line(formatTable(header, rows));
    return;
  }
  const withNode = <T>(cells: T[], node: T): T[] => [...cells.slice(0, 3), node, ...cells.slice(3)];
  stdout.line(
    formatTable(
      withNode(header, "node"),
      rows.map((cells, index) => withNode(cells, graphColumn(nodes[index]))),
    ),
  );
}

/** Every daemon on the state's database and where each item runs; undefined on files, where the one daemon runs everything. */
export async function fleetOf(project: Pick<Project, "stores" | "config">): Promise<FleetView | undefined> {
  const database = project.stores?.backend.database;
  if (database === undefined) return undefined;
  const { readFleetView } = await import("../../../fleet/index.js");
  return readFleetView(database.pool, project.config.state.heartbeatSeconds * 1000);
}

/** The daemon and host fields `sessions list --json` gives each session on a shared database (null: no daemon holds its item). */
function placementFields(placement: Placement | undefined): { daemon: string | null; host: string | null } {
  return { daemon: placement?.daemon ?? null, host: placement?.host ?? null };
}

/** The table's view of a listing read whole (from a database's mirror). */
function summariesOf(listing: RegistryListing): { summaries: SessionSummary[]; problems: RegistryListing["problems"] } {
  return {
    summaries: listing.records.map(({ workItem, status, harness, tmuxTarget, lastEventAt, createdAt }) => ({
      ref: workItem.ref,
      status,
      harness,
      tmuxTarget,
      lastEventAt,
      createdAt,
    })),
    problems: listing.problems,
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
