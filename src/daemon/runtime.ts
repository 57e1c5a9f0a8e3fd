import type { Ownership } from "../fleet/ownership.js";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import type { LoadedCapability } from "../capabilities/load.js";
import type { CliConfig } from "../config/schema.js";
import { resolveConfiguredPath } from "../state/layout.js";
import type { StatePaths } from "../state/layout.js";
import type { EventSink } from "../events/log.js";
import { TmuxRunner } from "../harness/tmux.js";
import { fencedRunner } from "../adoption/fence.js";
import { Poller, localPollSources } from "../ingress/poller.js";
import type { PollSourceRuntime } from "../ingress/poller.js";
import { resolvePollStateFile } from "../ingress/legacy-poll-state.js";
import { PostgresSourceLocks } from "../state/postgres/source-locks.js";
import { ConfigError } from "../config/load.js";
import type { HookChain } from "../hooks/chain.js";
import { GitHubChecksFeed, GitHubFeed } from "../ingress/github-feed/index.js";
import { isLive, stateRootTag } from "../registry/record.js";
import { policyOf } from "../routing/router.js";
import type { EventHandler } from "../routing/inbound.js";
import { openTrackers } from "../trackers/resolve.js";
import type { TrackerSet } from "../trackers/resolve.js";
import { Dispatcher } from "../dispatch/dispatcher.js";
import { graphSetupFor } from "./graph-setup.js";
import { loadPromptTemplates, unknownPlaceholders } from "../sessions/prompts.js";
import type { SessionRegistry } from "../registry/registry.js";
import type { ControlStore } from "../control/store.js";
import type { PullRequestLinks } from "../registry/pr-links.js";
import { storesOn } from "../stores/stores.js";
import type { Stores } from "../stores/stores.js";
import { ensureSessionBin, envPatternMatches, passedEnvironment, sessionEnvironment } from "../sessions/session-env.js";
import { sessionSocketPath } from "./socket/path.js";
import type { CloseOptions } from "../sessions/close.js";
import { harnessPreparer } from "../harness/preparer.js";
import { SandboxRunner, resolveSandboxBinds } from "../sessions/sandbox-runner.js";
import type { WorkspaceProvider } from "../workspace/provider.js";
import { workspacesFor } from "../workspace/index.js";

/** What a command or the daemon needs to know about where it runs. */
export interface RuntimeInput {
  readonly config: CliConfig;
  readonly paths: StatePaths;
  /** The project directory relative paths resolve against. */
  readonly baseDir: string;
  /** The config file in use, if any: sessions inherit it so `the-loop ask` finds the same state. */
  readonly configFile?: string;
  readonly events: EventSink;
  /** Checkouts for sessions; routing.workspace's own when omitted (none when it is disabled). */
  readonly workspaces?: WorkspaceProvider;
  /** Where the records are (openStores, `state.store`); files under the state root when omitted. */
  readonly stores?: Stores;
}

/** The session machinery, composed once per process from the config. */
export interface Runtime {
  /** Every store of the state, on the backend `state.store` names. */
  readonly stores: Stores;
  readonly registry: SessionRegistry;
  /** The last control command of each work item (`<state.root>/sessions/control`). */
  readonly control: ControlStore;
  readonly runner: TmuxRunner;
  readonly trackers: TrackerSet;
  /** Pull request → work item bindings (`<state.root>/sessions/links`). */
  readonly links: PullRequestLinks;
  readonly closeOptions: CloseOptions;
  /**
   * Builds the dispatcher. Prompt templates are read here, so a missing template file fails at
   * start; `warn` hears of placeholders a custom template names that do not exist. `hooks`: the
   * lifecycle hooks it runs (none when omitted).
   */
  dispatcher(
    warn?: (message: string) => void,
    hooks?: HookChain,
    capabilities?: readonly LoadedCapability[],
    ownership?: Ownership,
    forward?: ConstructorParameters<typeof Dispatcher>[2],
  ): Promise<Dispatcher>;
}

/**
 * Text on its way into a session is written under the state root, never a shared /tmp. Sessions
 * get the part of this process's environment a session is given (passedEnvironment), and tmux
 * servers the runner starts hold nothing more.
 */
export function tmuxRunnerFor(config: CliConfig, paths: StatePaths): TmuxRunner {
  mkdirSync(paths.tmpDir, { recursive: true, mode: 0o700 });
  const environment = sessionsEnvironment(config);
  return new TmuxRunner({
    socketName: config.routing.tmux.socketName,
    remainOnExit: config.routing.tmux.remainOnExit,
    tempDir: paths.tmpDir,
    environment,
    // Named as well, for a server that holds them already: the secrets (the state database's URL among them), and a GitHub token not passed on purpose.
    withheldEnv: [...neverPassed(config), ...config.integrations.github.tokenEnv.filter((name) => !Object.hasOwn(environment, name))],
  });
}

