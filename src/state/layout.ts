import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

/**
 * Every file the-loop generates, derived from one root (`state.root`). A path the config sets
 * explicitly is used as written — it is not moved under the root — so an existing config keeps
 * working when the root changes.
 *
 *   <root>/sessions/<slug>.json            session records (routing.registryDir)
 *   <root>/sessions/control/<slug>.json    the last control command per work item
 *   <root>/sessions/links/<slug>.json      pull request → work item bindings
 *   <root>/graphs/<slug>.json              each work item's process graph state (where it is, how it got there)
 *   <root>/sessions/poll-state.json        poller cursors (polling.stateFile)
 *   <root>/logs/events.jsonl               the event log (eventLog.path)
 *   <root>/gh-webhook.pid                  webhook receiver pidfile (webhooks.ghWebhook.pidfile)
 *   <root>/gh-webhook-status.json          where the running receiver listens (how `start` learns a chosen port)
 *   <root>/poll.pid                        poller pidfile (its single-instance lock)
 *   <root>/poll-status.json                the poller's heartbeat: when it last ran a cycle
 *   <root>/logs/daemon.out                 stdout and stderr of a daemon started with `the-loop start`
 *   <root>/bin/the-loop                    link to this CLI, put first on the PATH of every session
 *   <root>/tmp/                            short-lived files (text on its way into a session)
 *   <root>/cache/                          caches safe to delete (what `sessions list` last read)
 *   <root>/tracker/                        the local tracker's items
 *   <root>/workspaces/                     checkouts (routing.workspace.root)
 *
 * `legacyPollStateFile` is where poll state lived before the state root existed
 * (`<project>/.the-loop/poll-state.json`); it is only consulted when `polling.stateFile` is unset.
 */
export interface StatePaths {
  readonly root: string;
  readonly registryDir: string;
  readonly controlDir: string;
  readonly linksDir: string;
  /** Per pull request: the CI failures its session was told of (feedback/attempts.ts). */
  readonly ciDir: string;
  readonly graphsDir: string;
  readonly pollStateFile: string;
  /** null when polling.stateFile is configured: an explicit path is never second-guessed. */
  readonly legacyPollStateFile: string | null;
  readonly eventLog: string;
  readonly ghWebhookPidfile: string;
  readonly ghWebhookStatusFile: string;
  readonly pollPidfile: string;
  readonly pollStatusFile: string;
  readonly daemonLog: string;
  readonly binDir: string;
  readonly tmpDir: string;
  readonly trackerDir: string;
  readonly workspacesDir: string;
}

/** Expands `~` and resolves a relative path against the documented base directory. */
export function resolveConfiguredPath(path: string, baseDir: string, home: string = homedir()): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return isAbsolute(path) ? resolve(path) : resolve(baseDir, path);
}

/**
 * The settings the layout is derived from, as the config holds them: the state root stands below
 * the config, so it names what it reads rather than importing the config's type.
 */
export interface StateLayoutSettings {
  readonly state: { readonly root: string };
  readonly routing: { readonly registryDir?: string | undefined; readonly workspace: { readonly root?: string | undefined } };
  readonly polling: { readonly stateFile?: string | undefined };
  readonly eventLog: { readonly path?: string | undefined };
  readonly webhooks: { readonly ghWebhook: { readonly pidfile?: string | undefined } };
}

export function deriveStatePaths(config: StateLayoutSettings, baseDir: string, home: string = homedir()): StatePaths {
  const at = (path: string): string => resolveConfiguredPath(path, baseDir, home);
  const root = at(config.state.root);
  const sessions = join(root, "sessions");
  const registryDir = config.routing.registryDir ? at(config.routing.registryDir) : sessions;
  return {
    root,
    registryDir,
    controlDir: join(sessions, "control"),
    linksDir: join(sessions, "links"),
    ciDir: join(sessions, "ci"),
    graphsDir: join(root, "graphs"),
    pollStateFile: config.polling.stateFile ? at(config.polling.stateFile) : join(sessions, "poll-state.json"),
    legacyPollStateFile: config.polling.stateFile ? null : join(baseDir, ".the-loop", "poll-state.json"),
    eventLog: config.eventLog.path ? at(config.eventLog.path) : join(root, "logs", "events.jsonl"),
    ghWebhookPidfile: config.webhooks.ghWebhook.pidfile ? at(config.webhooks.ghWebhook.pidfile) : join(root, "gh-webhook.pid"),
    ghWebhookStatusFile: join(root, "gh-webhook-status.json"),
    pollPidfile: join(root, "poll.pid"),
    pollStatusFile: join(root, "poll-status.json"),
    daemonLog: join(root, "logs", "daemon.out"),
    binDir: join(root, "bin"),
    tmpDir: join(root, "tmp"),
    trackerDir: join(root, "tracker"),
    workspacesDir: config.routing.workspace.root ? at(config.routing.workspace.root) : join(root, "workspaces"),
  };
}
