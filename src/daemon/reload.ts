import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { readFileSync, unwatchFile, watchFile } from "node:fs";
import type { Stats } from "node:fs";
import { ExitError, errnoOf, messageOf } from "../errors.js";
import { ConfigError } from "../config/load.js";
import { parseConfigText } from "../config/parse.js";
import { formatProblem } from "../config/problem.js";
import type { CliConfig, PollSource, RoutingConfig } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import { policyOf } from "../routing/router.js";
import type { RoutingPolicy } from "../routing/router.js";
import { loadPromptTemplates, unknownPlaceholders } from "../sessions/prompts.js";
import type { PromptTemplates } from "../sessions/prompts.js";
import { resolveConfiguredPath } from "../state/layout.js";

/**
 * Hot reload of the config file (docs/control.md#settings): the running daemon re-reads its config
 * file when it changes and applies the new `routing` without a restart. What was built once at
 * start (the tmux runner, the registry, the dispatch pool, the workspace provider, the poller, the
 * webhook receiver, the event log) keeps the values it was built with until a restart, and the
 * daemon says which keys those are.
 */

// ---------------------------------------------------------------------------------------------
// What changed

export interface ConfigChanges {
  /** Dotted paths that took effect at once. */
  readonly applied: string[];
  /** Dotted paths that wait for a restart: the daemon keeps running on their old values. */
  readonly restartRequired: string[];
}

/**
 * Routing keys read once, when the daemon builds its machinery: the registry folder, the tmux
 * server, the sessions' environment and the pane option, the dispatch pool and dedupe cache sizes, the sessions' working
 * directory (resolved into the dispatcher at start), the workspace provider and the sessions' sandbox. A reload keeps
 * their running values, so the dispatcher never sees a value it was not built with.
 */
const FIXED_AT_START: readonly (readonly string[])[] = [
  ["registryDir"],
  ["tmux", "socketName"],
  ["tmux", "passEnv"],
  ["tmux", "remainOnExit"],
  ["maxConcurrentDispatches"],
  ["dedupCacheSize"],
  ["spawnWorkdir"],
  ["workspace"],
  ["sandbox"],
];

/** Top-level blocks that carry no setting (the format version). */
const NOT_SETTINGS: ReadonlySet<string> = new Set(["version"]);

function isFixedAtStart(path: string): boolean {
  return FIXED_AT_START.some((fixed) => {
    const prefix = ["routing", ...fixed].join(".");
    return path === prefix || path.startsWith(`${prefix}.`);
  });
}

/**
 * What changed under `routing`, as dotted paths (`routing.authorizedUsers`,
 * `routing.control.requireStartCommand`, …), split into what a reload applies and what waits for a
 * restart. `pollSources` are the sources of the running poller: a GitHub source's listing filter
 * (its label, or `routing.autoExecuteLabel`, or none under `spawnOnUnmatched: always`) is fixed
 * when the poller starts — from `started`, the routing the daemon started with (`before` unless
 * told) — so while `after` moves that filter, the keys that move it are restart-required for the
 * poller (and still applied to the router when they changed), like every key fixed at start.
 */
export function routingChanges(
  before: RoutingConfig,
  after: RoutingConfig,
  pollSources: readonly PollSource[] = [],
  started: RoutingConfig = before,
): ConfigChanges {
  const applied: string[] = [];
  const restartRequired: string[] = [];
  for (const path of changedPaths(before, after, "routing")) {
    if (isFixedAtStart(path)) restartRequired.push(path);
    else applied.push(path);
  }
  const github = pollSources.filter((source): source is Extract<PollSource, { provider: "github" }> => source.provider === "github");
  const always = (routing: RoutingConfig): boolean => routing.spawnOnUnmatched === "always";
  // `always` lifts every GitHub listing filter; otherwise a source without a label of its own lists by the routing's.
  if (github.length > 0 && always(started) !== always(after)) restartRequired.push("routing.spawnOnUnmatched");
  if (!always(started) && !always(after) && started.autoExecuteLabel !== after.autoExecuteLabel && github.some((source) => source.label === undefined)) {
    restartRequired.push("routing.autoExecuteLabel");
  }
  return { applied, restartRequired };
}

/**
 * Every change between two configs: `routing` as routingChanges splits it (against the running
 * poller's sources, when it runs), everything else (polling, webhooks, state, eventLog,
 * integrations) restart-required, by dotted path (`polling.intervalSeconds`). `started`: the
 * config the daemon started with, which built its poller (`before` unless told).
 */
