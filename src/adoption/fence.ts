import { dirname, join } from "node:path";
import type { CliConfig } from "../config/schema.js";
import { resolveStateStore } from "../config/state-store.js";
import type { Ownership } from "../fleet/ownership.js";
import type { SessionRunner } from "../harness/runner.js";
import { WatchedRunner } from "./watchdog.js";

/** Where the sessions' watchdogs write the harnesses they ended: beside the daemon's log. */
export function watchdogLogOf(daemonLog: string): string {
  return join(dirname(daemonLog), "watchdog.log");
}

/**
 * The runner a daemon starts its harnesses with, fenced (docs/scale.md, "Fencing"): on a shared
 * database each spawn starts the session's watchdog; on files, where one daemon owns everything,
 * the runner as it is.
 */
export function fencedRunner(
  inner: SessionRunner,
  options: { readonly config: CliConfig; readonly daemonLog: string; readonly ownership?: Ownership; readonly warn?: (message: string) => void },
): SessionRunner {
  const { config, ownership } = options;
  if (ownership?.shared !== true) return inner;
  const resolved = resolveStateStore(config.state, process.env);
  if (resolved.store !== "postgres") return inner;
  const socketName = config.routing.tmux.socketName;
  return new WatchedRunner(inner, {
    url: resolved.url,
    owner: ownership.name,
    ...(socketName !== undefined ? { socketName } : {}),
    killGraceMs: Math.round(config.routing.tmux.harnessKillGraceSeconds * 1000),
    leaseMs: config.state.leaseSeconds * 1000,
    logFile: watchdogLogOf(options.daemonLog),
    warn: options.warn ?? ((message) => process.stderr.write(`${message}\n`)),
  });
}
