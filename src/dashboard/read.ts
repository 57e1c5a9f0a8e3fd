import type { ControlRecord } from "../control/types.js";
import type { EventFilter, EventRecord } from "../events/reader.js";
import type { SharedEventLog } from "../events/table.js";
import { readLatestEvents } from "../events/tail.js";
import { EVENT_LEVELS } from "../events/catalog.js";
import type { EventLevel } from "../events/catalog.js";
import { parseSince } from "../events/since.js";
import type { GraphState } from "../graph-run/state.js";
import { graphMermaid } from "../graph/mermaid.js";
import type { Graph } from "../graph/types.js";
import type { SessionRecord } from "../registry/record.js";
import type { StartQueue } from "../registry/start-queue.js";
import type { QueueEntry } from "../registry/start-queue.js";
import type { StatePaths } from "../state/layout.js";
import { effectiveLimits } from "../budget/decide.js";
import type { BudgetLimits } from "../budget/decide.js";
import { BudgetRecordError } from "../budget/store.js";
import type { BudgetRecord } from "../budget/store.js";
import { storesOn } from "../stores/stores.js";
import type { Stores } from "../stores/stores.js";
import { RefError, formatWorkItemRef, parseWorkItemRef } from "../workitem/index.js";
import type { FleetView } from "../fleet/index.js";

/**
 * What the dashboard's API reads, as plain shapes over the state root's records (docs/dashboard.md
 * has a JSON Schema for each): the board's rows, the sessions, one item's graph, the event log.
 * The column a row goes in is a pure function of its records (boardColumn).
 */

export const BOARD_COLUMNS = ["queued", "working", "waiting", "blocked", "done"] as const;
export type BoardColumn = (typeof BOARD_COLUMNS)[number];

export interface ItemFacts {
  readonly session: Pick<SessionRecord, "status" | "awaitingInput"> | undefined;
  readonly graph: Pick<GraphState, "status" | "node"> | undefined;
  readonly control: Pick<ControlRecord, "command" | "clearedAt"> | undefined;
  readonly queued: boolean;
}

/**
 * The board's column: queued (waiting for a slot under routing.limits); waiting for a person (a
 * human gate, a question the agent asked, a pause); blocked (its graph run stopped at a node);
 * done (its run ended, or its session closed and nothing starts it again); working otherwise. A
 * session that failed to start (the supervision gave its harness up) is blocked until a new start.
 */
export function boardColumn(facts: ItemFacts): BoardColumn {
  if (facts.queued) return "queued";
  const graph = facts.graph?.status;
  if (graph === "blocked") return "blocked";
  const standing = facts.control !== undefined && facts.control.clearedAt === undefined ? facts.control.command : undefined;
  if (facts.session?.status === "failed") return standing === "start" ? "working" : "blocked";
  if (graph === "waiting" || facts.session?.awaitingInput !== undefined || facts.session?.status === "paused") return "waiting";
  if (graph !== undefined && graph !== "running") return "done";
  if (facts.session === undefined || facts.session.status === "closed") {
    return standing === "start" || standing === "resume" ? "working" : "done";
  }
  return "working";
}

export interface ItemRow {
  readonly ref: string;
  /** Its title as the tracker's cached record holds it (trackers/titles.ts); null when unknown. */
  readonly title: string | null;
  readonly url: string | null;
  readonly column: BoardColumn;
  readonly session: {
    readonly status: string;
    readonly harness: string;
    readonly tmuxTarget: string;
    readonly createdAt: string;
    readonly lastEventAt: string;
    readonly closeReason: string | null;
    readonly question: { readonly text: string; readonly askedAt: string } | null;
  } | null;
  readonly graph: {
    readonly name: string;
    readonly node: string;
    readonly phase: string | null;
    readonly status: string;
    readonly generation: number;
    readonly updatedAt: string;
  } | null;
  readonly control: {
    readonly command: string;
    readonly source: string;
    readonly actor: string;
    readonly requestedAt: string;
    readonly cleared: boolean;
  } | null;
  readonly queue: { readonly position: number; readonly queuedAt: string; readonly harness: string } | null;
  /** The item's budget use (routing.budget, docs/fleet.md#budgets), once its session's use is recorded; null until then. */
  readonly budget: BudgetView | null;
  /** The newest of its records' times. */
  readonly lastActivity: string | null;
  /** With state.store: postgres, the daemon whose lease the item is under and its host (null: none holds it); absent on files. */
  readonly runsOn?: RunsOn | null;
}

/** Where an item's session runs among the daemons of one database, and whether that is this dashboard's host. */
export interface RunsOn {
  readonly daemon: string;
  readonly host: string;
  readonly here: boolean;
}

