import { readdirSync, statSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { sweepStaleTemporaries, writeJsonAtomic } from "../state/atomic.js";
import type { StatePaths } from "../state/layout.js";
import { EXIT_USAGE, ExitError, messageOf } from "../errors.js";
import { WebhookReceiver } from "../ingress/webhook/server.js";
import { webhookSecret } from "../ingress/webhook/secret.js";
import { failClosedWarning } from "../routing/authz.js";
import { acquirePidfile } from "./pidfile.js";
import type { PidfileLock } from "./pidfile.js";
import { composeRuntime, pollerFor } from "./runtime.js";
import type { RuntimeInput } from "./runtime.js";
import { githubApiUrl, refHostForApiUrl } from "../trackers/github/client.js";
import { NOTHING_TO_RUN, listeningUrl, servicesOf } from "./services.js";
import type { ServiceName, WebhookListening } from "./services.js";

export interface ServeOptions {
  readonly signal: AbortSignal;
  /** Told about problems worth a person's attention (stderr in the CLI). */
  readonly warn: (message: string) => void;
  /** Called once every service runs. */
  readonly onReady?: (services: readonly string[]) => void;
  /** Told where the webhook receiver listens, once it does. */
  readonly onListening?: (url: string, verified: boolean) => void;
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
  const runs = (name: ServiceName): boolean => enabled.some((service) => service.name === name);
  // Everything that can refuse to run is checked before any lock is taken: a daemon that cannot
  // run must never hold a lock. The secret first, since it needs nothing built.
  if (runs("gh-webhook")) webhookSecret(config.webhooks.ghWebhook, process.env);
  const runtime = composeRuntime(input);
  const dispatcher = await runtime.dispatcher(options.warn);
  const poller = runs("poller") ? pollerFor(input, runtime, dispatcher, options.warn) : undefined;
  await poller?.load();
  // For the rare payload without an html_url: its refs land on the host the tracker serves.
  const defaultHost = refHostForApiUrl(githubApiUrl(config.integrations.github));
  const receiver = runs("gh-webhook")
    ? new WebhookReceiver({
        config: config.webhooks.ghWebhook,
        handler: dispatcher,
        events,
        defaultHost,
      })
    : undefined;

  const locks: PidfileLock[] = [];
  const statusFile = paths.ghWebhookStatusFile;
  try {
    for (const service of enabled) locks.push(await acquirePidfile(service.pidfile, service.name));
    sweepLeftovers(paths);
    const warning = failClosedWarning(config.routing);
    if (warning) {
      options.warn(warning);
      events.emit("routing.fail_closed", { hint: warning });
    }
    if (receiver) {
      const address = await receiver.start();
      if (!receiver.verified) {
        options.warn(
          `the webhook receiver accepts unsigned deliveries (webhooks.ghWebhook.insecureAllowUnsigned and ${config.webhooks.ghWebhook.secretEnv} unset): anyone who can reach ${address.host}:${address.port} can drive sessions`,
        );
      }
      const listening: WebhookListening = {
        pid: process.pid,
        host: address.host,
        port: address.port,
        path: config.webhooks.ghWebhook.path,
        verified: receiver.verified,
        since: new Date().toISOString(),
      };
      // `start` waits for this file too: it is how a chosen port (`port: 0`) becomes known.
      await writeJsonAtomic(statusFile, listening);
      options.onListening?.(listeningUrl(listening), listening.verified);
    }
    const names = enabled.map((service) => service.name);
    events.emit("daemon.started", { services: names, config: input.configFile });
    options.onReady?.(names);
    await (poller ? poller.run(options.signal) : aborted(options.signal));
    // Deliveries already acknowledged are handed to the dispatcher before it drains.
    await receiver?.stop();
    const abandoned = await dispatcher.drain();
    events.emit("daemon.stopped", { services: names, reason: "signal", abandoned });
  } finally {
    await receiver?.stop().catch((error: unknown) => options.warn(`could not stop the webhook receiver: ${messageOf(error)}`));
    if (receiver) removeQuietly(statusFile);
    for (const lock of locks.reverse()) {
      try {
        await lock.release();
      } catch (error) {
        options.warn(`could not release ${lock.holder.service}'s pidfile: ${messageOf(error)}`);
      }
    }
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone; a stale file is recognised by its pid anyway.
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
