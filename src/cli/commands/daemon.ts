import { dirname } from "node:path";
import { AnswerGivenExit } from "../../errors.js";
import { startDaemon, stopDaemon } from "../../daemon/start-stop.js";
import { statusReport } from "../../daemon/status/facts.js";
import { readDashboardStatus } from "../../daemon/dashboard-status.js";
import { daemonSecretNames, receiveDaemonEnvironment, secretsInEnvironmentWarning, secretsInInitialEnvironment } from "../../daemon/secret-env.js";
import type { ListeningStatus, ServiceStatus } from "../../daemon/start-stop.js";
import { ConfigError, DISCOVERY_PLACES } from "../../config/load.js";
import { displayPath, openProject } from "../context.js";
import type { GlobalOptions, Project } from "../context.js";
import { formatTable, stderr, stdout } from "../output.js";
import { budgetLine, budgetStatus } from "./sessions/budget-status.js";
import { limitsLine, limitsStatus } from "./sessions/queued.js";
import type { LimitsStatus } from "./sessions/queued.js";
import { daemonSessionsCell, fleetSessionsLine, heartbeatCell } from "../../fleet/view.js";
import type { DaemonLoad } from "../../fleet/view.js";
import type { FleetSessions } from "../../daemon/status/facts.js";

export interface JsonOption {
  readonly json: boolean;
}
export interface StopOptions extends JsonOption {
  readonly timeout: number;
}

/**
 * A daemon with no config file would run on defaults, which enable no service: the operator ran
 * it in the wrong folder, or has not run init yet. Either way the fix is not "enable a service".
 */
function requireConfigFile(project: Project): void {
  if (project.loaded.source.path !== null) return;
  throw new ConfigError(
    `no config found (looked for ${DISCOVERY_PLACES}, from ${process.cwd()}); ` +
      "run the daemon from inside a project, name one with --config, or write one here with `the-loop init`",
  );
}

export async function runStart(globals: GlobalOptions, options: JsonOption): Promise<void> {
  const project = await openProject(globals, "daemon");
  requireConfigFile(project);
  // Here as well as in the daemon, so a changed capability bundle fails the start with its own exit status.
  if (project.config.capabilities.length > 0) {
    const { loadCapabilities } = await import("../../capabilities/load.js");
    const { configuredHarnesses } = await import("../../capabilities/runtime-compat.js");
    const configFile = project.loaded.source.path ?? undefined;
    await loadCapabilities(project.config, configFile !== undefined ? dirname(configFile) : project.loaded.baseDir, {
      events: project.events,
      checkOnly: true,
      harnesses: configuredHarnesses(project.config.routing),
      warn: (message) => stderr.warn(message),
      ...(configFile !== undefined ? { configFile } : {}),
    });
  }
  const result = await startDaemon(project.config, project.paths, {
    configFile: project.loaded.source.path ?? undefined,
    cwd: process.cwd(),
  });
  if (options.json) {
    stdout.json({
      started: true,
      pid: result.pid,
      services: result.services,
      log: result.log,
      ...(result.listening ? { listening: result.listening } : {}),
    });
    return;
  }
  stdout.line(`the-loop started (pid ${result.pid}): ${result.services.join(", ")}`);
  if (result.listening) stdout.line(`  webhook receiver: ${listeningNote(result.listening)}`);
  stdout.line(`  log: ${displayPath(result.log)}   status: the-loop status   stop: the-loop stop`);
}

export async function runStop(globals: GlobalOptions, options: StopOptions): Promise<void> {
  const project = await openProject(globals, "daemon");
  const result = await stopDaemon(project.config, project.paths, options.timeout * 1000);
  if (options.json) {
    stdout.json({ stopped: result.stopped.map((holder) => ({ service: holder.service, pid: holder.pid })) });
    return;
  }
  if (result.stopped.length === 0) stdout.line("the-loop is not running");
  for (const holder of result.stopped) stdout.line(`stopped ${holder.service} (pid ${holder.pid})`);
}

function describe(service: ServiceStatus): string {
  if (service.running) return `running (pid ${service.pid} since ${service.since})`;
  return service.enabled ? "stopped" : "disabled";
}

