import { join } from "node:path";
import { ControlStore } from "../../../control/store.js";
import type { ControlListingProblem } from "../../../control/store.js";
import type { ControlRecord } from "../../../control/types.js";
import { openGraphStates } from "../../../graph-run/store.js";
import { isLive } from "../../../registry/record.js";
import type { SessionStatus } from "../../../registry/record.js";
import { listSessionRecords, listSessionSummaries } from "../../../registry/listing.js";
import { controlsWithoutSession, printSessionsDocument, renderedControls, renderedSessions } from "./list-json.js";
import type { RegistryListing, SessionSummary } from "../../../registry/listing.js";
import { cachedListing } from "./listing-cache.js";
import { queuedStarts } from "./queued.js";
import { openProject } from "../../context.js";
import type { GlobalOptions, Project } from "../../context.js";
import { formatTable, stderr, stdout } from "../../output.js";
import type { FleetView, Placement } from "../../../fleet/index.js";

export interface SessionsListOptions {
  readonly status?: SessionStatus | "live";
  readonly json: boolean;
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
    const cache = (name: string) => join(project.paths.root, "cache", name);
    const onFiles = project.stores === undefined;
    const controlStore = project.stores?.control ?? new ControlStore({ dir: project.paths.controlDir });
    const controls = renderedControls(
      () => controlStore.list(),
      onFiles ? { dir: project.paths.controlDir, cacheFile: cache(`${CONTROL_CACHE}.rendered`) } : undefined,
    );
    const sessions = renderedSessions(
      () => project.stores?.registry.list() ?? listSessionRecords(project.paths.registryDir),
      onFiles ? { dir: project.paths.registryDir, cacheFile: `${listing.cache}.rendered` } : undefined,
    );
    const allProblems = [...sessions.problems, ...controls.problems, ...graphRuns.problems];
    for (const problem of allProblems) stderr.warn(`${problem.file}: ${problem.message}`);
    const graphOf = (ref: string): GraphRunSummary | null => {
      const run = graphRuns.of(ref);
      return run === undefined || run === "damaged" ? null : run;
    };
    printSessionsDocument(
      sessions,
      controls,
      (session) => keep(session.status),
      (session) =>
        Object.assign({ graph: graphOf(session.ref) }, usage.of(session), fleet === undefined ? {} : placementFields(fleet.placementOf(session.ref))),
      {
        controls: wanted === undefined ? controlsWithoutSession(controls, sessions) : [],
        queued,
        problems: allProblems,
        ...(fleet === undefined ? {} : { daemons: fleet.daemons }),
      },
    );
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
