import { z } from "zod";
import { spawn } from "node:child_process";
import { mkdirSync, openSync, closeSync, readFileSync, statSync } from "node:fs";
import type { Socket } from "node:net";
import { dirname } from "node:path";
import { EXIT_FAILURE, EXIT_USAGE, ExitError } from "../errors.js";
import type { CliConfig } from "../config/schema.js";
import type { StatePaths } from "../state/layout.js";
import { CLI_ENTRY } from "../sessions/session-env.js";
import { webhookSecret } from "../ingress/webhook/secret.js";
import { holderNote, readLock } from "./pidfile.js";
import type { HeldLock, PidfileHolder } from "./pidfile.js";
import { NOTHING_TO_RUN, listeningUrl, readWebhookListening, servicesOf } from "./services.js";
import type { ServiceSpec } from "./services.js";
import { readHeartbeat } from "./heartbeat.js";
import type { PollHeartbeat } from "./heartbeat.js";
import { HANDED_ENV_FD, daemonSecretNames, encodeHandedEnvironment, splitDaemonEnvironment } from "./secret-env.js";

/**
 * `start`, `stop` and `status`: a daemon is a detached `the-loop serve`, and what it runs is
 * read from the locks its services hold (pidfile.ts), never from a process table.
 */

/** Where a running webhook receiver listens. */
export interface ListeningStatus {
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly url: string;
  /** False when it takes unsigned deliveries (insecureAllowUnsigned). */
  readonly verified: boolean;
}

export interface ServiceStatus {
  readonly name: string;
  readonly enabled: boolean;
  readonly running: boolean;
  readonly pid?: number;
  readonly since?: string;
  readonly pidfile: string;
  readonly heartbeat?: PollHeartbeat;
  readonly listening?: ListeningStatus;
}

/**
 * Every service that is enabled or running. The poller is always listed (a daemon with nothing
 * enabled still answers with the service it would run first); the webhook receiver only once it
 * is enabled or holds its lock.
 */
export async function daemonStatus(config: CliConfig, paths: StatePaths): Promise<ServiceStatus[]> {
  const statuses = await Promise.all(servicesOf(config, paths).map((service) => statusOf(service, paths)));
  return statuses.filter((status) => status.name === "poller" || status.enabled || status.running);
}

async function statusOf(service: ServiceSpec, paths: StatePaths): Promise<ServiceStatus> {
  const lock = await readLock(service.pidfile);
  const holder = lock?.holder;
  const listening = holder !== undefined && service.name === "gh-webhook" ? webhookListening(paths, holder.pid) : undefined;
  return {
    name: service.name,
    enabled: service.enabled,
    running: lock !== undefined,
    pid: holder?.pid,
    since: holder?.startedAt,
    pidfile: service.pidfile,
    heartbeat: service.name === "poller" ? readHeartbeat(paths.pollStatusFile) : undefined,
    listening,
  };
}

/** The receiver's address, when the file naming it was written by `pid` (a stale one is not believed). */
function webhookListening(paths: StatePaths, pid: number): ListeningStatus | undefined {
  const listening = readWebhookListening(paths.ghWebhookStatusFile);
  if (listening === undefined || listening.pid !== pid) return undefined;
  const { host, port, path, verified } = listening;
  return { host, port, path, url: listeningUrl(listening), verified };
}

/** Whether the service is up as far as `start` is concerned: its lock, and for the receiver its address. */
async function ready(service: ServiceSpec, paths: StatePaths, pid: number): Promise<boolean> {
  if ((await readLock(service.pidfile))?.holder?.pid !== pid) return false;
  // The socket answers from the moment it listens, a little before the pidfile is written: scripts
  // that read the pidfile once `start` returns must find the new holder there.
  if (pidfilePid(service.pidfile) !== pid) return false;
  return service.name !== "gh-webhook" || webhookListening(paths, pid) !== undefined;
}

/** What `start` reads of a pidfile while it waits: the pid (pidfile.ts reads the whole holder). */
const pidfilePidSchema = z.object({ pid: z.number() });

