import { unloadedSettings } from "../running-config.js";
import { homedir } from "node:os";
import { closeSync, openSync, readSync, readdirSync, fstatSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { errnoOf, messageOf } from "../../errors.js";
import type { CliConfig } from "../../config/schema.js";
import { controlStateOf } from "../../control/plan.js";
import { ControlStore, controlRecordKind } from "../../control/store.js";
import type { ControlRecord } from "../../control/types.js";
import { parseEventLine } from "../../events/reader.js";
import type { HookEntry, RemoteHookEntry } from "../../hooks/declaration.js";
import { graphStateKind, openGraphStates } from "../../graph-run/store.js";
import { listSessionRecords } from "../../registry/listing.js";
import { sessionRecordKind } from "../../registry/record.js";
import type { StatePaths } from "../../state/layout.js";
import { journalRemedy } from "../../trackers/local/errors.js";
import { daemonStatus } from "../start-stop.js";
import type { ServiceStatus } from "../start-stop.js";
import { capabilityRuntimeOf, pollCyclesOf, selfLoginFailureOf, statusExitCode, statusProblems } from "./problems.js";
import { notifySinkFailuresOf, notifySinkProblems } from "./notify-problem.js";
import type { SandboxFact } from "./problems.js";
import { checkBubblewrap } from "../../sandbox/index.js";
import { resolveSandboxBinds } from "../../sessions/sandbox-runner.js";
import type {
  CapabilityRefusal,
  DamagedFile,
  GitHubTokenFact,
  HookProbe,
  LoggedEvent,
  PendingStart,
  FailedSession,
  PollCycle,
  SpawnFailure,
  StatusProblem,
} from "./problems.js";

import type { Stores } from "../../stores/stores.js";
import type { PostgresDatabase } from "../../state/index.js";
import { daemonLoads, lateDaemonProblem, readFleetView } from "../../fleet/view.js";
import type { DaemonLoad } from "../../fleet/view.js";
/**
 * Gathers what problems.ts judges: the services' locks, the tail of the event log, every
 * record listing's problems, the local journals, a token lookup made as the daemon makes it, and
 * a connect to each required remote hook. Nothing here calls GitHub or prints a token.
 */

export interface StatusReport {
  readonly healthy: boolean;
  readonly services: ServiceStatus[];
  readonly problems: StatusProblem[];
  /** statusExitCode of the problems. */
  readonly exitCode: number;
  /** The sandbox sessions start in, and the operator's binds into it (docs/security.md). */
  readonly sandbox: SandboxStatus;
  /** Every daemon on the state's database (state.store: postgres); undefined on files. */
  readonly daemons?: readonly DaemonLoad[];
  /** Every daemon's live sessions on the state's database, and the caps this config sets on them; undefined on files. */
  readonly fleetSessions?: FleetSessions;
}

export interface FleetSessions {
  readonly live: number;
  /** routing.limits.maxLiveSessions, when set: the cap on the live count. */
  readonly maxLiveSessions?: number;
}

export interface SandboxStatus {
  readonly mode: SandboxFact["mode"];
  /** `bubblewrap 0.8.0` where sessions get their sandbox; undefined where they do not. */
  readonly sandbox?: string | undefined;
  /** `routing.sandbox.bind`, resolved: `source:target:mode` each. */
  readonly binds: string[];
}

export interface StatusReportOptions {
  /** Where the token variables are read (default process.env): the environment `start` would hand the daemon. */
  readonly env?: NodeJS.ProcessEnv;
  /** The directory of the config file in effect (hooks' `path` entries resolve against it). */
  readonly configDir: string;
  /** The project directory (a relative `routing.sandbox.bind` resolves against it, as the daemon resolves it); configDir when omitted. */
  readonly projectDir?: string;
  /** How long a required remote hook's server has to accept a connection (default 2 s). */
  readonly hookProbeTimeoutMs?: number;
  /** The state's stores when they are in a database (state.store: postgres); the state root's files when omitted. */
  readonly stores?: Stores | undefined;
}

/** Enough of the log's end for many poll cycles, read whatever the log's size. */
const EVENT_TAIL_BYTES = 4 * 1024 * 1024;
const WANTED_EVENTS = new Set([
  "poll.cycle",
  "poll.provider_error",
  "session.spawn_failed",
  "capability.use_refused",
  "capability.runtime_unsupported",
  "config.reloaded",
  "graph.self_login_unknown",
  "graph.self_login_learned",
  "notify.sent",
  "notify.failed",
]);
const HOOK_PROBE_TIMEOUT_MS = 2_000;

export async function statusReport(config: CliConfig, paths: StatePaths, options: StatusReportOptions): Promise<StatusReport> {
  const services = await daemonStatus(config, paths);
  const events = readEventTail(paths.eventLog, EVENT_TAIL_BYTES);
  const poller = services.find((service) => service.name === "poller");
  const cycles = poller?.running && poller.pid !== undefined ? pollCyclesOf(events, poller.pid) : [];
  const records = damagedRecords(paths, options.stores);
  const [token, hooks, journals, sandbox] = await Promise.all([
    githubTokenFact(config, services, cycles, options.env ?? process.env),
    requiredHookProbes(config, options.configDir, options.hookProbeTimeoutMs ?? HOOK_PROBE_TIMEOUT_MS),
    damagedJournals(paths.trackerDir, options.stores?.backend.database),
    sandboxFact(config.routing.sandbox.mode),
  ]);
  const problems = statusProblems({
    services,
    daemonLog: paths.daemonLog,
    token,
    cycles,
    damaged: [...records.damaged, ...journals],
    pending: records.pending,
    failed: records.failed,
    spawnFailures: spawnFailuresOf(events),
    hooks,
    capabilityRefusals: capabilityRefusalsOf(events, services),
    capabilityRuntimes: capabilityRuntimeOf(events, runningPids(services)),
    selfLoginFailure: selfLoginFailureOf(events, new Set(services.flatMap((service) => (service.running && service.pid !== undefined ? [service.pid] : [])))),
    sandbox,
    unloaded: unloadedSettings(
      paths,
      config,
      services.flatMap((service) => (service.running && service.pid !== undefined ? [service.pid] : [])),
    ),
  });
  // Last: what a running daemon cannot bring a person (notify-problem.ts).
  const fleet = await fleetDaemons(config, options.stores);
  const daemons = fleet?.daemons;
  for (const daemon of daemons ?? []) {
    if (daemon.late) problems.push({ code: "daemon-late", ...lateDaemonProblem(daemon, config.state.leaseSeconds) });
  }
  problems.push(...notifySinkProblems(notifySinkFailuresOf(events, runningPids(services), config.notify.sinks)));
  const binds = resolveSandboxBinds(config.routing.sandbox.bind, options.projectDir ?? options.configDir, process.env.HOME || homedir()).map(
    (bind) => `${bind.source}:${bind.target}:${bind.mode}`,
  );
  return {
    healthy: problems.length === 0,
    services,
    problems,
    exitCode: statusExitCode(problems),
    sandbox: { mode: sandbox.mode, sandbox: sandbox.version, binds },
    ...(fleet !== undefined ? { daemons: fleet.daemons, fleetSessions: fleet.sessions } : {}),
  };
}

/** The daemons of the state's database with the live sessions each runs, read when the state is in one. */
async function fleetDaemons(
  config: CliConfig,
  stores: Stores | undefined,
): Promise<{ readonly daemons: readonly DaemonLoad[]; readonly sessions: FleetSessions } | undefined> {
  const database = stores?.backend.database;
  if (stores === undefined || database === undefined) return undefined;
  const view = await readFleetView(database.pool, config.state.heartbeatSeconds * 1000);
  // The registry's rows are every host's on a shared database; the view's leases say where each runs.
  const live = stores.registry.list({ status: "live" }).records.map((record) => record.workItem.ref);
  // Each daemon's own capacity is on its row (DaemonView.capacity): this config's perDaemon is this host's daemon's alone.
  const { maxLiveSessions } = config.routing.limits;
  return {
    daemons: daemonLoads(view, live),
    sessions: { live: live.length, ...(maxLiveSessions !== undefined ? { maxLiveSessions } : {}) },
  };
}

function runningPids(services: readonly ServiceStatus[]): Set<number> {
  return new Set(services.flatMap((service) => (service.running && service.pid !== undefined ? [service.pid] : [])));
}

/** Whether the sessions get their sandbox: bwrap is asked here, as the daemon asks it at a spawn. */
async function sandboxFact(mode: SandboxFact["mode"]): Promise<SandboxFact & { version?: string }> {
  if (mode === "none") return { mode };
  const check = await checkBubblewrap();
  return check.available ? { mode, version: check.version } : { mode, unavailable: check.reason };
}

/**
 * The events of interest among the last `maxBytes` of the log, oldest first. The first line of a
 * tail that starts mid-file is cut and left out; a torn or foreign line is not an event.
 */
export function readEventTail(path: string, maxBytes: number): LoggedEvent[] {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return [];
  }
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - maxBytes);
    const buffer = Buffer.alloc(size - start);
    let read = 0;
    while (read < buffer.length) {
      const bytes = readSync(fd, buffer, read, buffer.length - read, start + read);
      if (bytes === 0) break;
      read += bytes;
    }
    const lines = buffer.subarray(0, read).toString("utf8").split("\n");
    if (start > 0) lines.shift();
    const events: LoggedEvent[] = [];
    for (const line of lines) {
      // Cheap test first: most lines of a busy log are none of the few events wanted.
      if (
        !line.includes('"poll.') &&
        !line.includes('"session.spawn_failed"') &&
        !line.includes('"capability.use_refused"') &&
        !line.includes('"capability.runtime_unsupported"') &&
        !line.includes('"config.reloaded"') &&
        !line.includes('"graph.self_login_') &&
        !line.includes('"notify.')
      )
        continue;
      const record = parseEventLine(line);
      if (record && WANTED_EVENTS.has(record.event)) events.push(record);
    }
    return events;
  } finally {
    closeSync(fd);
  }
}

