import { resolve } from "node:path";
import { EXIT_INTERRUPTED, ExitError, UsageError, errnoOf, messageOf } from "../../errors.js";
import { ENVELOPE_KEYS, EVENT_LEVELS, EVENT_SOURCES, EVENT_TYPES } from "../../events/catalog.js";
import type { EventLevel } from "../../events/catalog.js";
import { describeFollowNotice, followEvents } from "../../events/follow.js";
import type { FollowNotice, FollowOptions } from "../../events/follow.js";
import { globToRegExp } from "../../events/glob.js";
import { LogCursor } from "../../events/cursor.js";
import { LineReader, RingBuffer, eventMatcher } from "../../events/reader.js";
import type { EventFilter, EventRecord, ReadEventsResult } from "../../events/reader.js";
import type { SharedEventLog } from "../../events/table.js";
import { catalogEntries, fieldNames } from "../../events/reference.js";
import { SinceFormatError, parseSince } from "../../events/since.js";
import { RefError, formatWorkItemRef, parseRefInput } from "../../workitem/ref.js";
import { displayPath, openProject } from "../context.js";
import type { GlobalOptions, Project } from "../context.js";
import { formatTable, stderr, stdout } from "../output.js";

export interface EventsOptions {
  readonly type: string[];
  readonly workItem?: string;
  readonly source?: string;
  readonly level?: string;
  readonly since?: string;
  /** Absent: DEFAULT_LIMIT, or every event with --work-item. */
  readonly limit?: number;
  readonly format: "table" | "json" | "jsonl";
  readonly json: boolean;
  readonly follow: boolean;
  readonly types: boolean;
  readonly file?: string;
}

type Format = EventsOptions["format"];

/** `--json` is `--format json`; combinations that cannot work are refused before any reading. */
export function resolveFormat(options: EventsOptions): Format {
  if (options.json && options.format !== "table" && options.format !== "json") {
    throw new UsageError(`--json means --format json; it cannot be combined with --format ${options.format}`);
  }
  const format: Format = options.json ? "json" : options.format;
  if (options.types && options.follow) throw new UsageError("--types lists the event catalog; it cannot be combined with --follow");
  if (options.follow && format === "json") {
    throw new UsageError("--follow cannot stream one JSON array; use --format jsonl for one JSON object per line");
  }
  return format;
}

export async function runEvents(globals: GlobalOptions, options: EventsOptions): Promise<void> {
  const format = resolveFormat(options);
  if (options.types) {
    printCatalog(options.type, format);
    return;
  }
  const now = new Date();
  // Loaded only when needed: with --file the config matters only for a bare `#7`, so a broken
  // config does not stop anyone reading a copied log.
  let project: Project | undefined;
  const loadProject = async (): Promise<Project> => (project ??= await openProject(globals));
  const defaultLocalProject = async (): Promise<string> => (await loadProject()).config.integrations.local.project;

  const filter: EventFilter = {
    types: options.type,
    workItem: options.workItem === undefined ? undefined : await canonicalWorkItem(options.workItem, defaultLocalProject),
    source: options.source,
    minLevel: minLevelFor(options.level as EventLevel | undefined, format),
    since: options.since === undefined ? undefined : sinceInstant(options.since, now),
  };
  if (options.source !== undefined && !(EVENT_SOURCES as readonly string[]).includes(options.source)) {
    stderr.warn(`no part of the-loop writes source "${options.source}" (known: ${EVENT_SOURCES.join(", ")})`);
  }

  let log: Log;
  if (options.file !== undefined) {
    log = fileLog(resolve(options.file));
  } else {
    const loaded = await loadProject();
    // state.store: postgres: the table every host on the database writes, not this host's file.
    log = loaded.stores?.eventLog !== undefined ? tableLog(loaded.stores.eventLog) : fileLog(loaded.paths.eventLog);
    if (!loaded.config.eventLog.enabled) stderr.warn("the event log is disabled (eventLog.enabled: false); nothing new is recorded");
  }

  const limit = limitFor(options);
  if (options.follow) await followToStdout(log, filter, limit, format);
  // A program that asked for N events by --limit knows it; one given the default cut is told too.
  else await printOnce(log, filter, limit, format, format === "table" || options.limit === undefined);
}