function pidfilePid(path: string): number | undefined {
  try {
    const holder = pidfilePidSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
    return holder.success ? holder.data.pid : undefined;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function tailOf(path: string, from: number, maxBytes = 4_000): string {
  try {
    const text = readFileSync(path, "utf8").slice(from);
    return text.length > maxBytes ? text.slice(-maxBytes) : text;
  } catch {
    return "";
  }
}

export interface StartOptions {
  readonly configFile?: string;
  readonly cwd: string;
  /** How long to wait for every service's lock (default 10 s). */
  readonly timeoutMs?: number;
}

export interface StartResult {
  readonly pid: number;
  readonly services: readonly string[];
  readonly log: string;
  /** Where the webhook receiver listens, when it runs. */
  readonly listening?: ListeningStatus;
}

/**
 * Starts `the-loop serve` detached and returns once every enabled service holds its lock (and
 * the webhook receiver listens). The daemon gets this environment, so a missing webhook
 * secret is refused here, before anything starts: its boot variables as its environment, and
 * every other one — the secrets above all — over a pipe, so that none of them shows in its
 * `/proc/<pid>/environ` (secret-env.ts).
 */
export async function startDaemon(config: CliConfig, paths: StatePaths, options: StartOptions): Promise<StartResult> {
  const services = servicesOf(config, paths).filter((service) => service.enabled);
  if (services.length === 0) throw new ExitError(NOTHING_TO_RUN, EXIT_USAGE, "config");
  if (services.some((service) => service.name === "gh-webhook")) webhookSecret(config.webhooks.ghWebhook, process.env);
  for (const service of services) {
    const lock = await readLock(service.pidfile);
    if (lock) {
      throw new ExitError(
        `the-loop is already running on this state root: ${service.name} is held by ${holderNote(lock)} (pidfile ${service.pidfile}); stop it with \`the-loop stop\``,
        EXIT_FAILURE,
        "conflict",
      );
    }
  }
  mkdirSync(dirname(paths.daemonLog), { recursive: true, mode: 0o700 });
  let logStart: number;
  try {
    logStart = statSync(paths.daemonLog).size;
  } catch {
    logStart = 0;
  }
  const log = openSync(paths.daemonLog, "a", 0o600);
  const argv = [CLI_ENTRY, ...(options.configFile ? ["--config", options.configFile] : []), "serve"];
  const { boot, handed } = splitDaemonEnvironment(process.env, daemonSecretNames(config));
  const child = spawn(process.execPath, argv, {
    cwd: options.cwd,
    detached: true,
    env: { ...boot, [HANDED_ENV_FD]: "3" },
    stdio: ["ignore", log, log, "pipe"],
  });
  closeSync(log);
  const channel = child.stdio[3] as Socket | null;
  // Safe to drop: a daemon that died before reading closed its end, and its exit is reported below.
  channel?.on("error", () => undefined);
  channel?.end(encodeHandedEnvironment(handed));
  channel?.unref();
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child.once("exit", (code, signal) => (exited = { code, signal }));
  child.unref();
  const pid = child.pid ?? -1;
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    const readiness = await Promise.all(services.map((service) => ready(service, paths, pid)));
    if (readiness.every(Boolean)) {
      const listening = services.some((service) => service.name === "gh-webhook") ? webhookListening(paths, pid) : undefined;
      return { pid, services: services.map((service) => service.name), log: paths.daemonLog, ...(listening ? { listening } : {}) };
    }
    if (exited) {
      const output = tailOf(paths.daemonLog, logStart).trim();
      throw new ExitError(`the daemon exited (${exited.code ?? exited.signal}) before it started${output ? `:\n${output}` : ""}`, EXIT_FAILURE);
    }
    if (Date.now() > deadline) {
      throw new ExitError(
        `the daemon (pid ${pid}) did not take its locks within ${Math.round((options.timeoutMs ?? 10_000) / 1000)}s; see ${paths.daemonLog}`,
        EXIT_FAILURE,
      );
    }
    await sleep(25);
  }
}

export interface StopResult {
  readonly stopped: readonly PidfileHolder[];
}

/**
 * SIGTERMs whatever holds a service lock (enabled or not), then waits until every lock is free.
 * A lock whose holder names no one cannot be signalled: that is said, with where to look.
 */
export async function stopDaemon(config: CliConfig, paths: StatePaths, timeoutMs = 30_000): Promise<StopResult> {
  const services = servicesOf(config, paths);
  const heldLocks = async (): Promise<{ service: ServiceSpec; lock: HeldLock }[]> => {
    const locks = await Promise.all(services.map(async (service) => ({ service, lock: await readLock(service.pidfile) })));
    return locks.filter((entry): entry is { service: ServiceSpec; lock: HeldLock } => entry.lock !== undefined);
  };
  const held = await heldLocks();
  const nameless = held.find((entry) => entry.lock.holder === undefined);
  if (nameless) {
    throw new ExitError(
      `${nameless.service.name}'s lock is held by ${holderNote(nameless.lock)}, and its pidfile ${nameless.service.pidfile} names no live process; end that process, then run \`the-loop status\``,
      EXIT_FAILURE,
    );
  }
  const holders = held.map((entry) => entry.lock.holder).filter((holder): holder is PidfileHolder => holder !== undefined);
  const pids = [...new Set(holders.map((holder) => holder.pid))];
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      // Gone already: its lock reads as free below.
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const remaining = await heldLocks();
    if (remaining.length === 0) return { stopped: holders };
    if (Date.now() > deadline) {
      const named = remaining.flatMap((entry) => (entry.lock.holder ? [entry.lock.holder.pid] : []));
      // A holder too busy to answer is still the one that was signalled.
      const still = [...new Set(named.length > 0 ? named : pids)].join(", ");
      throw new ExitError(
        `the daemon did not stop within ${Math.round(timeoutMs / 1000)}s (pid ${still} still running); it may be finishing a slow spawn — wait, or end it with \`kill -9 ${still}\``,
        EXIT_FAILURE,
      );
    }
    await sleep(50);
  }
}
