import { unlinkSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { sweepStaleTemporaries, writeJsonAtomic } from "../state/atomic.js";
import { sweepScratchFiles } from "../state/scratch.js";
import { tightenStateRoot } from "../state/index.js";
import type { StatePaths } from "../state/layout.js";
import { EXIT_USAGE, ExitError, messageOf } from "../errors.js";
import { WebhookReceiver } from "../ingress/webhook/server.js";
import { webhookSecret } from "../ingress/webhook/secret.js";
import { failClosedWarning } from "../routing/authz.js";
import type { RoutingConfig } from "../config/schema.js";
import { openStores } from "../stores/stores.js";
import type { Dispatcher } from "../dispatch/dispatcher.js";
import { watchForStalls } from "../graph-driver/run-ends.js";
import { watchStartQueue } from "../dispatch/dequeue.js";
import { watchSessions } from "../supervision/index.js";
import { watchBudgets } from "../dispatch/budget-watch.js";
import { acquirePidfile } from "./pidfile.js";
import { runningConfigFile, writeRunningConfig } from "./running-config.js";
import { servedRefsOf, socketHandlers, unservedReason } from "./socket/methods.js";
import { serveRpc } from "./socket/rpc.js";
import { SessionSockets } from "./socket/session-sockets.js";
import { readItemUsage, readWhySituation } from "./socket/why-situation.js";
import { startDashboard } from "./dashboard.js";
import type { RunningDashboard } from "./dashboard.js";
import type { RpcServer } from "./socket/rpc.js";
import type { PidfileLock } from "./pidfile.js";
import { initialReloadState, reloadRouting, watchConfigFile } from "./reload.js";
import type { ReloadState } from "./reload.js";
import { loadDaemonHooks } from "./hooks.js";
import { loadCapabilities } from "../capabilities/load.js";
import type { LoadedCapability } from "../capabilities/load.js";
import type { EventSink } from "../events/log.js";
import { configuredHarnesses, loadedRuntimeCheck } from "../capabilities/runtime-compat.js";
import { composeRuntime, pollerFor } from "./runtime.js";
import { daemonNameOf, joinFleet } from "./fleet.js";
import { daemonInboxHandlers, forwardingOn, leaseSettingsOf } from "../forwarding/open.js";
import { watchLostHosts } from "../adoption/watch.js";
import type { RuntimeInput } from "./runtime.js";
import { githubApiUrl, refHostForApiUrl } from "../trackers/github/client.js";
import { ItemTitles } from "../trackers/titles.js";
import { databaseItemsUrl, localTitlesOf } from "../trackers/index.js";
import { notingTitles } from "./item-titles.js";
import { NOTHING_TO_RUN, listeningUrl, servicesOf } from "./services.js";
import { Notifier, followOtherProcesses, notifyKeywordsOf, teeEvents } from "../notify/notifier.js";
import type { ServiceName, WebhookListening } from "./services.js";

/**
 * How often the daemon looks whether a session began or ended, to open or close its socket: the
 * registry's change stamp is read each time (its folder's mtime, or the database's newest session
 * row), the sessions are listed only when it moved. A
 * command run inside a session in the meantime waits for its socket (the CLI's connect retries).
 */
const SESSION_SOCKETS_CHECK_MS = 500;

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
 * lock (refusing when another daemon holds one), runs the services, then drains —
 * queued events are carried out before the locks are released. While it runs, a change to the
 * config file is applied to the routing at once (reload.ts), and sessions whose start was
 * honoured but never carried out (a spawn that failed, or a restart that cut it) are started,
 * and (with `graph.stallAfterMinutes`) graph runs that stopped making progress are ended.
 */
export async function serveDaemon(given: RuntimeInput, options: ServeOptions): Promise<void> {
  // Opened first (state.store: files, or a database it migrates or refuses), before any lock is taken.
  const stores = given.stores ?? (await openStores(given.config, given.paths, { name: daemonNameOf(given), host: daemonNameOf(given) }));
  // Built next, so every event the daemon's work records passes it (docs/notifications.md).
  const notifier = notifierFor(given, options.warn, stores.backend.database !== undefined);
  const withStores: RuntimeInput = { ...given, stores };
  const input: RuntimeInput = notifier ? { ...withStores, events: teeEvents(given.events, (event) => notifier.observe(event)) } : withStores;
  try {
    await serveWith(input, notifier, options);
  } finally {
    // Closed there before the locks are released; here for a start that failed before it took them.
    await notifier?.close();
    if (given.stores === undefined) await stores.close();
  }
}

/**
 * The notifier of `notify.sinks`, or none without a sink. A sink whose URL variable is unset or
 * holds no usable URL is said at start (by the variable's name); its notifications fail with the
 * same words until the variable is set and the daemon restarted.
 */
function notifierFor(input: RuntimeInput, warn: (message: string) => void, sharedTracker: boolean): Notifier | undefined {
  const { config, paths } = input;
  if (config.notify.sinks.length === 0) return undefined;
  const notifier = new Notifier({
    config: config.notify,
    keywords: notifyKeywordsOf(config),
    localTrackerDir: paths.trackerDir,
    ...(sharedTracker ? { localItemsUrl: databaseItemsUrl } : {}),
    events: input.events,
  });
  for (const problem of notifier.problems()) warn(`notify: ${problem}`);
  return notifier;
}

async function serveWith(input: RuntimeInput, notifier: Notifier | undefined, options: ServeOptions): Promise<void> {
  const { config, paths, events } = input;
  const enabled = servicesOf(config, paths).filter((service) => service.enabled);
  if (enabled.length === 0) throw new ExitError(NOTHING_TO_RUN, EXIT_USAGE, "config");
  const runs = (name: ServiceName): boolean => enabled.some((service) => service.name === name);
  // Everything that can refuse to run is checked before any lock is taken: a daemon that cannot
  // run must never hold a lock (the state's store was opened, or refused, before this). The secret needs nothing built.
  if (runs("gh-webhook")) webhookSecret(config.webhooks.ghWebhook, process.env);
  // A capability changed since consent (or not a bundle at all), or one that supports none of the
  // harnesses the config now runs, refuses the start, like a bad graph.
  const capabilities = await loadCapabilities(input.config, input.configFile !== undefined ? dirname(input.configFile) : input.baseDir, {
    events,
    harnesses: configuredHarnesses(config.routing),
    warn: options.warn,
    ...(input.configFile !== undefined ? { configFile: input.configFile } : {}),
  });
  // Loaded once for the daemon's life (docs/hooks.md#declaring-hooks); one entry that does not load stops the start.
  const hooks = await loadDaemonHooks(input);
  const unhandled = keepRunningThroughHookRejections(hooks.size > 0, events, options.warn);
  const runtime = composeRuntime(input);
  // Its name and its leases on a shared database (a live daemon of the same name refuses the start); all its own on files.
  // Its capacity as it runs, on its row at each beat for every host's status: a reload may move it.
  let limits = config.routing.limits;
  const ownership = await joinFleet(input, runtime, options.warn, () => ({ perDaemon: limits.perDaemon ?? null }));
  // Events and commands for items another daemon owns go to it through the database's inbox.
  const forwarding = forwardingOn(runtime.stores.backend.database, { ...leaseSettingsOf(config.state), name: daemonNameOf(input), events }, options.warn);
  let dispatcher: Dispatcher;
  try {
    dispatcher = await runtime.dispatcher(options.warn, hooks, capabilities, ownership, forwarding?.forwarder.sendEvent);
  } catch (error) {
    // A start that fails here frees its name at once, rather than a lease's length later.
    await ownership.stop?.();
    throw error;
  }
  // The titles the events carry, for the dashboard's board (only while it is on: nothing is kept otherwise).
  const database = runtime.stores.backend.database;
  const localTitles = database !== undefined ? { localTitles: () => localTitlesOf(database) } : {};
  const titles = config.dashboard.enabled ? new ItemTitles({ root: paths.root, trackerDir: paths.trackerDir, warn: options.warn, ...localTitles }) : undefined;
  const ingress = titles !== undefined ? notingTitles(dispatcher, titles) : dispatcher;
  const poller = runs("poller") ? pollerFor(input, runtime, ingress, options.warn, ownership.name) : undefined;
  await poller?.load();
  // The host the tracker serves: refs land on it, and a payload whose html_url is elsewhere is refused.
  const defaultHost = refHostForApiUrl(githubApiUrl(config.integrations.github));
  const receiver = runs("gh-webhook")
    ? new WebhookReceiver({
        config: config.webhooks.ghWebhook,
        handler: ingress,
        events,
        defaultHost,
      })
    : undefined;

  const locks: PidfileLock[] = [];
  const statusFile = paths.ghWebhookStatusFile;
  let reloads: ConfigFollower | undefined;
  let retrying: Promise<void> | undefined;
  let rpc: RpcServer | undefined;
  let sessionSockets: SessionSockets | undefined;
  let following: { readonly done: Promise<void> } | undefined;
  const followingStop = new AbortController();
  let dashboard: RunningDashboard | undefined;
  try {
    for (const service of enabled) {
      const lock = await acquirePidfile(service.pidfile, service.name);
      locks.push(lock);
      if (lock.unguarded !== undefined) {
        options.warn(
          `${service.name}'s lock is its pidfile alone (could not listen on its lock socket: ${lock.unguarded}): a damaged ${service.pidfile} would let a second daemon start`,
        );
      }
    }
    // The events other processes of this state root record (a CLI's graph force, a CLI start), from here on.
    if (notifier && config.eventLog.enabled) {
      const follower = followOtherProcesses(paths.eventLog, (event) => notifier.observe(event), followingStop.signal, options.warn, input.stores?.eventLog);
      following = follower;
      await follower.caughtUp;
    }
    sweepLeftovers(paths);
    tightenStateRootOnce(paths, options.warn);
    // What this daemon runs, for the CLI to tell from the file (status, graph list): after the locks, so it is this daemon's.
    await recordRunningConfig(paths, config, input.configFile, options.warn);
    // After the locks: a socket file a killed daemon left is this daemon's to replace.
    const graphStates = runtime.stores.graphStates;
    // Before the socket, which hands out its login URLs: one that may not listen where it is asked stops the start.
    dashboard = await startDashboard(input, runtime, dispatcher, options.warn, titles);
    const login = dashboard?.server;
    const handlers = socketHandlers(dispatcher, {
      config,
      sessionOf: (ref) => runtime.registry.get(ref),
      graphStateOf: (ref) => graphStates.get(ref),
      whyOf: (ref) => readWhySituation(paths, config, ref, runtime.stores),
      usageOf: async (ref) => readItemUsage(paths, config, ref, runtime.stores),
      ...(login !== undefined ? { dashboardLogin: () => login.issueLogin() } : {}),
      ...(forwarding !== undefined ? { forwarding: forwarding.commands } : {}),
    });
    rpc = await serveRpc(paths.root, handlers);
    const configFile = input.configFile !== undefined ? resolve(input.configFile) : null;
    await forwarding?.forwarder.serve(
      daemonInboxHandlers(runtime.closeOptions, runtime.registry, {
        handle: (event) => ingress.handle(event),
        control: (request) => dispatcher.control(request),
        graphClaim: (request) => dispatcher.graphClaim(request),
        unserved: (ref) => unservedReason(servedRefsOf(config), ref, (item) => runtime.registry.get(item) !== undefined),
        configFile,
      }),
    );
    sessionSockets = new SessionSockets({
      stateRoot: paths.root,
      handlers,
      configFile,
      liveItems: () => runtime.registry.list({ status: "live" }).records.map((record) => record.workItem.ref),
      graphStateOf: (ref) => graphStates.get(ref),
      changeStamp: () => runtime.registry.changeStamp(),
      events,
      warn: options.warn,
    });
    await sessionSockets.reconcile();
    sessionSockets.watch(SESSION_SOCKETS_CHECK_MS);
    warnIfFailClosed(config.routing, input, options);
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
    // Not awaited: the poller runs meanwhile, and the drain waits for what it queues.
    retrying = dispatcher.retryPendingStarts().then(
      () => undefined,
      (error: unknown) => options.warn(`could not start the sessions whose start was pending: ${messageOf(error)}`),
    );
    if (input.configFile !== undefined)
      reloads = followConfigFile(input.configFile, input, dispatcher, options, {
        capabilities,
        ...(notifier ? { notifier } : {}),
        reloaded: (running) => {
          limits = running.routing.limits;
        },
      });
    // Queued starts (routing.limits) take a slot as soon as one frees, whoever closed the session.
    const queued = watchStartQueue(() => dispatcher.startQueued(), options.signal, options.warn);
    // Runs waiting at an edge into a full node (routing.limits.perNode) take a place as soon as one frees.
    const releasing = config.graph.enabled
      ? watchStartQueue(() => dispatcher.releaseHeldRuns(), options.signal, options.warn, "could not move the runs waiting at an edge")
      : undefined;
    // A harness that exits, or whose pane dies, is noticed within a second or two and started again (routing.supervision).
    const supervised = watchSessions(() => dispatcher.superviseSessions(), options.signal, options.warn);
    // Every live session's usage is read and kept; routing.budget's limits are acted on (docs/fleet.md#budgets).
    const budgets = watchBudgets(() => dispatcher.checkBudgets(), options.signal, options.warn);
    // On a shared database: the sessions' transcript tails kept, a lost daemon's items adopted (docs/scale.md, "Losing a host").
    const adopting = watchLostHosts({
      ...runtime,
      config,
      database: runtime.stores.backend.database,
      ownership,
      capture: (target) => runtime.runner.capture(target),
      takeOver: (ref) => dispatcher.takeOver(ref),
      onTakeover: (takeover) => dispatcher.onTakeover(takeover),
      events,
      signal: options.signal,
      warn: options.warn,
    });
    // Every poll interval (the poller on or off), runs with no progress in the stall window end `stalled`,
    // and the sessions of runs that ended graph.closeAfterMinutes ago close.
    const stalling = config.graph.enabled && config.graph.stallAfterMinutes !== undefined;
    const closing = config.graph.enabled && config.graph.closeAfterMinutes !== "never";
    const stalls =
      stalling || closing
        ? watchForStalls(
            () => Promise.all([stalling ? dispatcher.endStalledRuns() : 0, closing ? dispatcher.closeEndedRunSessions() : 0]),
            config.polling.intervalSeconds * 1000,
            options.signal,
          )
        : undefined;
    await (poller ? poller.run(options.signal) : aborted(options.signal));
    await stalls;
    await queued;
    await releasing;
    await supervised;
    await budgets;
    await adopting;
    await reloads?.stop();
    // Deliveries already acknowledged are handed to the dispatcher before it drains.
    await receiver?.stop();
    await forwarding?.forwarder.stop();
    const abandoned = await dispatcher.drain();
    await retrying;
    events.emit("daemon.stopped", { services: names, reason: "signal", abandoned });
  } finally {
    followingStop.abort();
    await following?.done;
    await sessionSockets?.close().catch((error: unknown) => options.warn(`could not close the sessions' sockets: ${messageOf(error)}`));
    await rpc?.close().catch((error: unknown) => options.warn(`could not close the daemon's socket: ${messageOf(error)}`));
    await dashboard?.stop().catch((error: unknown) => options.warn(`could not stop the dashboard: ${messageOf(error)}`));
    await reloads?.stop();
    await receiver?.stop().catch((error: unknown) => options.warn(`could not stop the webhook receiver: ${messageOf(error)}`));
    if (receiver) removeQuietly(statusFile);
    await hooks.close();
    await forwarding?.forwarder.stop();
    await ownership.stop?.();
    // Before the locks go: `stop` returns once the daemon is done, its last notifications with it.
    await notifier?.close();
    unhandled.stop();
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
 * A local hook runs in the daemon's process, and telemetry hooks do fire-and-forget work as they
 * are told to: one such promise rejecting with no handler would end the daemon (Node's default),
 * and every session it looks after with it. With hooks loaded, such a rejection is recorded and
 * the daemon goes on; the-loop's own code leaves none unhandled, so without hooks nothing changes.
 */
function keepRunningThroughHookRejections(hooksLoaded: boolean, events: RuntimeInput["events"], warn: (message: string) => void): { stop(): void } {
  if (!hooksLoaded) return { stop: () => undefined };
  const handler = (reason: unknown): void => {
    const error = messageOf(reason);
    events.emit("daemon.unhandled_rejection", { error });
    warn(`a promise rejected with no handler (a local hook's background work?): ${error}`);
  };
  process.on("unhandledRejection", handler);
  return { stop: () => process.off("unhandledRejection", handler) };
}

/** writeRunningConfig, a failure warned about: the daemon runs on without the record (status then compares nothing). */
async function recordRunningConfig(
  paths: RuntimeInput["paths"],
  config: RuntimeInput["config"],
  configFile: string | undefined,
  warn: (message: string) => void,
): Promise<void> {
  try {
    await writeRunningConfig(paths, config, configFile);
  } catch (error) {
    warn(`could not record the config the daemon runs (${runningConfigFile(paths)}): ${messageOf(error)}; status cannot tell a setting not loaded yet`);
  }
}

interface ConfigFollower {
  /** Stops watching and waits for a reload under way. */
  stop(): Promise<void>;
}

/**
 * Applies every change of the config file to the running dispatcher (reload.ts), one reload at a
 * time in the order the changes were seen, each on the text the watcher read. The file is also
 * read once right away: a change made while the daemon was starting, after its config was read,
 * is caught up on. A reload that failed tells the watcher so, and saving the same text again
 * retries it (the prompt template it names may exist by then).
 */
function followConfigFile(
  configFile: string,
  input: RuntimeInput,
  dispatcher: Dispatcher,
  options: ServeOptions,
  loaded: { readonly capabilities: readonly LoadedCapability[]; readonly notifier?: Notifier; readonly reloaded?: (running: ReloadState["running"]) => void },
): ConfigFollower {
  const { notifier } = loaded;
  let state: ReloadState = initialReloadState(input.config);
  let reloading: Promise<boolean> = Promise.resolve(true);
  const reloadOnce = async (text?: string): Promise<boolean> => {
    try {
      const result = await reloadRouting(state, { configFile, baseDir: input.baseDir, dispatcher, events: input.events, warn: options.warn }, text);
      state = result.state;
      if (result.outcome === "reloaded") {
        await recordRunningConfig(input.paths, state.running, configFile, options.warn);
        // The control keywords a reload applies are the ones notifications name from now on.
        notifier?.setKeywords(notifyKeywordsOf(state.running));
        recheckRuntimes(loaded.capabilities, state.running.routing, input.events, options.warn);
        loaded.reloaded?.(state.running);
      }
      // Emptied by this reload: said as loudly as at start.
      if (result.outcome === "reloaded" && result.applied.includes("routing.authorizedUsers")) {
        warnIfFailClosed(state.running.routing, input, options);
      }
      return result.outcome !== "failed";
    } catch (error) {
      options.warn(`could not reload the config file ${configFile}: ${messageOf(error)}`);
      return false;
    }
  };
  const reload = (text?: string): Promise<boolean> => (reloading = reloading.then(() => reloadOnce(text)));
  const unwatch = watchConfigFile(configFile, (text) => reload(text), {
    onError: (error) => options.warn(`watching the config file ${configFile}: ${messageOf(error)}`),
  });
  void reload();
  return {
    async stop() {
      unwatch();
      await reloading;
    },
  };
}

/**
 * After a reload, each loaded capability's runtimeCompat read again against the harnesses the
 * config now runs, as the start read it (runtime-compat.ts): the daemon keeps running on the
 * capabilities it loaded, so one that supports none of them is an event (which `status` reports
 * until a later reload mends it) and a warning, and one that excludes some is a warning. The point
 * check blocks each item whose session runs in an excluded harness either way.
 */
function recheckRuntimes(capabilities: readonly LoadedCapability[], routing: RoutingConfig, events: EventSink, warn: (message: string) => void): void {
  if (capabilities.length === 0) return;
  const harnesses = configuredHarnesses(routing);
  for (const capability of capabilities) {
    const check = loadedRuntimeCheck(capability.manifest, harnesses, "remove its entry from `capabilities:` and restart the daemon");
    if (check.refusal !== undefined) {
      events.emit("capability.runtime_unsupported", { id: capability.manifest.id, path: capability.dir, harnesses, reason: check.refusal });
      warn(`after the config reload, ${check.refusal}`);
    } else if (check.warning !== undefined) warn(`after the config reload, ${check.warning}`);
  }
}

/** Said at start, and again when a reload empties the list: an empty allowlist is never a silent bug. */
function warnIfFailClosed(routing: RoutingConfig, input: RuntimeInput, options: ServeOptions): void {
  const warning = failClosedWarning(routing);
  if (!warning) return;
  options.warn(warning);
  input.events.emit("routing.fail_closed", { hint: warning });
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
 * A state root an older version made open to others (0755, its files 0644) is closed once, here:
 * 0700, and what the-loop keeps in it 0700 / 0600. The project's own files beside the state (the
 * config) and the checkouts are left as they are. Said once, in the daemon's log.
 */
function tightenStateRootOnce(paths: StatePaths, warn: (message: string) => void): void {
  const within = [
    paths.registryDir,
    paths.controlDir,
    paths.linksDir,
    paths.graphsDir,
    dirname(paths.pollStateFile),
    dirname(paths.eventLog),
    paths.trackerDir,
    paths.tmpDir,
    paths.binDir,
    join(paths.root, "cache"),
    paths.ghWebhookPidfile,
    paths.ghWebhookStatusFile,
    paths.pollPidfile,
    paths.pollStatusFile,
    paths.daemonLog,
    paths.eventLog,
  ];
  try {
    const { rootWas, entries } = tightenStateRoot(paths.root, within);
    if (rootWas === undefined) return;
    warn(
      `the state root ${paths.root} was open to others (mode ${rootWas.toString(8).padStart(4, "0")}), as older versions made it: ` +
        `it is 0700 now, and ${entries} folder${entries === 1 ? "" : "s"} and files in it lost their group and other permissions`,
    );
  } catch (error) {
    warn(`could not make the state root ${paths.root} private (chmod 700 it yourself): ${messageOf(error)}`);
  }
}

/**
 * What a killed process may have left: temporary siblings of atomic writes and text files on
 * their way into a session (each names its writer, and a file whose writer is gone goes, however
 * young). Swept once the locks are held; a live process's files (a `sessions start` in another
 * process) stay. Nothing depends on this succeeding.
 */
function sweepLeftovers(paths: StatePaths): void {
  for (const dir of new Set([paths.root, paths.registryDir, paths.controlDir, dirname(paths.pollStateFile)])) {
    sweepStaleTemporaries(dir);
  }
  sweepScratchFiles(paths.tmpDir);
}