function listeningNote(listening: Pick<ListeningStatus, "url" | "verified">): string {
  return `listening on ${listening.url}${listening.verified ? "" : " (UNSIGNED deliveries accepted)"}`;
}

function detailOf(service: ServiceStatus): string {
  if (service.listening) return listeningNote(service.listening);
  return lastCycleOf(service);
}

/** Where the dashboard is, as `status` shows it: its URL (never a token), or why there is none. */
function dashboardStatus(project: Project): { enabled: boolean; url: string | null; tls: boolean; operator: string | null } {
  const enabled = project.config.dashboard.enabled;
  const running = enabled ? readDashboardStatus(project.paths) : undefined;
  return { enabled, url: running?.url ?? null, tls: running?.tls ?? false, operator: running?.operator ?? project.config.dashboard.operator ?? null };
}

function dashboardLine(dashboard: ReturnType<typeof dashboardStatus>): string {
  if (!dashboard.enabled) return "dashboard: off (dashboard.enabled: true serves it; docs/dashboard.md)";
  if (dashboard.url === null) return "dashboard: not running (it starts with the daemon)";
  const who = dashboard.operator === null ? "read-only" : `acting as ${dashboard.operator}`;
  return `dashboard: ${dashboard.url} (${who}); \`the-loop dashboard\` prints a one-time login URL`;
}

function lastCycleOf(service: ServiceStatus): string {
  const heartbeat = service.heartbeat;
  if (!heartbeat?.lastCycleAt) return "";
  const cycle = heartbeat.lastCycle ?? {};
  return `last cycle ${heartbeat.lastCycleAt}: ${String(cycle.changes ?? 0)} changes, ${String(cycle.errors ?? 0)} errors`;
}

/** On a shared database, where the poller's sources are polled: `poll sources: github:octo/api here, local:* by box-b`. */
function pollSourcesLine(services: readonly ServiceStatus[]): string | undefined {
  const sources = services.find((service) => service.name === "poller" && service.running)?.heartbeat?.sources;
  if (sources === undefined || Object.keys(sources).length === 0) return undefined;
  const where = Object.entries(sources).map(([key, place]) => `${key} ${place.here ? "here" : `by ${place.by ?? "another daemon"}`}`);
  return `poll sources: ${where.join(", ")} (one daemon polls each source; docs/scale.md)`;
}

/** The start caps and the node caps (routing.limits.perNode) on one line, as one list. */
function withNodeCaps(limits: LimitsStatus | undefined, nodes: LimitsStatus["caps"]): LimitsStatus | undefined {
  if (nodes.length === 0) return limits;
  return { caps: [...(limits?.caps ?? []), ...nodes], queued: limits?.queued ?? 0 };
}

/** Every daemon on the state's database: where it runs, its last heartbeat, the leases it holds, its live sessions against its own perDaemon. */
function daemonsTable(daemons: readonly DaemonLoad[], sessions: FleetSessions | undefined): string {
  const fleet = sessions === undefined ? "" : `\n${fleetSessionsLine(sessions.live, sessions.maxLiveSessions)}`;
  if (daemons.length === 0) return `daemons on the state database: none has started yet${fleet}`;
  return `\ndaemons on the state database:\n${formatTable(
    ["daemon", "host", "pid", "heartbeat", "leases", "sessions"],
    daemons.map((daemon) => [daemon.name, daemon.host, String(daemon.pid), heartbeatCell(daemon), String(daemon.leases), daemonSessionsCell(daemon)]),
  )}${fleet}`;
}