export function configChanges(before: CliConfig, after: CliConfig, started: CliConfig = before): ConfigChanges {
  const routing = routingChanges(before.routing, after.routing, started.polling.enabled ? started.polling.sources : [], started.routing);
  const elsewhere: string[] = [];
  for (const key of unionOfKeys(before, after)) {
    if (key === "routing" || NOT_SETTINGS.has(key)) continue;
    elsewhere.push(...changedPaths(field(before, key), field(after, key), key));
  }
  return { applied: routing.applied, restartRequired: [...routing.restartRequired, ...elsewhere] };
}

/**
 * `after`, with every key fixed at start put back to its value in `running`: what the dispatcher
 * is given on a reload.
 */
export function withFixedKeys(after: RoutingConfig, running: RoutingConfig): RoutingConfig {
  const merged = structuredClone(after) as unknown as Record<string, unknown>;
  for (const path of FIXED_AT_START) {
    const value = valueAt(running, path);
    let parent: Record<string, unknown> = merged;
    for (const key of path.slice(0, -1)) {
      const next = parent[key];
      parent = isPlainObject(next) ? next : (parent[key] = {});
    }
    const last = path[path.length - 1] as string;
    if (value === undefined) delete parent[last];
    else parent[last] = structuredClone(value);
  }
  return merged as unknown as RoutingConfig;
}

function valueAt(root: unknown, path: readonly string[]): unknown {
  let value = root;
  for (const key of path) value = isPlainObject(value) ? value[key] : undefined;
  return value;
}

function field(value: unknown, key: string): unknown {
  return isPlainObject(value) ? value[key] : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Keys with a value on either side, in order of first appearance (`undefined` counts as absent). */
function unionOfKeys(before: unknown, after: unknown): string[] {
  const keys = new Set<string>();
  for (const side of [before, after]) {
    if (!isPlainObject(side)) continue;
    for (const [key, value] of Object.entries(side)) if (value !== undefined) keys.add(key);
  }
  return [...keys];
}

/** Leaves that differ: objects on both sides are walked into; arrays and scalars are compared whole. */
function changedPaths(before: unknown, after: unknown, prefix: string): string[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    return unionOfKeys(before, after).flatMap((key) => changedPaths(before[key], after[key], `${prefix}.${key}`));
  }
  return deepEqual(before, after) ? [] : [prefix];
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, index) => deepEqual(item, b[index]));
  }
  if (isPlainObject(a) && isPlainObject(b)) return unionOfKeys(a, b).every((key) => deepEqual(a[key], b[key]));
  return false;
}

// ---------------------------------------------------------------------------------------------
// Watching the file

export interface WatchOptions {
  /** How often the file is stat'ed (default 500 ms). */
  readonly intervalMs?: number;
  /** Quiet time after the last change before the file is read (default 200 ms). */
  readonly debounceMs?: number;
  /** Told when reading the file or `onChange` fails; the watcher carries on. */
  readonly onError?: (error: unknown) => void;
  /** Told after every read of the file whether its content changed (diagnostics and tests). */
  readonly onCheck?: (changed: boolean) => void;
  /** Told when a read finds the file gone or empty and waits for the save to finish (diagnostics and tests). */
  readonly onSaveInProgress?: (why: "gone" | "empty") => void;
}

/**
 * Calls `onChange` with the file's new text whenever its content changes; returns the function
 * that stops watching. The file is stat'ed rather than watched through inotify, so an editor that
 * saves by writing a new file and renaming it over the old one is followed (the path is watched,
 * not the inode, and a symlink is followed to whatever it points at now). Changes are debounced,
 * a rewrite with the same content is no change (a hash of the text is compared), a missing or
 * empty file is waited out (a rename-replace or a truncate-then-write can be caught between its
 * steps), and `onChange` runs one call at a time: a change during a call is looked at after it.
 * When `onChange` answers `false` (the text was not taken: it names a prompt template that is not
 * there yet, say), the next change is looked at even if it leaves the same text, so saving the
 * file again retries it. Nothing here throws into the event loop, and the watcher keeps no
 * process alive by itself.
 */