/** Where the events are read from: a JSONL file, or the state database's table. */
interface Log {
  /** How messages name it. */
  readonly shown: string;
  read(filter: EventFilter, limit: number): Promise<ReadEventsResult & { readonly matched: number }>;
  follow(filter: EventFilter, onEvent: (record: EventRecord) => void, signal: AbortSignal, options: FollowOptions): Promise<void>;
}

function fileLog(path: string): Log {
  return {
    shown: displayPath(path),
    read: (filter, limit) => readCounted(path, filter, limit),
    follow: (filter, onEvent, signal, options) => followEvents(path, filter, onEvent, signal, options),
  };
}

function tableLog(table: SharedEventLog): Log {
  return {
    shown: table.where,
    read: async (filter, limit) => ({ ...(await table.read(filter, limit)), malformed: 0, missing: false }),
    follow: (filter, onEvent, signal, options) => table.follow(filter, onEvent, signal, options),
  };
}

/** The last this many events when no --limit is given: a screenful of the newest. */
export const DEFAULT_LIMIT = 50;

/**
 * One item's story is read whole (it is the question `--work-item` asks, and cutting it drops
 * its start); the whole log is cut to its newest events unless --limit says otherwise.
 */
export function limitFor(options: Pick<EventsOptions, "limit" | "workItem">): number {
  return options.limit ?? (options.workItem !== undefined ? 0 : DEFAULT_LIMIT);
}

/** What a cut listing says, on stderr; undefined when nothing was left out. */
export function cutNote(shown: number, matched: number): string | undefined {
  return matched > shown ? `showing the last ${shown} of ${matched}; --limit 0 for all` : undefined;
}

/**
 * The table is read by a person, and the poller's debug lines (one per cycle) would bury
 * everything else within minutes: it starts at info unless --level says otherwise. JSON and JSONL
 * are read by programs, which get exactly what the filters ask for.
 */
export const TABLE_DEFAULT_LEVEL: EventLevel = "info";

export function minLevelFor(level: EventLevel | undefined, format: Format): EventLevel | undefined {
  return level ?? (format === "table" ? TABLE_DEFAULT_LEVEL : undefined);
}

async function canonicalWorkItem(text: string, defaultLocalProject: () => Promise<string>): Promise<string> {
  const parse = (project?: string): string => formatWorkItemRef(parseRefInput(text, { defaultLocalProject: project }).ref);
  try {
    try {
      return parse();
    } catch {
      // Only a bare `#7` needs the default local project, and so the config.
      return parse(await defaultLocalProject());
    }
  } catch (error) {
    if (error instanceof RefError) throw new UsageError(`--work-item: ${error.message}`);
    throw error;
  }
}

function sinceInstant(text: string, now: Date): Date {
  try {
    return parseSince(text, now);
  } catch (error) {
    if (error instanceof SinceFormatError) throw new UsageError(`--since: ${error.message}`);
    throw error;
  }
}

/** The log read once, streaming, keeping the last `limit` matches (0: all) and counting every match. */
async function readCounted(path: string, filter: EventFilter, limit: number): Promise<ReadEventsResult & { readonly matched: number }> {
  const kept = new RingBuffer<EventRecord>(limit === 0 ? Infinity : limit);
  let matched = 0;
  const reader = new LineReader(eventMatcher(filter), (record) => {
    matched += 1;
    kept.push(record);
  });
  const change = await new LogCursor(path).poll(reader);
  return { events: kept.toArray(), malformed: reader.malformed, missing: change === "missing", matched };
}

