import { ControlStore } from "../../control/store.js";
import { daemonStatus } from "../../daemon/start-stop.js";
import { whySettingsOf as daemonWhySettings } from "../../daemon/socket/why-situation.js";
import { ExitError, messageOf } from "../../errors.js";
import type { EventRecord } from "../../events/reader.js";
import { readLatestEvents } from "../../events/tail.js";
import type { ReadLatestResult } from "../../events/tail.js";
import { openGraphStates } from "../../graph-run/store.js";
import type { GraphState } from "../../graph-run/state.js";
import { SessionRegistry } from "../../registry/registry.js";
import { DamagedRecordError } from "../../state/index.js";
import { displayPath, openDaemonProject } from "../context.js";
import type { GlobalOptions, Project } from "../context.js";
import { stderr, stdout } from "../output.js";
import { describeEvent } from "../../why/events.js";
import { explainWhy } from "../../why/explain.js";
import type { ControlView, DamagedRecord, GraphView, HeldAnswerView, SessionView, WhySettings, WhySituation, WhyVerdict } from "../../why/explain.js";
import { canonicalRef } from "../canonical-ref.js";
import { queuedPlace } from "./sessions/queued.js";
import { isLive } from "../../registry/record.js";
import type { SessionRecord } from "../../registry/record.js";
import { usageLine } from "../../budget/summary.js";

/**
 * `the-loop why REF`: what the-loop saw and decided about one work item, newest first, and the one
 * thing that would move it now. Everything comes from the item's records and the end of the event
 * log; nothing is kept for it, so it can never disagree with them.
 */

export interface WhyOptions {
  readonly json: boolean;
}

/** Enough of the item's story to explain where it stands, read from the end of the log. */
const EVENTS_SHOWN = 200;
/** A log of every item for years is not read to its start for one item's question. */
const LOG_BYTES_READ = 64 * 1024 * 1024;

/** The settings `why` weighs: the daemon's reading of them, the one a session's `why` gets too. */
export function whySettingsOf(config: Project["config"]): WhySettings {
  return daemonWhySettings(config);
}

/** The record, undefined when there is none, or what is wrong with it when it cannot be read. */
function readRecord<T>(read: () => T | undefined): T | DamagedRecord | undefined {
  try {
    return read();
  } catch (error) {
    if (error instanceof DamagedRecordError) return { damaged: error.message };
    throw error;
  }
}

async function readRecordAsync<T>(read: () => Promise<T | undefined>): Promise<T | DamagedRecord | undefined> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof DamagedRecordError) return { damaged: error.message };
    throw error;
  }
}

/** Whether the daemon runs: any enabled service holding its lock. Undefined when nothing is enabled. */
async function daemonRunning(project: Project): Promise<boolean | undefined> {
  try {
    const enabled = (await daemonStatus(project.config, project.paths)).filter((service) => service.enabled);
    return enabled.length === 0 ? undefined : enabled.some((service) => service.running);
  } catch (error) {
    stderr.warn(`cannot tell whether the daemon runs: ${messageOf(error)}`);
    return undefined;
  }
}

async function heldAnswers(project: Project, ref: string): Promise<readonly HeldAnswerView[] | undefined> {
  const { openHeldGateAnswers } = await import("../../graph-run/held.js");
  return (await (project.stores?.heldAnswers ?? openHeldGateAnswers(project.paths)).get(ref))?.answers;
}

async function itemEvents(project: Project, ref: string): Promise<ReadLatestResult> {
  const path = project.paths.eventLog;
  // state.store: postgres: the table every host on the database writes, not this host's file.
  const table = project.stores?.eventLog;
  try {
    if (table !== undefined) return await table.readLatest({ workItem: ref, minLevel: "info" }, EVENTS_SHOWN);
    return await readLatestEvents(path, { workItem: ref, minLevel: "info" }, { limit: EVENTS_SHOWN, maxBytes: LOG_BYTES_READ });
  } catch (error) {
    throw new ExitError(`cannot read the event log ${table !== undefined ? table.where : displayPath(path)}: ${messageOf(error)}`);
  }
}