export function watchConfigFile(path: string, onChange: (text: string) => void | boolean | Promise<void | boolean>, options: WatchOptions = {}): () => void {
  const intervalMs = options.intervalMs ?? 500;
  const debounceMs = options.debounceMs ?? 200;
  const report = (error: unknown): void => {
    try {
      options.onError?.(error);
    } catch {
      // A reporter that fails has nobody left to tell.
    }
  };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let checking = false;
  let again = false;
  // The content at the start, which the first change is compared with.
  let known: string | undefined;
  try {
    known = hashOf(readFileSync(path, "utf8"));
  } catch {
    // Not there yet: whatever appears is a change.
  }

  const check = async (): Promise<void> => {
    if (stopped) return;
    if (checking) {
      again = true;
      return;
    }
    checking = true;
    try {
      let text: string;
      try {
        text = await readFile(path, "utf8");
      } catch (error) {
        // Gone for now (a rename-replace in progress, or deleted): the next change is looked at.
        if (errnoOf(error) !== "ENOENT") report(error);
        else options.onSaveInProgress?.("gone");
        return;
      }
      // Truncated and not yet written: the write that follows is the change.
      if (isSaveInProgress(text)) {
        options.onSaveInProgress?.("empty");
        return;
      }
      const hash = hashOf(text);
      const changed = hash !== known;
      known = hash;
      options.onCheck?.(changed);
      if (changed && !stopped && (await onChange(text)) === false) known = undefined;
    } catch (error) {
      // Not taken either: the same text is looked at again.
      known = undefined;
      report(error);
    } finally {
      checking = false;
      if (again && !stopped) {
        again = false;
        schedule();
      }
    }
  };
  const schedule = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void check();
    }, debounceMs);
    timer.unref();
  };
  const listener = (current: Stats, previous: Stats): void => {
    if (stopped) return;
    if (current.mtimeMs === previous.mtimeMs && current.ino === previous.ino && current.size === previous.size) return;
    schedule();
  };
  watchFile(path, { interval: intervalMs, persistent: false }, listener);
  return () => {
    stopped = true;
    unwatchFile(path, listener);
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
}