async function printOnce(log: Log, filter: EventFilter, limit: number, format: Format, noteCut: boolean): Promise<void> {
  const shown = log.shown;
  let result;
  try {
    result = await log.read(filter, limit);
  } catch (error) {
    throw new ExitError(`cannot read the event log ${shown}: ${messageOf(error)}`);
  }
  if (result.malformed > 0) stderr.warn(malformedMessage(result.malformed, shown));
  // On stderr, so a program reading stdout gets the events alone, and a person is told of the cut.
  const cut = cutNote(result.events.length, result.matched);
  if (cut !== undefined && noteCut) stderr.line(cut);
  if (format === "json") {
    stdout.json(result.events);
    return;
  }
  if (format === "jsonl") {
    for (const record of result.events) stdout.line(JSON.stringify(record));
    return;
  }
  if (result.missing) {
    stderr.line(`no events yet: ${shown} does not exist`);
    return;
  }
  if (result.events.length === 0) {
    const hidden = filter.minLevel !== undefined && filter.minLevel !== "debug";
    stderr.line(hidden ? `no matching events at level ${filter.minLevel} or above (--level debug shows every level)` : "no matching events");
    return;
  }
  printEventTable(result.events);
}

/** The table view of events, columns fitted to these rows. */
export function printEventTable(records: readonly EventRecord[]): void {
  const table = new EventTable(measuredWidths(records));
  stdout.line(table.header());
  for (const record of records) stdout.line(table.row(record));
}

function malformedMessage(count: number, shown: string): string {
  return `skipped ${count} malformed line${count === 1 ? "" : "s"} in ${shown}`;
}

async function followToStdout(log: Log, filter: EventFilter, limit: number, format: Format): Promise<void> {
  const shown = log.shown;
  const controller = new AbortController();
  let interrupted = false;
  let outputFailure: Error | undefined;
  const onInterrupt = (): void => {
    interrupted = true;
    controller.abort();
  };
  const onTerminate = (): void => controller.abort();
  const onOutputError = (error: Error): void => {
    // A reader that went away (`| head`) ends the follow quietly; anything else is reported.
    if (errnoOf(error) !== "EPIPE") outputFailure = error;
    controller.abort();
  };

  const table = format === "table" ? new EventTable(FOLLOW_WIDTHS) : undefined;
  const print = (record: EventRecord): void => {
    if (controller.signal.aborted) return;
    stdout.line(table ? table.row(record) : JSON.stringify(record));
  };
  const onNotice = (notice: FollowNotice): void => {
    const message = describeFollowNotice(notice, shown);
    if (notice.kind === "malformed" || notice.kind === "unreadable") stderr.warn(message);
    else stderr.line(message);
  };

  process.on("SIGINT", onInterrupt);
  process.on("SIGTERM", onTerminate);
  process.stdout.on("error", onOutputError);
  try {
    if (table) stdout.line(table.header());
    await log.follow(filter, print, controller.signal, {
      backlog: limit === 0 ? Infinity : limit,
      onNotice,
    });
  } finally {
    process.off("SIGINT", onInterrupt);
    process.off("SIGTERM", onTerminate);
    process.stdout.off("error", onOutputError);
  }
  if (outputFailure) throw new ExitError(`cannot write the events: ${outputFailure.message}`);
  if (interrupted) throw new ExitError("", EXIT_INTERRUPTED, "interrupted");
}

// ── the table ─────────────────────────────────────────────────────────────────────────────

const HEADER = ["TIME", "LEVEL", "SOURCE", "EVENT", "WORK ITEM", "DETAILS"] as const;
type FixedWidths = readonly [number, number, number, number, number];

// A followed table cannot measure rows it has not seen, so its columns fit what the-loop writes.
const FOLLOW_WIDTHS: FixedWidths = [
  "2025-01-01T00:00:00.000Z".length,
  "warning".length,
  Math.max(...EVENT_SOURCES.map((source) => source.length)),
  Math.max(...EVENT_TYPES.map((type) => type.length)),
  "local:project#100".length,
];