/** The item's place in the start queue, unless a session of its own runs (then the queue is not its story). */
function queuedIn(project: Project, ref: string, session: WhySituation["session"]): Pick<WhySituation, "queued"> {
  if (session !== undefined && !("damaged" in session) && (session.status === "active" || session.status === "paused")) return {};
  const place = queuedPlace(project, ref);
  return place === undefined ? {} : { queued: place };
}

export async function runWhy(globals: GlobalOptions, given: string, options: WhyOptions): Promise<void> {
  const project = await openDaemonProject(globals);
  const ref = canonicalRef(given, project);
  const settings = whySettingsOf(project.config);
  const session = readRecord((): SessionView | undefined => (project.stores?.registry ?? new SessionRegistry({ dir: project.paths.registryDir })).get(ref));
  const control = readRecord((): ControlView | undefined => (project.stores?.control ?? new ControlStore({ dir: project.paths.controlDir })).get(ref));
  const record = await readRecordAsync(
    async (): Promise<GraphState | undefined> => await (project.stores?.graphStates ?? openGraphStates(project.paths)).get(ref),
  );
  const graph: GraphView | DamagedRecord | undefined = record;
  // A run waiting at an edge (routing.limits.perNode): the cap as set now, and how many wait ahead.
  const edge =
    record !== undefined && !("damaged" in record) && record.heldEdge !== undefined
      ? await (await import("./graph/edge-wait.js")).edgeWait(project, record)
      : undefined;
  // Held answers matter only to a run at a gate; their store loads zod, so it is read only then.
  const held =
    graph !== undefined && !("damaged" in graph) && graph.status === "waiting" ? await readRecordAsync(async () => await heldAnswers(project, ref)) : undefined;
  const [log, running] = await Promise.all([itemEvents(project, ref), daemonRunning(project)]);
  if (log.malformed > 0) stderr.warn(`skipped ${log.malformed} malformed line${log.malformed === 1 ? "" : "s"} in ${displayPath(project.paths.eventLog)}`);
  if (!project.config.eventLog.enabled) stderr.warn("the event log is disabled (eventLog.enabled: false): only the records explain the item");

  const situation: WhySituation = {
    ref,
    settings,
    session,
    control,
    graph,
    ...(held !== undefined ? { held } : {}),
    events: log.events,
    daemonRunning: running,
    ...queuedIn(project, ref, session),
    ...(edge !== undefined ? { heldAtEdge: edge.text } : {}),
    ...(await usageOf(project, ref, session)),
  };
  const verdict = explainWhy(situation);
  if (options.json) {
    stdout.json(whyDocument(situation, verdict, log));
    return;
  }
  printWhy(situation, verdict, log);
}

/** A live session's usage against routing.budget (docs/fleet.md#budgets), from the builder `sessions list` and the daemon use. */
async function usageOf(project: Project, ref: string, session: WhySituation["session"]): Promise<Pick<WhySituation, "usage">> {
  if (session === undefined || "damaged" in session || !isLive(session as Pick<SessionRecord, "status">)) return {};
  const { liveUsage } = await import("./sessions/budget.js");
  return {
    usage: liveUsage(project.paths.root, project.config.routing.budget, project.stores?.budgets).summary({
      ref,
      createdAt: session.createdAt,
      harness: session.harness,
    }),
  };
}

function sessionSummary(session: WhySituation["session"]): string {
  if (session === undefined) return "none";
  if ("damaged" in session) return `damaged: ${session.damaged}`;
  const closed = session.closedAt ? `, closed ${session.closedAt} (${session.closeReason ?? "no reason recorded"})` : "";
  return `${session.status}: ${session.harness} in tmux ${session.tmuxTarget}, since ${session.createdAt}${closed}`;
}

