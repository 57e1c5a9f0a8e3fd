import { dirname } from "node:path";
import { EXIT_FAILURE, ExitError, UsageError, messageOf } from "../../../errors.js";
import { LineReader, LogCursor, RingBuffer, eventMatcher, parseSince, SinceFormatError } from "../../../events/index.js";
import type { EventRecord } from "../../../events/index.js";
import type { HookEntry } from "../../../hooks/declaration.js";
import type { HookPoint } from "../../../sdk/hooks/catalog.js";
import { HOOK_POINTS, HOOK_POINT_NAMES } from "../../../sdk/hooks/points.js";
import { RefError, formatWorkItemRef, parseRefInput } from "../../../workitem/ref.js";
import { ConfigError } from "../../../config/load.js";
import type { LoadedConfig } from "../../../config/load.js";
import { displayPath, loadCommandConfig, printConfigWarnings } from "../../context.js";
import type { GlobalOptions } from "../../context.js";
import { formatTable, stderr, stdout } from "../../output.js";
import { listingOf } from "../hooks.js";
import type { HookListing } from "../hooks.js";

/**
 * `the-loop hooks runs`, `hooks info` and `hooks events`: what the hooks did, read back from the
 * `hooks.ran` events the chain records (docs/hooks.md#every-call-hooksran), and what they can serve.
 */

/** agh's outcome names, as `hooks.ran` records them (src/hooks/runs.ts). */
export const RUN_OUTCOMES = ["applied", "denied", "failed", "skipped", "dropped", "rejected"] as const;

export interface HooksRunsOptions {
  readonly hook?: string;
  readonly event?: string;
  readonly outcome?: string;
  readonly workItem?: string;
  readonly since?: string;
  readonly limit?: number;
  readonly last?: number;
  readonly json: boolean;
}

export interface HooksInfoOptions {
  readonly json: boolean;
}

/** One call as `hooks runs --json` prints it. */
export interface HookRun {
  readonly ts: string;
  /** Absent for a dropped delivery: it reached no hook. */
  readonly hook?: string;
  readonly event: string;
  readonly outcome: string;
  readonly duration_ms: number;
  readonly work_item?: string;
  readonly loop_run_id?: string;
  readonly error?: string;
  readonly changed?: readonly string[];
  /** An aggregate of applied calls: how many, their median, the minute they are of. */
  readonly count?: number;
  readonly median_ms?: number;
  readonly since?: string;
}

export const DEFAULT_RUNS_LIMIT = 50;
const INFO_RUNS = 10;

/** The declaration as `the-loop hooks` reads it: from the config alone, nothing imported or contacted. */
async function readDeclaration(globals: GlobalOptions): Promise<{ loaded: LoadedConfig; entries: HookEntry[] }> {
  let loaded: LoadedConfig;
  try {
    loaded = await loadCommandConfig(globals);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new ExitError(`cannot read the hooks declaration: ${error.message}`, EXIT_FAILURE, "config", error.details);
  }
  printConfigWarnings(loaded);
  const file = loaded.source.path;
  if (file === null) return { loaded, entries: [] };
  const { HookDeclarationError, parseHookDeclaration } = await import("../../../hooks/declaration.js");
  try {
    return { loaded, entries: parseHookDeclaration(loaded.config.hooks, { configDir: dirname(file), points: HOOK_POINT_NAMES }) };
  } catch (error) {
    if (!(error instanceof HookDeclarationError)) throw error;
    throw new ExitError(`cannot read the hooks declaration in ${displayPath(file)}: ${error.message}`, EXIT_FAILURE, "config");
  }
}

/** The declared entry called `name`, or an exit naming what is declared. */
export async function declaredHook(globals: GlobalOptions, name: string): Promise<{ loaded: LoadedConfig; entry: HookEntry }> {
  const { loaded, entries } = await readDeclaration(globals);
  const entry = entries.find((candidate) => candidate.name === name);
  if (entry !== undefined) return { loaded, entry };
  const file = loaded.source.path;
  const where = file === null ? "no config file declares hooks" : `${displayPath(file)} declares ${namesIn(entries)}`;
  throw new ExitError(`no hook named "${name}" is declared (${where}); \`the-loop hooks\` lists them`, EXIT_FAILURE, "not-found");
}

function namesIn(entries: readonly HookEntry[]): string {
  return entries.length === 0 ? "none" : entries.map((entry) => `"${entry.name}"`).join(", ");
}

interface RunFilter {
  readonly hook?: string;
  readonly event?: string;
  readonly outcome?: string;
  readonly workItem?: string;
  readonly since?: Date;
}