/**
 * The part of this process's environment every session is given. No credential of the-loop's
 * own: inside a session the daemon posts the agent's question and runs its hooks (the session's
 * socket, or the daemon's with the session's credential), so the GitHub token and a hook's token
 * reach a session only where `routing.tmux.passEnv` names them.
 */
function sessionsEnvironment(config: CliConfig): Record<string, string> {
  return passedEnvironment(process.env, { pass: [...config.routing.tmux.passEnv], never: neverPassed(config) });
}

/**
 * What no session is given, whatever routing.tmux.passEnv says: an agent has no business with
 * the secret that authenticates GitHub's deliveries, nor with a notification sink's URL (which
 * posts into a person's channel in the-loop's name), nor with the state database's, where it
 * could rewrite every record past the-loop's checks.
 */
function neverPassed(config: CliConfig): string[] {
  return [config.webhooks.ghWebhook.secretEnv, config.state.urlEnv, ...config.notify.sinks.map((sink) => sink.urlEnv)];
}

/**
 * The runner the dispatcher starts harnesses with: `tmux`, each harness inside its sandbox
 * (routing.sandbox, fixed at start: a change waits for a restart, which the reload says).
 */
function sandboxedRunnerFor(input: RuntimeInput, tmux: TmuxRunner): SandboxRunner {
  const { config, paths, events } = input;
  const sandbox = config.routing.sandbox;
  const home = process.env.HOME || homedir();
  const settings = { mode: sandbox.mode, binds: resolveSandboxBinds(sandbox.bind, input.baseDir, home) };
  return new SandboxRunner({
    inner: tmux,
    settings: () => settings,
    stateRoot: paths.root,
    environment: sessionsEnvironment(config),
    sessionBinDir: paths.binDir,
    events,
  });
}

export function composeRuntime(input: RuntimeInput): Runtime {
  const { config, paths, events } = input;
  const routing = config.routing;
  const stores = input.stores ?? storesOn(paths);
  const { registry, control, links } = stores;
  const runner = tmuxRunnerFor(config, paths);
  const trackers = openTrackers(paths, events, { github: config.integrations.github, database: stores.backend.database });
  const at = (path: string): string => resolveConfiguredPath(path, input.baseDir);
  const workspaces = input.workspaces ?? workspacesFor({ config: routing.workspace, root: paths.workspacesDir, events, trackers });
  const closeOptions: CloseOptions = {
    registry,
    runner,
    tmux: routing.tmux,
    events,
    now: () => new Date(),
    control,
    stateRootTag: stateRootTag(paths.root),
    ...(workspaces ? { workspaces } : {}),
  };
  return {
    stores,
    registry,
    control,
    runner,
    trackers,
    links,
    closeOptions,
    async dispatcher(
      warn?: (message: string) => void,
      hooks?: HookChain,
      capabilities?: readonly LoadedCapability[],
      ownership?: Ownership,
      forward?: ConstructorParameters<typeof Dispatcher>[2],
    ): Promise<Dispatcher> {
      const templates = await loadPromptTemplates({
        bootFile: routing.spawnPromptTemplate ? at(routing.spawnPromptTemplate) : undefined,
        eventFile: routing.promptTemplate ? at(routing.promptTemplate) : undefined,
      });
      for (const [key, file, text] of [
        ["routing.spawnPromptTemplate", routing.spawnPromptTemplate, templates.boot],
        ["routing.promptTemplate", routing.promptTemplate, templates.event],
      ] as const) {
        const unknown = file ? unknownPlaceholders(text) : [];
        if (unknown.length > 0) {
          warn?.(`${key} (${file}): unknown placeholder ${unknown.map((name) => `{{${name}}}`).join(", ")} is left as written; see docs/prompts.md`);
        }
      }
      const secret = config.webhooks.ghWebhook.secretEnv;
      if (routing.tmux.passEnv.some((pattern) => envPatternMatches(pattern, secret))) {
        warn?.(`routing.tmux.passEnv names ${secret}, the webhook secret: it is never passed to a session`);
      }
      const binDir = ensureSessionBin(paths.binDir);
      const graph = await graphSetupFor({ ...input, stores }, capabilities);
      return new Dispatcher(
        {
          routing,
          policy: policyOf(routing),
          registry,
          control,
          runner: fencedRunner(sandboxedRunnerFor(input, runner), {
            config,
            daemonLog: paths.daemonLog,
            ...(ownership ? { ownership } : {}),
            ...(warn ? { warn } : {}),
          }),
          trackers,
          events,
          templates,
          spawnCwd: at(routing.spawnWorkdir),
          sessionEnv: (workItem) =>
            sessionEnvironment({ workItem, binDir, configFile: input.configFile, sessionSocket: sessionSocketPath(paths.root, workItem) }),
          stateRootTag: stateRootTag(paths.root),
          links,
          ciAttempts: stores.ciAttempts,
          startQueue: stores.startQueue,
          budgets: stores.budgets,
          prepareHarness: harnessPreparer({ events, workspaceRoot: paths.workspacesDir }),
          ...(workspaces ? { workspaces } : {}),
          ...(hooks ? { hooks } : {}),
          ...(graph ? { graph } : {}),
        },
        ownership,
        forward,
      );
    },
  };
}