function controlSummary(control: WhySituation["control"]): string {
  if (control === undefined) return "none";
  if ("damaged" in control) return `damaged: ${control.damaged}`;
  const cleared = control.clearedAt ? `; cleared ${control.clearedAt}, it no longer governs starting` : "";
  return `${control.command} by ${control.actor} (${control.source}) at ${control.requestedAt}: ${control.effect}${cleared}`;
}

function graphSummary(graph: WhySituation["graph"], enabled: boolean): string {
  if (graph === undefined) return enabled ? "no run yet" : "off (graph.enabled)";
  if ("damaged" in graph) return `damaged: ${graph.damaged}`;
  const because = graph.reason ? ` (${graph.reasonCode ?? "reason"}: ${graph.reason})` : "";
  return `${graph.graph}, node ${graph.node}, ${graph.status}${because}${enabled ? "" : " (graph.enabled is off now)"}`;
}

/** What the listing leaves out, when it does. */
function coverageNote(log: ReadLatestResult, ref: string): string | undefined {
  if (log.missing) return "no event log yet";
  if (log.events.length >= EVENTS_SHOWN) return `the newest ${EVENTS_SHOWN} events; \`the-loop events --work-item '${ref}' --limit 0\` shows every one`;
  if (!log.reachedStart) return `from the last ${Math.round(log.scannedBytes / (1024 * 1024))} MB of the event log; older events are not read`;
  return undefined;
}

function printWhy(situation: WhySituation, verdict: WhyVerdict, log: ReadLatestResult): void {
  stdout.line(`${situation.ref}: ${stdout.paint("bold", verdict.state)}`);
  stdout.line(`  ${verdict.summary}`);
  if (verdict.lastRefusal) stdout.line(`  last refusal: ${verdict.lastRefusal}`);
  stdout.line(verdict.next ? `${stdout.paint("cyan", "next:")} ${verdict.next}` : `${stdout.paint("green", "next:")} nothing is needed`);
  stdout.line();
  stdout.line("records:");
  stdout.line(`  session  ${sessionSummary(situation.session)}`);
  stdout.line(`  control  ${controlSummary(situation.control)}`);
  stdout.line(`  graph    ${graphSummary(situation.graph, situation.settings.graph.enabled)}`);
  if (situation.usage !== undefined) stdout.line(`  usage    ${usageLine(situation.usage)}`);
  stdout.line();
  const note = coverageNote(log, situation.ref);
  if (log.events.length === 0) {
    stdout.line(`what the-loop saw: nothing${note ? ` (${note})` : ""}`);
    return;
  }
  stdout.line(`what the-loop saw, newest first${note ? ` (${note})` : ""}:`);
  for (const record of log.events) {
    stdout.line(`  ${record.ts}  ${levelMark(record)}${describeEvent(record, situation.settings)}`);
  }
}

function levelMark(record: EventRecord): string {
  if (record.level === "error") return `${stdout.paint("red", "error:")} `;
  if (record.level === "warning") return `${stdout.paint("yellow", "warning:")} `;
  return "";
}

/** What `why --json` prints: the verdict, the records as read, and the events with their sentences. */
export function whyDocument(situation: WhySituation, verdict: WhyVerdict, log: ReadLatestResult) {
  return {
    ref: situation.ref,
    state: verdict.state,
    summary: verdict.summary,
    next: verdict.next ?? null,
    lastRefusal: verdict.lastRefusal ?? null,
    daemonRunning: situation.daemonRunning ?? null,
    records: { session: situation.session ?? null, control: situation.control ?? null, graph: situation.graph ?? null, held: situation.held ?? null },
    usage: situation.usage ?? null,
    events: log.events.map((record) => ({ says: describeEvent(record, situation.settings), ...record })),
    log: { scannedBytes: log.scannedBytes, complete: log.reachedStart, malformed: log.malformed, missing: log.missing },
  };
}