const VALUE_MAX = 60;
const DETAILS_MAX_UNTERMINATED = 200;
const DETAILS_MIN = 30;
const SHOWN_ELSEWHERE = new Set<string>(ENVELOPE_KEYS);

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

function workItemCell(record: EventRecord): { text: string; key?: string } {
  if (typeof record.work_item === "string") return { text: record.work_item, key: "work_item" };
  const many = record.work_items;
  if (Array.isArray(many) && many.every((ref) => typeof ref === "string")) return { text: many.join(","), key: "work_items" };
  return { text: "" };
}

function detailValue(value: unknown): string {
  const text = typeof value === "string" && /^[^\s"=]+$/.test(value) ? value : (JSON.stringify(value) ?? String(value));
  return truncate(text, VALUE_MAX);
}

function detailsOf(record: EventRecord, omitted: string | undefined): string {
  return Object.entries(record)
    .filter(([key, value]) => !SHOWN_ELSEWHERE.has(key) && key !== omitted && value !== undefined)
    .map(([key, value]) => `${key}=${detailValue(value)}`)
    .join(" ");
}

function fixedCells(record: EventRecord): [string, string, string, string, string] {
  return [record.ts, record.level, record.source, record.event, workItemCell(record).text];
}

function measuredWidths(records: readonly EventRecord[]): FixedWidths {
  const widths = HEADER.slice(0, 5).map((title) => title.length);
  for (const record of records) {
    fixedCells(record).forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length);
    });
  }
  const [time = 0, level = 0, source = 0, event = 0, workItem = 0] = widths;
  return [time, level, source, event, workItem];
}

const LEVEL_STYLE = { debug: "dim", info: "green", warning: "yellow", error: "red" } as const;

class EventTable {
  private readonly detailsMax: number;

  constructor(private readonly widths: FixedWidths) {
    const used = widths.reduce((sum, width) => sum + width + 2, 0);
    const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
    this.detailsMax = columns ? Math.max(DETAILS_MIN, columns - used) : DETAILS_MAX_UNTERMINATED;
  }

  header(): string {
    return HEADER.map((title, index) => title.padEnd(this.widths[index] ?? 0))
      .join("  ")
      .trimEnd();
  }

  row(record: EventRecord): string {
    const cells = fixedCells(record);
    const padded = cells.map((cell, index) => {
      const padding = " ".repeat(Math.max(0, (this.widths[index] ?? 0) - cell.length));
      // The level is the log file's: one this version does not know is shown unstyled.
      const style = index === 1 && isEventLevel(record.level) ? LEVEL_STYLE[record.level] : undefined;
      return `${style ? stdout.paint(style, cell) : cell}${padding}`;
    });
    const details = truncate(detailsOf(record, workItemCell(record).key), this.detailsMax);
    return [...padded, details].join("  ").trimEnd();
  }
}

// ── --types ───────────────────────────────────────────────────────────────────────────────

function printCatalog(globs: readonly string[], format: Format): void {
  const patterns = globs.map(globToRegExp);
  const entries = catalogEntries().filter((entry) => patterns.length === 0 || patterns.some((pattern) => pattern.test(entry.type)));
  if (format === "json") {
    stdout.json(entries);
    return;
  }
  if (format === "jsonl") {
    for (const entry of entries) stdout.line(JSON.stringify(entry));
    return;
  }
  const rows = entries.map((entry) => [entry.type, entry.family, entry.level, fieldNames(entry.fields).join(", "), entry.summary]);
  stdout.line(formatTable(["TYPE", "FAMILY", "LEVEL", "FIELDS", "SUMMARY"], rows));
}

function isEventLevel(level: string): level is EventLevel {
  return EVENT_LEVELS.some((known) => known === level);
}