function hashOf(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

// ---------------------------------------------------------------------------------------------
// Applying a reload

/** What the dispatcher is given on a reload (Dispatcher.reconfigure). */
export interface RoutingUpdate {
  readonly routing: RoutingConfig;
  readonly policy: RoutingPolicy;
  readonly templates: PromptTemplates;
}

/** The part of the dispatcher a reload talks to. */
export interface Reconfigurable {
  reconfigure(next: RoutingUpdate): void;
}

export interface ReloadContext {
  /** The config file the daemon runs on (absolute). */
  readonly configFile: string;
  /** The project directory the template paths resolve against (as at start). */
  readonly baseDir: string;
  readonly dispatcher: Reconfigurable;
  readonly events: EventSink;
  readonly warn: (message: string) => void;
  /** What `~` in a template path stands for (default: this user's home). */
  readonly homeDir?: string;
}

export interface ReloadState {
  /** What the daemon runs on: `routing` as the dispatcher has it, every other block as at start. */
  readonly running: CliConfig;
  /** The file's last valid content: a reload that validates to it again changes nothing. */
  readonly file: CliConfig;
  /** The config the daemon started with, which built what a reload cannot change (the poller). */
  readonly started: CliConfig;
}

export type ReloadResult =
  | { readonly outcome: "unchanged"; readonly state: ReloadState }
  | { readonly outcome: "reloaded"; readonly state: ReloadState; readonly applied: string[]; readonly restartRequired: string[] }
  | { readonly outcome: "failed"; readonly state: ReloadState; readonly error: string };

/** The state of a daemon that has just loaded `config`. */
export function initialReloadState(config: CliConfig): ReloadState {
  return { running: config, file: config, started: config };
}

/**
 * Applies the config file's text — `text` as the watcher read it, or the file read now — to the
 * running daemon. The text is validated as the loader validates it at start. An invalid file (or
 * a prompt template that cannot be read) is reported (`config.reload_failed`, a warning) and the
 * daemon keeps the config it had. A valid one is compared with what runs: the routing a reload can
 * apply goes to the dispatcher (with the keys fixed at start kept at their running values), and
 * `config.reloaded` lists what was applied and what waits for a restart, which is also warned
 * about by name. A file whose content means what the daemon already runs on emits nothing, and
 * so does a file that is gone or empty: that is a save in progress (a rename-replace between its
 * steps, a truncate before the write), never a config to run on — read as YAML, an empty file
 * would be every default, the empty allowlist included. Never throws.
 */
export async function reloadRouting(state: ReloadState, context: ReloadContext, text?: string): Promise<ReloadResult> {
  const { configFile, events } = context;
  const fail = (error: unknown): ReloadResult => {
    const message = errorText(error);
    events.emit("config.reload_failed", { config: configFile, error: message });
    context.warn(`the config file ${configFile} changed, but cannot be used; the daemon keeps running on the config it had: ${message}`);
    return { outcome: "failed", state, error: message };
  };
  let content = text;
  if (content === undefined) {
    try {
      content = await readFile(configFile, "utf8");
    } catch (error) {
      if (errnoOf(error) === "ENOENT") return { outcome: "unchanged", state };
      return fail(error);
    }
  }
  if (isSaveInProgress(content)) return { outcome: "unchanged", state };
  let next: CliConfig;
  try {
    next = configOf(content, configFile);
  } catch (error) {
    return fail(error);
  }
  if (deepEqual(next, state.file)) return { outcome: "unchanged", state };
  const { applied, restartRequired } = configChanges(state.running, next, state.started);
  if (applied.length === 0 && restartRequired.length === 0) return { outcome: "unchanged", state: { ...state, file: next } };

  let running = state.running;
  if (applied.length > 0) {
    const routing = withFixedKeys(next.routing, state.running.routing);
    try {
      const templates = await templatesFor(routing, context.baseDir, context.homeDir);
      warnUnknownPlaceholders(routing, templates, applied, context.warn);
      context.dispatcher.reconfigure({ routing, policy: policyOf(routing), templates });
    } catch (error) {
      return fail(error);
    }
    running = { ...state.running, routing };
  }
  events.emit("config.reloaded", { config: configFile, applied, restart_required: restartRequired });
  if (restartRequired.length > 0) {
    context.warn(
      `the config file ${configFile} changed ${restartRequired.join(", ")}, which take${restartRequired.length === 1 ? "s" : ""} effect only after a restart ` +
        "(`the-loop stop`, then `the-loop start`); until then the daemon keeps the values it started with",
    );
  }
  return { outcome: "reloaded", state: { ...state, running, file: next }, applied, restartRequired };
}

/** Nothing but whitespace: a file being rewritten (truncated, not yet written), not a config. */
function isSaveInProgress(text: string): boolean {
  return text.trim() === "";
}

/** The config in `text`, validated as loadConfig validates a file; a ConfigError listing every problem. */
function configOf(text: string, file: string): CliConfig {
  const outcome = parseConfigText(text);
  if (outcome.problems.length === 0 && outcome.config) return outcome.config;
  const lines = outcome.problems.map((problem) => formatProblem(problem, file));
  const only = lines.length === 1 ? lines[0] : undefined;
  throw only ? new ConfigError(`invalid config: ${only}`) : new ConfigError(`invalid config ${file}: ${lines.length} problems`, lines);
}

/** The prompt templates the routing names, read as composeRuntime reads them. */
function templatesFor(routing: RoutingConfig, baseDir: string, homeDir: string | undefined): Promise<PromptTemplates> {
  const at = (path: string): string => (homeDir === undefined ? resolveConfiguredPath(path, baseDir) : resolveConfiguredPath(path, baseDir, homeDir));
  return loadPromptTemplates({
    bootFile: routing.spawnPromptTemplate ? at(routing.spawnPromptTemplate) : undefined,
    eventFile: routing.promptTemplate ? at(routing.promptTemplate) : undefined,
  });
}

/** As at start, for a template the reload newly names. */
function warnUnknownPlaceholders(routing: RoutingConfig, templates: PromptTemplates, applied: readonly string[], warn: (message: string) => void): void {
  for (const [key, file, text] of [
    ["routing.spawnPromptTemplate", routing.spawnPromptTemplate, templates.boot],
    ["routing.promptTemplate", routing.promptTemplate, templates.event],
  ] as const) {
    if (!file || !applied.includes(key)) continue;
    const unknown = unknownPlaceholders(text);
    if (unknown.length > 0) {
      warn(`${key} (${file}): unknown placeholder ${unknown.map((name) => `{{${name}}}`).join(", ")} is left as written; see docs/prompts.md`);
    }
  }
}

/** The loader's message with its listed problems, one per line. */
function errorText(error: unknown): string {
  const details = error instanceof ExitError ? error.details : [];
  return [messageOf(error), ...details].join("\n");
}