/** Where each item runs, as the API says it, from the leases' owners (fleet/view.ts) seen from `host`. */
export function runsOnOf(fleet: Pick<FleetView, "placementOf">, host: string): (ref: string) => RunsOn | null {
  return (ref) => {
    const placement = fleet.placementOf(ref);
    return placement === undefined ? null : { daemon: placement.daemon, host: placement.host, here: placement.host === host };
  };
}

export interface BudgetView {
  /** Model tokens used (null: its agent CLI's usage cannot be read), and the limit in force (null: none). */
  readonly tokens: { readonly used: number | null; readonly limit: number | null };
  /** Wall-clock minutes of the session, and the limit in force. */
  readonly minutes: { readonly used: number | null; readonly limit: number | null };
  /** The share of a limit at which the-loop warns: where the page's bar turns. */
  readonly warnAt: number;
  /** The limit the session reached, which paused it. */
  readonly exceeded: { readonly dimension: string; readonly used: number; readonly limit: number; readonly at: string } | null;
}

/** A budget record as the board's bar reads it: what was used of the limits in force (the configured ones plus the raises). */
export function budgetView(record: BudgetRecord | undefined, limits: BudgetLimits): BudgetView | null {
  if (record === undefined) return null;
  const inForce = effectiveLimits(limits, record.raise);
  return {
    tokens: { used: record.usage?.readable === true ? record.usage.total : null, limit: inForce.tokens ?? null },
    minutes: { used: record.minutes ?? null, limit: inForce.minutes ?? null },
    warnAt: limits.warnAt,
    exceeded: record.exceeded
      ? { dimension: record.exceeded.dimension, used: record.exceeded.used, limit: record.exceeded.limit, at: record.exceeded.at }
      : null,
  };
}

export interface Problem {
  readonly file: string;
  readonly message: string;
}

function newest(...times: (string | undefined)[]): string | null {
  const known = times.filter((time): time is string => time !== undefined && !Number.isNaN(Date.parse(time)));
  if (known.length === 0) return null;
  return known.reduce((a, b) => (Date.parse(a) >= Date.parse(b) ? a : b));
}

function readQueue(queue: StartQueue, problems: Problem[]): QueueEntry[] {
  try {
    return queue.read();
  } catch (error) {
    problems.push({ file: queue.file, message: error instanceof Error ? error.message : String(error) });
    return [];
  }
}

/** Every work item the-loop keeps a record of (a session, a graph run, a control command, a queued start), newest activity first. */
export function listItems(
  paths: StatePaths,
  limits: BudgetLimits = { warnAt: 1 },
  titleOf: (ref: string) => string | null = () => null,
  stores: Stores = storesOn(paths),
  runsOn?: (ref: string) => RunsOn | null,
): { readonly items: ItemRow[]; readonly problems: Problem[] } {
  const problems: Problem[] = [];
  const sessions = stores.registry.list();
  problems.push(...sessions.problems);
  const controls = stores.control.list();
  problems.push(...controls.problems);
  const states = stores.graphStates.listSync();
  problems.push(...states.problems.map(({ where, message }) => ({ file: where, message })));
  const queue = readQueue(stores.startQueue, problems);

  const sessionOf = new Map(sessions.records.map((record) => [record.workItem.ref, record]));
  const controlOf = new Map(controls.records.map((record) => [record.ref, record]));
  const graphOf = new Map(states.records.map((state) => [state.ref, state]));
  const queueOf = new Map(queue.map((entry, index) => [entry.ref, { position: index + 1, queuedAt: entry.queuedAt, harness: entry.harness }]));
  const refs = new Set([...sessionOf.keys(), ...controlOf.keys(), ...graphOf.keys(), ...queueOf.keys()]);
  const budgets = stores.budgets;
  const budgetOf = (ref: string): BudgetRecord | undefined => {
    try {
      return budgets.get(ref);
    } catch (error) {
      if (!(error instanceof BudgetRecordError)) throw error;
      problems.push({ file: error.where, message: error.message });
      return undefined;
    }
  };
  const items = [...refs].map((ref): ItemRow => {
    const session = sessionOf.get(ref);
    const control = controlOf.get(ref);
    const graph = graphOf.get(ref);
    const queued = queueOf.get(ref);
    return {
      ref,
      title: titleOf(ref),
      url: session?.url ?? null,
      column: boardColumn({ session, graph, control, queued: queued !== undefined }),
      session:
        session === undefined
          ? null
          : {
              status: session.status,
              harness: session.harness,
              tmuxTarget: session.tmuxTarget,
              createdAt: session.createdAt,
              lastEventAt: session.lastEventAt,
              closeReason: session.closeReason ?? null,
              question: session.awaitingInput ? { text: session.awaitingInput.question, askedAt: session.awaitingInput.askedAt } : null,
            },
      graph:
        graph === undefined
          ? null
          : { name: graph.graph, node: graph.node, phase: graph.phase ?? null, status: graph.status, generation: graph.generation, updatedAt: graph.updatedAt },
      control:
        control === undefined
          ? null
          : {
              command: control.command,
              source: control.source,
              actor: control.actor,
              requestedAt: control.requestedAt,
              cleared: control.clearedAt !== undefined,
            },
      queue: queued ?? null,
      budget: budgetView(budgetOf(ref), limits),
      lastActivity: newest(session?.lastEventAt, graph?.updatedAt, control?.requestedAt, queued?.queuedAt),
      ...(runsOn !== undefined ? { runsOn: runsOn(ref) } : {}),
    };
  });
  items.sort((a, b) => (Date.parse(b.lastActivity ?? "") || 0) - (Date.parse(a.lastActivity ?? "") || 0) || a.ref.localeCompare(b.ref));
  return { items, problems };
}

