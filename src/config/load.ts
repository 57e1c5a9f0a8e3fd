import { promises as fs } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { EXIT_USAGE, ExitError, errnoOf } from "../errors.js";
import { deriveStatePaths } from "../state/layout.js";
import type { StatePaths } from "../state/layout.js";
import type { ParseOutcome } from "./parse.js";
import { formatProblem } from "./problem.js";
import type { ConfigProblem } from "./problem.js";
import type { CliConfig } from "./schema.js";
import { cacheFileFor, cacheKey, readCachedConfig, writeCachedConfig } from "./cache.js";

export const CONFIG_ENV = "THE_LOOP_CLI_CONFIG";
export const CONFIG_DIR_NAME = ".the-loop";
export const CONFIG_FILE_NAME = "cli-config.yaml";

export type ConfigOrigin = "flag" | "env" | "project" | "home" | "none";

export interface ConfigSource {
  /** Absolute path of the file read; null when no file was found and defaults apply. */
  readonly path: string | null;
  readonly origin: ConfigOrigin;
}

export interface LoadedConfig {
  readonly config: CliConfig;
  readonly source: ConfigSource;
  /** Relative paths in the config resolve against this directory. */
  readonly baseDir: string;
  readonly paths: StatePaths;
  readonly warnings: readonly ConfigProblem[];
}

export interface LoadOptions {
  /** `--config <path>`: must exist. */
  readonly explicitPath?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  readonly homeDir?: string;
}

/** A config that cannot be used. Exit 2, every problem listed. */
export class ConfigError extends ExitError {
  override readonly name: string = "ConfigError";
  constructor(
    message: string,
    readonly problems: readonly string[] = [],
  ) {
    super(message, EXIT_USAGE, "config", problems);
  }
}

function exists(path: string): Promise<boolean> {
  return fs.stat(path).then(
    () => true,
    () => false,
  );
}

/** Where discovery looks when neither `--config` nor the environment names a file, in words. */
export const DISCOVERY_PLACES = `${CONFIG_DIR_NAME}/${CONFIG_FILE_NAME} in the current directory or a folder above it, then ~/${CONFIG_DIR_NAME}/${CONFIG_FILE_NAME}`;

/**
 * The nearest `.the-loop/cli-config.yaml` from `cwd` upwards, as git finds `.git`. The home
 * directory's own is not a project's: the walk stops below it (unless the command runs in the
 * home directory itself), and it stays the last fallback.
 */
async function nearestProjectConfig(cwd: string, homeDir: string): Promise<string | null> {
  const home = resolve(homeDir);
  for (let dir = resolve(cwd); ;) {
    if (dir === home && dir !== resolve(cwd)) return null;
    const candidate = join(dir, CONFIG_DIR_NAME, CONFIG_FILE_NAME);
    if (await exists(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/**
 * `--config` → `$THE_LOOP_CLI_CONFIG` → the nearest `.the-loop/cli-config.yaml` from the current
 * directory up → `~/.the-loop/cli-config.yaml`.
 */
export async function discoverConfig(options: LoadOptions = {}): Promise<ConfigSource> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const homeDir = options.homeDir ?? homedir();
  if (options.explicitPath) return { path: resolve(cwd, options.explicitPath), origin: "flag" };
  const fromEnv = env[CONFIG_ENV];
  if (fromEnv) return { path: resolve(cwd, fromEnv), origin: "env" };
  const project = await nearestProjectConfig(cwd, homeDir);
  if (project) return { path: project, origin: "project" };
  const home = join(homeDir, CONFIG_DIR_NAME, CONFIG_FILE_NAME);
  if (await exists(home)) return { path: home, origin: "home" };
  return { path: null, origin: "none" };
}

/**
 * The project directory relative paths resolve against: the folder that holds `.the-loop/` when
 * the config sits in one (so `state.root: .the-loop` means that very folder), otherwise the
 * config file's own folder; with no config file, the current directory.
 */
export function baseDirFor(source: ConfigSource, cwd: string): string {
  if (!source.path) return cwd;
  const folder = dirname(source.path);
  return basename(folder) === CONFIG_DIR_NAME ? dirname(folder) : folder;
}

/**
 * The line a command prints on stderr when it works on a project other than the current
 * directory's: a config discovered above it or in the home directory (one named by `--config` or
 * the environment was chosen on purpose). Names the state root too when it is not beside the
 * config. Undefined when there is nothing to say.
 */
export function elsewhereNote(loaded: Pick<LoadedConfig, "source" | "baseDir" | "paths">, cwd: string): string | undefined {
  const { path, origin } = loaded.source;
  if (path === null || (origin !== "project" && origin !== "home")) return undefined;
  if (resolve(loaded.baseDir) === resolve(cwd)) return undefined;
  const root = loaded.paths.root;
  return root === dirname(path) ? `using ${path}` : `using ${path} (state root ${root})`;
}

const ORIGIN_LABEL: Record<ConfigOrigin, string> = {
  flag: "--config",
  env: `$${CONFIG_ENV}`,
  project: "the project",
  home: "the home directory",
  none: "defaults",
};

async function readConfigText(source: ConfigSource & { path: string }): Promise<string> {
  try {
    return await fs.readFile(source.path, "utf8");
  } catch (error) {
    const code = errnoOf(error);
    const from = ORIGIN_LABEL[source.origin];
    if (code === "ENOENT") {
      throw new ConfigError(`config file ${source.path} (named by ${from}) does not exist; create it with \`the-loop init\``);
    }
    if (code === "EACCES" || code === "EPERM") {
      throw new ConfigError(`cannot read config file ${source.path}: permission denied; fix its permissions`);
    }
    if (code === "EISDIR") throw new ConfigError(`config path ${source.path} is a directory, not a file`);
    throw new ConfigError(`cannot read config file ${source.path}: ${code ?? String(error)}`);
  }
}

function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith("..") ? rel : path;
}

export async function loadConfig(options: LoadOptions = {}): Promise<LoadedConfig> {
  const cwd = options.cwd ?? process.cwd();
  const homeDir = options.homeDir ?? homedir();
  const source = await discoverConfig({ ...options, cwd, homeDir });
  const baseDir = baseDirFor(source, cwd);
  const derive = (config: CliConfig, warnings: readonly ConfigProblem[]): LoadedConfig => ({
    config,
    source,
    baseDir,
    paths: deriveStatePaths(config, baseDir, homeDir),
    warnings,
  });
  if (!source.path) {
    const { configSchema } = await import("./schema.js");
    return derive(configSchema.parse({}), []);
  }
  const text = await readConfigText({ ...source, path: source.path });
  const cacheFile = cacheFileFor(source.path, options.env ?? process.env, homeDir);
  const key = cacheKey(source.path, text);
  const cached = readCachedConfig(cacheFile, key);
  if (cached) return derive(cached.config, cached.warnings);
  const { parseConfigText } = await import("./parse.js");
  const outcome: ParseOutcome = parseConfigText(text);
  if (outcome.problems.length > 0 || !outcome.config) {
    const file = displayPath(source.path, cwd);
    const lines = outcome.problems.map((problem) => formatProblem(problem, file));
    const only = lines.length === 1 ? lines[0] : undefined;
    throw only ? new ConfigError(`invalid config: ${only}`) : new ConfigError(`invalid config ${file}: ${lines.length} problems`, lines);
  }
  writeCachedConfig(cacheFile, key, { config: outcome.config, warnings: outcome.warnings });
  return derive(outcome.config, outcome.warnings);
}