function spawnFailuresOf(events: readonly LoggedEvent[]): SpawnFailure[] {
  return events.flatMap((event) =>
    event.event === "session.spawn_failed" && typeof event.work_item === "string"
      ? [{ ref: event.work_item, at: event.ts, error: typeof event.error === "string" ? event.error : "unknown error" }]
      : [],
  );
}

/** The refusals of changed capability bundles by a running service's process (an earlier daemon's are past). */
function capabilityRefusalsOf(events: readonly LoggedEvent[], services: readonly ServiceStatus[]): CapabilityRefusal[] {
  const pids = new Set(services.flatMap((service) => (service.running && service.pid !== undefined ? [service.pid] : [])));
  const field = (event: LoggedEvent, key: string): string => (typeof event[key] === "string" ? (event[key] as string) : "?");
  return events.flatMap((event) =>
    event.event === "capability.use_refused" && event.pid !== undefined && pids.has(event.pid)
      ? [
          {
            at: event.ts,
            capability: field(event, "capability"),
            path: field(event, "path"),
            workItem: field(event, "work_item"),
            reason: field(event, "reason"),
          },
        ]
      : [],
  );
}

/** The damaged files of every record listing, and the starts left pending in the control records. */
function damagedRecords(paths: StatePaths, stores: Stores | undefined): { damaged: DamagedFile[]; pending: PendingStart[]; failed: FailedSession[] } {
  const damaged: DamagedFile[] = [];
  const sessions = stores?.registry.list() ?? listSessionRecords(paths.registryDir);
  for (const problem of sessions.problems) {
    damaged.push({ kind: sessionRecordKind.name, file: problem.file, reason: problem.message, remedy: sessionRecordKind.remedy });
  }
  const control = (stores?.control ?? new ControlStore({ dir: paths.controlDir })).list();
  for (const problem of control.problems) {
    damaged.push({ kind: controlRecordKind.name, file: problem.file, reason: problem.message, remedy: controlRecordKind.remedy });
  }
  for (const problem of (stores?.graphStates ?? openGraphStates(paths)).listSync().problems) {
    damaged.push({ kind: graphStateKind.name, file: problem.where, reason: problem.message, remedy: graphStateKind.remedy });
  }
  const failed = sessions.records
    .filter((record) => record.status === "failed")
    .map((record) => ({ ref: record.workItem.ref, at: record.closedAt ?? record.lastEventAt, reason: record.failureReason ?? "its harness kept dying" }));
  return { damaged, pending: control.records.filter(isPendingStart).map(({ ref, requestedAt }) => ({ ref, requestedAt })), failed };
}