export async function runStatus(globals: GlobalOptions, options: JsonOption): Promise<void> {
  const project = await openProject(globals, "daemon");
  const configFile = project.loaded.source.path ?? undefined;
  const report = await statusReport(project.config, project.paths, {
    configDir: configFile !== undefined ? dirname(configFile) : project.loaded.baseDir,
    projectDir: project.loaded.baseDir,
    stores: project.stores,
  });
  const { healthy, services, problems, sandbox, daemons, fleetSessions } = report;
  // The node caps count the graph runs: read only when one is set.
  const nodeCaps = Object.keys(project.config.routing.limits.perNode).length > 0 ? await (await import("./graph/edge-wait.js")).nodeCapUsage(project) : [];
  const limits = withNodeCaps(limitsStatus(project), nodeCaps);
  const dashboard = dashboardStatus(project);
  const budget = budgetStatus(project.config.routing);
  if (options.json) {
    stdout.json({
      healthy,
      problems,
      services,
      sandbox,
      dashboard,
      ...(limits !== undefined ? { limits } : {}),
      ...(budget !== undefined ? { budget } : {}),
      ...(daemons !== undefined ? { daemons } : {}),
      ...(fleetSessions !== undefined ? { fleetSessions } : {}),
    });
  } else {
    stdout.line(
      formatTable(
        ["service", "state", "detail"],
        services.map((s) => [s.name, describe(s), detailOf(s)]),
      ),
    );
    const binds = sandbox.binds.length === 0 ? "no binds" : `binds ${sandbox.binds.join(", ")}`;
    stdout.line(
      `sessions: ${sandbox.sandbox === undefined ? "unsandboxed" : `sandboxed (${sandbox.sandbox}, ${binds})`} — routing.sandbox.mode: ${sandbox.mode}`,
    );
    const polled = pollSourcesLine(services);
    if (polled !== undefined) stdout.line(polled);
    if (limits !== undefined) stdout.line(limitsLine(limits));
    if (budget !== undefined) stdout.line(budgetLine(budget));
    stdout.line(dashboardLine(dashboard));
    if (daemons !== undefined) stdout.line(daemonsTable(daemons, fleetSessions));
    if (problems.length > 0) {
      stdout.line("");
      stdout.line(`${problems.length} problem${problems.length > 1 ? "s" : ""}:`);
      for (const problem of problems) {
        stdout.line(`- ${problem.message}`);
        stdout.line(`  fix: ${problem.fix}`);
      }
    }
  }
  // The table (or JSON) is the answer; the exit status is what a script checks: 1 when an enabled
  // service does not run, 3 when everything runs but something keeps it from its work.
  if (!healthy) throw new AnswerGivenExit(report.exitCode);
}

export async function runServe(globals: GlobalOptions): Promise<void> {
  // First of all, before the config is read: what `start` handed over its pipe, and systemd's credentials.
  await receiveDaemonEnvironment();
  const project = await openProject(globals, "daemon");
  requireConfigFile(project);
  const exposed = secretsInEnvironmentWarning(secretsInInitialEnvironment(daemonSecretNames(project.config)));
  if (exposed !== undefined) stderr.warn(exposed);
  const controller = new AbortController();
  const stopOn = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) return;
    stderr.line(`${signal}: draining and stopping`);
    controller.abort();
  };
  // `on`, not `once`: proper-lockfile's exit hook re-raises a signal nobody else listens to, which
  // would kill the daemon mid-drain.
  process.on("SIGTERM", stopOn);
  process.on("SIGINT", stopOn);
  // Loaded here only: start, stop and status must not pay for the whole session machinery.
  const { serveDaemon } = await import("../../daemon/serve.js");
  try {
    await serveDaemon(
      {
        config: project.config,
        paths: project.paths,
        baseDir: project.loaded.baseDir,
        configFile: project.loaded.source.path ?? undefined,
        events: project.events,
      },
      {
        signal: controller.signal,
        warn: (message) => stderr.warn(message),
        onReady: (services) => stderr.line(`the-loop serving (pid ${process.pid}): ${services.join(", ")}`),
        onListening: (url, verified) => stderr.line(`webhook receiver ${listeningNote({ url, verified })}`),
      },
    );
  } finally {
    process.off("SIGTERM", stopOn);
    process.off("SIGINT", stopOn);
  }
  // The events still queued for the state database's table (state.store: postgres), daemon.stopped among them.
  await project.events.flush();
  // Drained and unlocked: `the-loop stop` has answered, and the next daemon may take the state
  // root. What the drain stopped waiting for (reactions queued behind GitHub's one write a
  // second) would otherwise keep this process calling GitHub and writing the event log for as
  // long again, unseen by `status`.
  // eslint-disable-next-line no-restricted-properties -- the daemon's end is its process's; nothing above it is left to run
  process.exit(0);
}
