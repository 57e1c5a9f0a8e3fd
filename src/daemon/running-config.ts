import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { errnoOf } from "../errors.js";
import { configSchema } from "../config/schema.js";
import type { CliConfig } from "../config/schema.js";
import type { StatePaths } from "../state/layout.js";
import { writeJsonAtomic } from "../state/atomic.js";
import { isProcessAlive } from "../state/process.js";
import { configChanges } from "./reload.js";

/**
 * What the running daemon runs on: the config it started with, with what a reload applied since,
 * written beside the poller's pidfile at the start and after every reload. The CLI reads it to
 * tell the config file from what the daemon runs — `status` names each setting changed on disk
 * and not loaded (a problem, with the fix), and `graph list` says it too — so nobody is told
 * what the file says as if it ran.
 */

export interface RunningConfigRecord {
  readonly version: 1;
  /** The daemon process that runs it. */
  readonly pid: number;
  readonly configFile: string | null;
  /** The effective config, as JSON (an absent optional key is left out). */
  readonly config: unknown;
}

export function runningConfigFile(paths: Pick<StatePaths, "pollPidfile">): string {
  return join(dirname(paths.pollPidfile), "daemon-config.json");
}

/** The config as JSON would carry it: what the record holds, and what it is compared with. */
function asJson(config: CliConfig): unknown {
  return JSON.parse(JSON.stringify(config)) as unknown;
}

export async function writeRunningConfig(paths: Pick<StatePaths, "pollPidfile">, config: CliConfig, configFile: string | undefined): Promise<void> {
  const record: RunningConfigRecord = { version: 1, pid: process.pid, configFile: configFile ?? null, config: asJson(config) };
  await writeJsonAtomic(runningConfigFile(paths), record);
}

/** The record, when one is there and reads as one; undefined otherwise (an older daemon writes none). */
export function readRunningConfig(paths: Pick<StatePaths, "pollPidfile">): RunningConfigRecord | undefined {
  let text: string;
  try {
    text = readFileSync(runningConfigFile(paths), "utf8");
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Torn or foreign: no record to compare with, as with an older daemon (it is rewritten at the next start or reload).
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const { version, pid, configFile, config } = parsed as Record<string, unknown>;
  if (version !== 1 || typeof pid !== "number" || (typeof configFile !== "string" && configFile !== null) || typeof config !== "object" || config === null) {
    return undefined;
  }
  return { version: 1, pid, configFile, config };
}

/**
 * The config the record holds, parsed back through the config schema (it was written from a
 * parsed one, so it parses unless the record is foreign or of another version of the-loop):
 * undefined when it does not, which reads as "nothing is known of what the daemon runs".
 */
function configOf(record: RunningConfigRecord): CliConfig | undefined {
  const parsed = configSchema.safeParse(record.config);
  return parsed.success ? parsed.data : undefined;
}

/** The settings the file changed and the daemon does not run yet: those that wait for a restart, and those a reload takes. */
export interface UnloadedSettings {
  readonly pid: number;
  readonly restartRequired: readonly string[];
  readonly reloads: readonly string[];
}

/** What the live daemon's record says it runs; undefined without a record, a live daemon of it, or a config that parses. */
export function runningDaemonConfig(
  paths: Pick<StatePaths, "pollPidfile">,
  isRunning: (pid: number) => boolean = isProcessAlive,
): { readonly pid: number; readonly config: CliConfig } | undefined {
  let record: RunningConfigRecord | undefined;
  try {
    record = readRunningConfig(paths);
  } catch {
    // Unreadable (permissions): nothing is known of what the daemon runs, which no command guesses at.
    return undefined;
  }
  if (record === undefined || !isRunning(record.pid)) return undefined;
  const config = configOf(record);
  return config === undefined ? undefined : { pid: record.pid, config };
}

/**
 * The config file (`onDisk`, as loaded now) against what the daemon of pid `pid` runs; undefined
 * when it runs what the file says, or nothing is known of what it runs (no record, or the
 * record of another process).
 */
export function unloadedSettings(paths: Pick<StatePaths, "pollPidfile">, onDisk: CliConfig, runningPids: readonly number[]): UnloadedSettings | undefined {
  const running = runningDaemonConfig(paths, (pid) => runningPids.includes(pid));
  if (running === undefined) return undefined;
  const changes = configChanges(running.config, onDisk, running.config);
  if (changes.restartRequired.length === 0 && changes.applied.length === 0) return undefined;
  return { pid: running.pid, restartRequired: changes.restartRequired, reloads: changes.applied };
}

/**
 * A command that starts or moves work, or says what the daemon would do, does it as the running
 * daemon would: with the whole config it runs (its graphs, routing, harnesses, limits, hooks,
 * capabilities, the local project's name), not an edit of the file it has not loaded — which
 * `status` reports, naming the fix. Without a daemon (or its record), the file's. `unloaded`
 * lists what the file changed, so the command can say it acts otherwise than the file reads.
 */
export function asTheDaemonRuns<T extends { readonly config: CliConfig; readonly paths: Pick<StatePaths, "pollPidfile"> }>(
  input: T,
): T & { readonly unloaded: readonly string[] } {
  const running = runningDaemonConfig(input.paths);
  if (running === undefined) return { ...input, unloaded: [] };
  const changes = configChanges(running.config, input.config, running.config);
  return { ...input, config: running.config, unloaded: [...changes.restartRequired, ...changes.applied] };
}