function runOf(record: EventRecord): HookRun | undefined {
  const text = (key: string): string | undefined => (typeof record[key] === "string" ? record[key] : undefined);
  const count = (key: string): number | undefined => (typeof record[key] === "number" ? record[key] : undefined);
  const point = text("point");
  if (point === undefined) return undefined;
  const common = {
    ts: record.ts,
    event: point,
    ...optional("work_item", text("work_item")),
    ...optional("loop_run_id", text("loop_run_id")),
  };
  if (record.event === "hooks.loop_dropped") {
    const waiting = count("waiting");
    return { ...common, outcome: "dropped", duration_ms: 0, error: `not delivered: ${waiting ?? "too many"} events were waiting behind a slow hook` };
  }
  const hook = text("hook");
  const outcome = text("outcome");
  if (hook === undefined || outcome === undefined) return undefined;
  const changed = Array.isArray(record["changed"]) ? record["changed"].filter((item): item is string => typeof item === "string") : undefined;
  return {
    ...common,
    hook,
    outcome,
    duration_ms: count("duration_ms") ?? 0,
    ...optional("error", text("error")),
    ...optional("changed", changed),
    ...optional("count", count("count")),
    ...optional("median_ms", count("median_ms")),
    ...optional("since", text("since")),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function matchesRun(run: HookRun, filter: RunFilter): boolean {
  // A dropped delivery names no hook: a question about one hook leaves it out.
  if (filter.hook !== undefined && run.hook !== filter.hook) return false;
  if (filter.event !== undefined && run.event !== filter.event) return false;
  return filter.outcome === undefined || run.outcome === filter.outcome;
}

/** The last `limit` calls (0: all) the log holds that match, oldest first, and how many matched. */
export async function readHookRuns(path: string, filter: RunFilter, limit: number): Promise<{ runs: HookRun[]; matched: number; malformed: number }> {
  const kept = new RingBuffer<HookRun>(limit === 0 ? Infinity : limit);
  let matched = 0;
  const envelope = eventMatcher({ types: ["hooks.ran", "hooks.loop_dropped"], workItem: filter.workItem, since: filter.since });
  const reader = new LineReader(envelope, (record) => {
    const run = runOf(record);
    if (run === undefined || !matchesRun(run, filter)) return;
    matched += 1;
    kept.push(run);
  });
  await new LogCursor(path).poll(reader);
  return { runs: kept.toArray(), matched, malformed: reader.malformed };
}

function canonicalRef(text: string, loaded: LoadedConfig): string {
  try {
    return formatWorkItemRef(parseRefInput(text, { defaultLocalProject: loaded.config.integrations.local.project }).ref);
  } catch (error) {
    if (error instanceof RefError) throw new UsageError(`--work-item: ${error.message}`);
    throw error;
  }
}

function runFilterOf(options: HooksRunsOptions, loaded: LoadedConfig): RunFilter {
  if (options.outcome !== undefined && !(RUN_OUTCOMES as readonly string[]).includes(options.outcome)) {
    throw new UsageError(`--outcome must be one of ${RUN_OUTCOMES.join(", ")}, not "${options.outcome}"`);
  }
  if (options.event !== undefined && !HOOK_POINT_NAMES.includes(options.event)) {
    throw new UsageError(`--event "${options.event}" is not a hook point; \`the-loop hooks events\` lists them`);
  }
  let since: Date | undefined;
  if (options.since !== undefined) {
    try {
      since = parseSince(options.since);
    } catch (error) {
      if (error instanceof SinceFormatError) throw new UsageError(`--since: ${error.message}`);
      throw error;
    }
  }
  return {
    ...optional("hook", options.hook),
    ...optional("event", options.event),
    ...optional("outcome", options.outcome),
    ...optional("workItem", options.workItem === undefined ? undefined : canonicalRef(options.workItem, loaded)),
    ...optional("since", since),
  };
}

async function readOrExit(path: string, filter: RunFilter, limit: number): Promise<{ runs: HookRun[]; matched: number }> {
  try {
    const result = await readHookRuns(path, filter, limit);
    if (result.malformed > 0) stderr.warn(`skipped ${result.malformed} malformed line${result.malformed === 1 ? "" : "s"} in ${displayPath(path)}`);
    return result;
  } catch (error) {
    throw new ExitError(`cannot read the event log ${displayPath(path)}: ${messageOf(error)}`);
  }
}

/** `the-loop hooks runs`: each recorded call, newest last. */
export async function runHooksRuns(globals: GlobalOptions, options: HooksRunsOptions): Promise<void> {
  if (options.limit !== undefined && options.last !== undefined && options.limit !== options.last) {
    throw new UsageError("--last is --limit by agh's name; give one of them");
  }
  let loaded: LoadedConfig;
  try {
    loaded = await loadCommandConfig(globals);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new ExitError(`cannot read the config: ${error.message}`, EXIT_FAILURE, "config", error.details);
  }
  const filter = runFilterOf(options, loaded);
  const limit = options.limit ?? options.last ?? DEFAULT_RUNS_LIMIT;
  if (!loaded.config.eventLog.enabled) stderr.warn("the event log is disabled (eventLog.enabled: false); no hook call is being recorded");
  const { runs, matched } = await readOrExit(loaded.paths.eventLog, filter, limit);
  if (matched > runs.length) stderr.line(`showing the last ${runs.length} of ${matched}; --limit 0 for all`);
  if (options.json) {
    stdout.json(runs);
    return;
  }
  if (runs.length === 0) {
    stderr.line("no hook calls recorded that match");
    return;
  }
  stdout.line(runsTable(runs));
}

function outcomeCell(run: HookRun): string {
  const text = run.count !== undefined ? `${run.outcome} ×${run.count}` : run.outcome;
  if (run.outcome === "failed" || run.outcome === "rejected") return stdout.paint("red", text);
  if (run.outcome === "denied" || run.outcome === "dropped") return stdout.paint("yellow", text);
  return text;
}

function durationCell(run: HookRun): string {
  return run.median_ms !== undefined ? `max ${run.duration_ms} ms, median ${run.median_ms} ms` : `${run.duration_ms} ms`;
}

function runsTable(runs: readonly HookRun[]): string {
  const rows = runs.map((run) => [
    run.since ?? run.ts,
    run.hook ?? "—",
    run.event,
    run.work_item ?? "—",
    outcomeCell(run),
    durationCell(run),
    run.error ?? (run.changed !== undefined ? `changed ${run.changed.join(", ")}` : ""),
  ]);
  return formatTable(["time", "hook", "event", "work item", "outcome", "duration", "error"], rows);
}

/** The points an entry is called at, as far as the config alone tells. */
function pointsServed(entry: HookEntry): readonly string[] | string {
  if (entry.on !== undefined) return entry.on;
  // An entry without `on` is never called at an opt-in point (the loop family).
  const defaults = HOOK_POINTS.filter((point) => point.optIn !== true).map((point) => point.name);
  return entry.kind === "url" || entry.kind === "command" ? defaults : "every lifecycle point its class overrides";
}

/** `the-loop hooks info NAME`: the declaration, the points it serves and its last runs. */
export async function runHooksInfo(globals: GlobalOptions, name: string, options: HooksInfoOptions): Promise<void> {
  const { loaded, entry } = await declaredHook(globals, name);
  const listing: HookListing = listingOf(entry);
  const points = pointsServed(entry);
  const { runs } = await readOrExit(loaded.paths.eventLog, { hook: name }, INFO_RUNS);
  if (options.json) {
    stdout.json({ ...listing, serves: points, failOpenAtLoopEvents: true, lastRuns: runs });
    return;
  }
  const timeout = listing.timeoutSeconds !== undefined ? `${listing.timeoutSeconds} s` : "none: it runs in the daemon's process (imports are bounded)";
  const lines = [
    stdout.paint("bold", entry.name),
    `  kind:      ${entry.kind}${listing.executor !== undefined ? ` (executor ${listing.executor})` : ""}`,
    `  target:    ${listing.command !== undefined ? JSON.stringify(listing.command) : (listing.resolved ?? listing.target)}`,
    `  points:    ${typeof points === "string" ? points : points.join(", ")}`,
    `  timeout:   ${timeout}`,
    `  required:  ${listing.required ? "yes: a failure refuses at a lifecycle point with proceed" : "no: a failure is recorded and the chain goes on"} (loop events are always fail-open)`,
    `  enabled:   ${listing.enabled ? "yes" : "no: declared, never loaded"}`,
  ];
  if (listing.env !== undefined) lines.push(`  env:       ${listing.env.length > 0 ? listing.env.join(", ") : "none beyond the base names"}`);
  if (listing.tokenEnv !== undefined) lines.push(`  token:     from $${listing.tokenEnv}`);
  stdout.line(lines.join("\n"));
  stdout.line("");
  stdout.line(runs.length === 0 ? "no recorded runs" : `last runs:\n${runsTable(runs)}`);
}

/** One point as `hooks events --json` prints it. */
export interface HookEventListing {
  readonly name: string;
  readonly family: string;
  readonly method: string;
  readonly decisions: readonly string[];
  readonly canDeny: boolean;
  readonly optIn: boolean;
  readonly fires: string;
}

function eventListing(point: HookPoint): HookEventListing {
  const decisions = Object.keys(point.decisions);
  const canDeny = "canDeny" in point ? point.canDeny === true : decisions.includes("proceed");
  return { name: point.name, family: point.family, method: point.method, decisions, canDeny, optIn: point.optIn === true, fires: point.fires };
}

/** `the-loop hooks events`: every point a hook can serve, one line each (`hooks points` describes each in full). */
export function runHooksEvents(options: HooksInfoOptions): void {
  const listings = HOOK_POINTS.map(eventListing);
  if (options.json) {
    stdout.json(listings);
    return;
  }
  const rows = listings.map((listing) => [
    listing.name,
    listing.family,
    listing.canDeny ? "yes" : "no",
    listing.decisions.length > 0 ? listing.decisions.join(", ") : "none",
    listing.fires,
  ]);
  stdout.line(formatTable(["event", "family", "denies", "decisions", "fires"], rows));
  stdout.line("");
  stdout.line("`the-loop hooks points` describes each point's facts and decisions; docs/hooks.md.");
}
