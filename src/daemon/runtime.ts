import { mkdirSync } from "node:fs";
import type { CliConfig } from "../config/schema.js";
import { resolveConfiguredPath } from "../state/layout.js";
import type { StatePaths } from "../state/layout.js";
import type { EventSink } from "../events/log.js";
import { TmuxRunner } from "../harness/tmux.js";
import { Poller, localPollSources } from "../ingress/poller.js";
import { policyOf } from "../routing/router.js";
import { openTrackers } from "../trackers/resolve.js";
import type { TrackerSet } from "../trackers/resolve.js";
import { Dispatcher } from "../sessions/dispatcher.js";
import { loadPromptTemplates, unknownPlaceholders } from "../sessions/prompts.js";
import { SessionRegistry } from "../sessions/registry.js";
import { ensureSessionBin, sessionEnvironment } from "../sessions/session-env.js";
import type { CloseOptions } from "../sessions/close.js";

/** What a command or the daemon needs to know about where it runs. */
export interface RuntimeInput {
  readonly config: CliConfig;
  readonly paths: StatePaths;
  /** The project directory relative paths resolve against. */
  readonly baseDir: string;
  /** The config file in use, if any: sessions inherit it so `the-loop ask` finds the same state. */
  readonly configFile?: string;
  readonly events: EventSink;
}

/** The session machinery, composed once per process from the config. */
export interface Runtime {
  readonly registry: SessionRegistry;
  readonly runner: TmuxRunner;
  readonly trackers: TrackerSet;
  readonly closeOptions: CloseOptions;
  /**
   * Builds the dispatcher. Prompt templates are read here, so a missing template file fails at
   * start; `warn` hears of placeholders a custom template names that do not exist.
   */
  dispatcher(warn?: (message: string) => void): Promise<Dispatcher>;
}

/** Text on its way into a session is written under the state root, never a shared /tmp. */
export function tmuxRunnerFor(config: CliConfig, paths: StatePaths): TmuxRunner {
  mkdirSync(paths.tmpDir, { recursive: true, mode: 0o700 });
  return new TmuxRunner({
    socketName: config.routing.tmux.socketName,
    remainOnExit: config.routing.tmux.remainOnExit,
    tempDir: paths.tmpDir,
  });
}

export function composeRuntime(input: RuntimeInput): Runtime {
  const { config, paths, events } = input;
  const routing = config.routing;
  const registry = new SessionRegistry({ dir: paths.registryDir });
  const runner = tmuxRunnerFor(config, paths);
  const trackers = openTrackers(paths, events);
  const at = (path: string): string => resolveConfiguredPath(path, input.baseDir);
  const closeOptions: CloseOptions = { registry, runner, tmux: routing.tmux, events, now: () => new Date() };
  return {
    registry,
    runner,
    trackers,
    closeOptions,
    async dispatcher(warn?: (message: string) => void): Promise<Dispatcher> {
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
      const binDir = ensureSessionBin(paths.binDir);
      return new Dispatcher({
        routing,
        policy: policyOf(routing),
        registry,
        runner,
        trackers,
        events,
        templates,
        spawnCwd: at(routing.spawnWorkdir),
        sessionEnv: (workItem) => sessionEnvironment({ workItem, binDir, configFile: input.configFile }),
      });
    },
  };
}

/** The poller over the configured sources, feeding the dispatcher. */
export function pollerFor(input: RuntimeInput, runtime: Runtime, dispatcher: Dispatcher): Poller {
  const { config, paths, events } = input;
  return new Poller({
    sources: localPollSources(config.polling.sources, runtime.trackers.local),
    stateFile: paths.pollStateFile,
    statusFile: paths.pollStatusFile,
    handler: dispatcher,
    events,
    intervalMs: Math.round(config.polling.intervalSeconds * 1000),
  });
}