/** Every session record, as `sessions list --json` lists them. */
export function listSessions(
  paths: StatePaths,
  stores: Stores = storesOn(paths),
  runsOn?: (ref: string) => RunsOn | null,
): { readonly sessions: (SessionRecord & { runsOn?: RunsOn | null })[]; readonly problems: Problem[] } {
  const { records, problems } = stores.registry.list();
  return { sessions: runsOn === undefined ? records : records.map((record) => ({ ...record, runsOn: runsOn(record.workItem.ref) })), problems };
}

/** A ref as the API is given it (`local:demo#1`, percent-decoded), canonical; undefined when it is no ref. */
export function canonicalItem(written: string): string | undefined {
  try {
    return formatWorkItemRef(parseWorkItemRef(written));
  } catch (error) {
    if (error instanceof RefError) return undefined;
    throw error;
  }
}

/** A graph as the page draws it: its nodes and edges, and the Mermaid text `graph show --mermaid` prints. */
export function graphDocument(graph: Graph) {
  return {
    name: graph.name,
    start: graph.start,
    nodes: [...graph.nodes.values()].map((node) => ({
      id: node.id,
      phase: node.phase ?? null,
      actor: node.actor,
      terminal: node.terminal,
      description: node.description,
    })),
    edges: graph.edges.map((edge) => ({ from: edge.from, to: edge.to, on: edge.on })),
    mermaid: graphMermaid(graph),
  };
}

/** The CLI's filters (`the-loop events`), as query parameters: `type` (repeatable globs), `work_item`, `source`, `level`, `since`, `limit`. */
export interface EventQuery {
  readonly filter: EventFilter;
  readonly limit: number;
}

export const EVENTS_LIMIT_DEFAULT = 200;
export const EVENTS_LIMIT_MAX = 5_000;
/** How far back a listing reads a long log. */
export const EVENTS_SCAN_BYTES = 64 * 1024 * 1024;

/** The query's filter, or what is wrong with it (a 400's message). */
export function eventQueryOf(params: URLSearchParams, now: Date = new Date()): EventQuery | { readonly problem: string } {
  const types = params.getAll("type").filter((type) => type !== "");
  const workItemText = params.get("work_item");
  let workItem: string | undefined;
  if (workItemText !== null && workItemText !== "") {
    workItem = canonicalItem(workItemText);
    if (workItem === undefined) return { problem: `work_item: not a work item ref: ${JSON.stringify(workItemText)}` };
  }
  const level = params.get("level") ?? "info";
  if (!(EVENT_LEVELS as readonly string[]).includes(level)) return { problem: `level: one of ${EVENT_LEVELS.join(", ")}` };
  let since: Date | undefined;
  const sinceText = params.get("since");
  if (sinceText !== null && sinceText !== "") {
    try {
      since = parseSince(sinceText, now);
    } catch (error) {
      return { problem: `since: ${error instanceof Error ? error.message : String(error)}` };
    }
  }
  const limitText = params.get("limit");
  const limit = limitText === null ? EVENTS_LIMIT_DEFAULT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > EVENTS_LIMIT_MAX) return { problem: `limit: a whole number from 1 to ${EVENTS_LIMIT_MAX}` };
  const source = params.get("source");
  return {
    filter: {
      ...(types.length > 0 ? { types } : {}),
      ...(workItem !== undefined ? { workItem } : {}),
      ...(source !== null && source !== "" ? { source } : {}),
      minLevel: level as EventLevel,
      ...(since !== undefined ? { since } : {}),
    },
    limit,
  };
}

/** The newest events the query matches, newest first. */
export async function readEventPage(
  eventLog: string,
  query: EventQuery,
  table?: SharedEventLog,
): Promise<{ readonly events: EventRecord[]; readonly complete: boolean }> {
  // state.store: postgres: the table every host on the database writes, not this host's file.
  const read =
    table !== undefined
      ? await table.readLatest(query.filter, query.limit)
      : await readLatestEvents(eventLog, query.filter, { limit: query.limit, maxBytes: EVENTS_SCAN_BYTES });
  return { events: read.events, complete: read.reachedStart };
}
