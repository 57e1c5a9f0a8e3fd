import { readdirSync, statSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { sweepStaleTemporaries } from "../state/atomic.js";
import type { StatePaths } from "../state/layout.js";
import { EXIT_USAGE, ExitError, messageOf } from "../errors.js";
import { failClosedWarning } from "../routing/authz.js";
import { acquirePidfile } from "./pidfile.js";
import type { PidfileLock } from "./pidfile.js";
import { composeRuntime, pollerFor } from "./runtime.js";
import type { RuntimeInput } from "./runtime.js";
import { NOTHING_TO_RUN, servicesOf } from "./services.js";

export interface ServeOptions {
  readonly signal: AbortSignal;
  /** Told about problems worth a person's attention (stderr in the CLI). */
  readonly warn: (message: string) => void;
  /** Called once every service runs. */
  readonly onReady?: (services: readonly string[]) => void;
}

/**
 * Runs the daemon in the foreground until the signal aborts: takes each enabled service's
 * pidfile lock (refusing when another daemon holds one), runs the services, then drains —
 * queued events are carried out before the locks are released.
 */
export async function serveDaemon(input: RuntimeInput, options: ServeOptions): Promise<void> {
  const { config, paths, events } = input;
  const enabled = servicesOf(config, paths).filter((service) => service.enabled);
  if (enabled.length === 0) throw new ExitError(NOTHING_TO_RUN, EXIT_USAGE, "config");
  const runtime = composeRuntime(input);
  // Built (templates read, poll state checked) before any lock is taken: a daemon that cannot
  // run must never hold a lock.
  const dispatcher = await runtime.dispatcher(options.warn);
  const poller = pollerFor(input, runtime, dispatcher);
  await poller.load();

  const locks: PidfileLock[] = [];
  try {
    for (const service of enabled) locks.push(await acquirePidfile(service.pidfile, service.name));
    sweepLeftovers(paths);
    const warning = failClosedWarning(config.routing);
    if (warning) {
      options.warn(warning);
      events.emit("routing.fail_closed", { hint: warning });
    }
    const names = enabled.map((service) => service.name);
    events.emit("daemon.started", { services: names, config: input.configFile });
    options.onReady?.(names);
    await poller.run(options.signal);
    const abandoned = await dispatcher.drain();
    events.emit("daemon.stopped", { services: names, reason: "signal", abandoned });
  } finally {
    for (const lock of locks.reverse()) {
      try {
        await lock.release();
      } catch (error) {
        options.warn(`could not release ${lock.holder.service}'s pidfile: ${messageOf(error)}`);
      }
    }
  }
}

/**
 * What a killed process may have left: temporary siblings of atomic writes (their writer's pid is
 * in the name) and text files on their way into a session. Swept once the locks are held, so no
 * other daemon is using them; nothing depends on this succeeding.
 */
function sweepLeftovers(paths: StatePaths): void {
  for (const dir of new Set([paths.root, paths.registryDir, paths.controlDir, dirname(paths.pollStateFile)])) {
    sweepStaleTemporaries(dir);
  }
  const cutoff = Date.now() - 60_000;
  let names: string[];
  try {
    names = readdirSync(paths.tmpDir);
  } catch {
    return;
  }
  for (const name of names) {
    const file = join(paths.tmpDir, name);
    try {
      if (name.startsWith("the-loop-") && statSync(file).mtimeMs < cutoff) unlinkSync(file);
    } catch {
      // Gone already.
    }
  }
}