/**
 * The poller over the configured sources, feeding the dispatcher. `warn` hears, once, that the
 * poll state still lives in its pre-state-root file. `daemon`: this daemon's name, which its
 * sources' locks carry on a shared database.
 */
export function pollerFor(input: RuntimeInput, runtime: Runtime, handler: EventHandler, warn?: (message: string) => void, daemon = "daemon"): Poller {
  const { config, paths, events } = input;
  const document = runtime.stores.pollState;
  const database = runtime.stores.backend.database;
  // In a database the state has one place; on files it may still be in its pre-state-root file.
  const state = document === undefined ? resolvePollStateFile(paths) : { file: paths.pollStateFile, legacy: false };
  return new Poller({
    sources: [...localPollSources(config.polling.sources, runtime.trackers.local), ...githubPollSources(input, runtime)],
    stateFile: state.file,
    ...(document !== undefined ? { stateDocument: document } : {}),
    // On a shared database each source is polled by one daemon at a time (docs/scale.md).
    ...(database !== undefined ? { claims: new PostgresSourceLocks(database, daemon) } : {}),
    ...(state.legacy ? { legacyState: { newFile: paths.pollStateFile } } : {}),
    ...(warn ? { warn } : {}),
    statusFile: paths.pollStatusFile,
    handler,
    events,
    intervalMs: Math.round(config.polling.intervalSeconds * 1000),
  });
}

/**
 * The configured GitHub sources. The key is the sorted repository list (without the host, which
 * the API fixes), so reordering the config keeps the cursor; changing the list starts a new
 * source from now. The client is only made when a GitHub source exists, and asks for no token
 * until its first request.
 */
function githubPollSources(input: RuntimeInput, runtime: Runtime): PollSourceRuntime[] {
  const { config, events } = input;
  const configured = config.polling.sources.filter((source) => source.provider === "github");
  if (configured.length === 0) return [];
  const github = runtime.trackers.github;
  if (github === undefined) throw new ConfigError("polling.sources names GitHub repositories, but no GitHub tracker is configured here");
  const client = github.client;
  const routing = config.routing;
  const isWatched = (ref: string): boolean => {
    try {
      if (isLive(runtime.registry.get(ref))) return true;
      // A pull request bound to a work item with a live session is watched for that session's sake.
      const bound = runtime.links.get(ref)?.workItem.ref;
      return bound !== undefined && isLive(runtime.registry.get(bound));
    } catch {
      // An unreadable record is reported where sessions are listed; here it just watches nothing.
      return false;
    }
  };
  const feeds = new Map<string, GitHubFeed>();
  const polled = new Set<string>();
  for (const source of configured) {
    const repos = [...new Set(source.repos.map((written) => repositoryOnHost(written, client.host, client.apiUrl)))].sort();
    for (const repo of repos) polled.add(repo);
    const key = `github:${repos.join(",")}`;
    if (feeds.has(key)) continue;
    const label = routing.spawnOnUnmatched === "always" ? null : (source.label ?? routing.autoExecuteLabel);
    feeds.set(key, new GitHubFeed({ key, client, repos, label, isWatched, events }));
  }
  // The CI of the pull requests live sessions work on (docs/github.md#ci-failures), one source over every polled repository.
  const checks = new GitHubChecksFeed({
    key: "github-checks",
    client,
    repos: [...polled].sort(),
    watchedPullRequests: () => livePullRequests(runtime.registry),
    isLive: (ref) => {
      try {
        return isLive(runtime.registry.get(ref));
      } catch {
        // An unreadable record is reported where sessions are listed; here it just watches nothing.
        return false;
      }
    },
    events,
  });
  return [...feeds.values(), checks];
}

/** The pull requests of live sessions: a session's own, and those bound to its work item. */
function livePullRequests(registry: SessionRegistry): string[] {
  const refs = new Set<string>();
  for (const record of registry.list({ status: "live" }).records) {
    if (record.workItem.tracker === "github" && record.workItem.kind === "pull_request") refs.add(record.workItem.ref);
    for (const link of record.pullRequests ?? []) refs.add(link.ref);
  }
  return [...refs];
}

/** `owner/repo` in lower case; a `host/owner/repo` must name the host the configured API serves. */
function repositoryOnHost(written: string, host: string, apiUrl: string): string {
  const parts = written.toLowerCase().split("/");
  if (parts.length === 3 && parts[0] !== host.toLowerCase()) {
    throw new ConfigError(
      `polling.sources: ${written} is on ${parts[0] ?? ""}, but the GitHub API in use (${apiUrl}) serves ${host}; ` +
        `set integrations.github.apiUrl to that host's API, or poll it from another config`,
    );
  }
  return parts.slice(-2).join("/");
}