function isPendingStart(record: ControlRecord): boolean {
  return record.effect === "start-pending" && controlStateOf(record) === "start-requested";
}

/** Each local project's journal with a complete line that does not read (a torn last line is a writer mid-append). */
async function damagedJournals(trackerDir: string, database: PostgresDatabase | undefined): Promise<DamagedFile[]> {
  if (database !== undefined) {
    // The local tracker is in the state database: its rows, not the files (loaded here only: the schemas bring zod).
    const { damagedTrackerRows } = await import("../../trackers/index.js");
    return (await damagedTrackerRows(database)).map((row) => ({ kind: "local tracker journal", file: row.where, reason: row.reason, remedy: row.remedy }));
  }
  let projects: string[];
  try {
    projects = readdirSync(trackerDir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return [];
  }
  if (projects.length === 0) return [];
  // Loaded only when there are journals: the journal's line schema brings zod.
  const { scanJournal } = await import("../../trackers/local/journal.js");
  const damaged: DamagedFile[] = [];
  for (const project of projects.sort()) {
    const file = join(trackerDir, project, "journal.jsonl");
    const remedy = journalRemedy(project);
    try {
      const scan = await scanJournal(file);
      const [first, ...more] = scan.damaged;
      if (first === undefined) continue;
      const reason = more.length > 0 ? `${first.reason} (and ${more.length} more line${more.length > 1 ? "s" : ""})` : first.reason;
      damaged.push({ kind: "local tracker journal", file, reason, remedy });
    } catch (error) {
      damaged.push({ kind: "local tracker journal", file, reason: `it cannot be read (${errnoOf(error) ?? messageOf(error)})`, remedy });
    }
  }
  return damaged;
}

/** What needs a GitHub token among the enabled services, and whether the daemon's lookup finds one here. */
async function githubTokenFact(
  config: CliConfig,
  services: readonly ServiceStatus[],
  cycles: readonly PollCycle[],
  env: NodeJS.ProcessEnv,
): Promise<GitHubTokenFact> {
  const github = config.integrations.github;
  const neededBy: string[] = [];
  const githubSources = config.polling.enabled ? config.polling.sources.filter((source) => source.provider === "github") : [];
  for (const source of githubSources) neededBy.push(`the poll source ${source.repos.join(", ")}`);
  if (config.webhooks.ghWebhook.enabled) neededBy.push("the webhook receiver");
  const base = { neededBy, tokenEnv: github.tokenEnv, host: "github.com", found: false, daemonReachedGitHub: false };
  if (neededBy.length === 0) return { ...base, found: true };
  const last = cycles[cycles.length - 1];
  const daemonReachedGitHub =
    githubSources.length > 0 && last !== undefined && ![...last.failures.keys()].some((key) => key === "*" || key.startsWith("github:"));
  // Loaded only here: the client module brings Octokit.
  const [{ githubApiUrl, refHostForApiUrl }, { githubTokenSource }] = await Promise.all([
    import("../../trackers/github/client.js"),
    import("../../trackers/github/token.js"),
  ]);
  let host = "github.com";
  try {
    host = refHostForApiUrl(githubApiUrl(github, env));
  } catch {
    // An API URL that does not parse is the config's problem; the token is still looked up for github.com.
  }
  let found: boolean;
  try {
    found = (await githubTokenSource(github, env, { host }).token()) !== "";
  } catch {
    found = false;
  }
  return { ...base, host, found, daemonReachedGitHub };
}

/** A connect to the server of each enabled, required `url` hook: whether anything listens there. */
async function requiredHookProbes(config: CliConfig, configDir: string, timeoutMs: number): Promise<HookProbe[]> {
  const raw: unknown = config.hooks;
  if (!Array.isArray(raw) || raw.length === 0) return [];
  const [{ parseHookDeclaration }, { HOOK_POINT_NAMES }] = await Promise.all([import("../../hooks/declaration.js"), import("../../sdk/hooks/points.js")]);
  let entries: HookEntry[];
  try {
    entries = parseHookDeclaration(raw, { configDir, points: HOOK_POINT_NAMES });
  } catch {
    // A declaration that does not load keeps the daemon from starting, which status reports already.
    return [];
  }
  const remote = entries.filter((entry): entry is RemoteHookEntry => entry.kind === "url" && entry.required && entry.enabled);
  return Promise.all(
    remote.map(async (entry) => {
      const error = await probeTcp(entry.url, timeoutMs);
      return { name: entry.name, origin: entry.url.origin, ...(error !== undefined ? { error } : {}) };
    }),
  );
}

/** Why nothing accepted a TCP connection at the URL's host and port within `timeoutMs`; undefined when something did. */
export function probeTcp(url: URL, timeoutMs: number): Promise<string | undefined> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (error: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(error);
    };
    const timer = setTimeout(() => done(`no connection within ${timeoutMs} ms`), timeoutMs);
    socket.once("connect", () => done(undefined));
    socket.once("error", (error) => done(errnoOf(error) ?? messageOf(error)));
  });
}
