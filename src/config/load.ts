import { promises as fs } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { LineCounter, isMap, isPair, isScalar, isSeq, parseDocument } from "yaml";
import type { Document, Node } from "yaml";
import type { z } from "zod";
import { EXIT_USAGE, ExitError, errnoOf } from "../errors.js";
import { deriveStatePaths } from "../state/layout.js";
import type { StatePaths } from "../state/layout.js";
import { configJsonSchema, schemaNodeAt } from "./json-schema.js";
import { configSchema } from "./schema.js";
import type { CliConfig } from "./schema.js";

export const CONFIG_ENV = "THE_LOOP_CLI_CONFIG";
export const CONFIG_DIR_NAME = ".the-loop";
export const CONFIG_FILE_NAME = "cli-config.yaml";

export type ConfigOrigin = "flag" | "env" | "project" | "home" | "none";

export interface ConfigSource {
  /** Absolute path of the file read; null when no file was found and defaults apply. */
  readonly path: string | null;
  readonly origin: ConfigOrigin;
}

export interface ConfigProblem {
  /** Dotted key path (`state.root`, `hooks[0].url`); empty for the document as a whole. */
  readonly path: string;
  readonly message: string;
  readonly line?: number;
  readonly column?: number;
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

/** `--config` → `$THE_LOOP_CLI_CONFIG` → `./.the-loop/cli-config.yaml` → `~/.the-loop/cli-config.yaml`. */
export async function discoverConfig(options: LoadOptions = {}): Promise<ConfigSource> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  if (options.explicitPath) return { path: resolve(cwd, options.explicitPath), origin: "flag" };
  const fromEnv = env[CONFIG_ENV];
  if (fromEnv) return { path: resolve(cwd, fromEnv), origin: "env" };
  const project = join(cwd, CONFIG_DIR_NAME, CONFIG_FILE_NAME);
  if (await exists(project)) return { path: project, origin: "project" };
  const home = join(options.homeDir ?? homedir(), CONFIG_DIR_NAME, CONFIG_FILE_NAME);
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

type Segment = string | number;

function keyOf(pair: unknown): unknown {
  return isPair(pair) && isScalar(pair.key) ? pair.key.value : isPair(pair) ? pair.key : undefined;
}

/** The start offset of the deepest node along `path` that exists: a key where there is one. */
function offsetOf(doc: Document, path: readonly Segment[]): number | undefined {
  let node: unknown = doc.contents;
  let offset = (doc.contents as Node | null)?.range?.[0];
  for (const segment of path) {
    if (isMap(node)) {
      const pair = node.items.find((item) => String(keyOf(item)) === String(segment));
      if (!pair) break;
      offset = (pair.key as Node | null)?.range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === "number") {
      const item = node.items[segment] as Node | undefined;
      if (!item) break;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else {
      break;
    }
  }
  return offset;
}

export function formatPath(path: readonly Segment[]): string {
  return path.reduce<string>(
    (text, segment) => (typeof segment === "number" ? `${text}[${segment}]` : text ? `${text}.${segment}` : segment),
    "",
  );
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] ?? 0;
      row[j] = Math.min(above + 1, (row[j - 1] ?? 0) + 1, diagonal + (a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] ?? 0;
}

function unknownKeyMessage(parent: readonly Segment[], key: string): string {
  const known = Object.keys(schemaNodeAt(configJsonSchema(), parent)?.properties ?? {});
  const close = known
    .map((candidate) => ({ candidate, distance: editDistance(key, candidate) }))
    .filter(({ distance }) => distance <= Math.max(2, Math.floor(key.length / 3)))
    .sort((a, b) => a.distance - b.distance)[0];
  const hint = close ? `; did you mean "${close.candidate}"?` : known.length ? `; known keys here: ${known.join(", ")}` : "";
  return `unknown key${hint}`;
}

export interface ParseOutcome {
  readonly config?: CliConfig;
  readonly problems: readonly ConfigProblem[];
  readonly warnings: readonly ConfigProblem[];
}

/** Validates a config text completely, collecting every problem rather than stopping at the first. */
export function parseConfigText(text: string): ParseOutcome {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const at = (path: readonly Segment[], documentPath: readonly Segment[] = path): Pick<ConfigProblem, "line" | "column"> => {
    const offset = offsetOf(doc, documentPath);
    if (offset === undefined) return {};
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  if (doc.errors.length > 0) {
    return {
      problems: doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return { path: "", message: `YAML syntax: ${error.message.split("\n")[0] ?? error.code}`, line, column: col };
      }),
      warnings: [],
    };
  }
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 }) ?? {};
  } catch (error) {
    return { problems: [{ path: "", message: `YAML: ${(error as Error).message}` }], warnings: [] };
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return { problems: [{ path: "", message: "the config must be a mapping of keys to values", ...at([]) }], warnings: [] };
  }

  const problems: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  const input = structuredClone(raw) as Record<string, unknown>;
  // Where a key of the normalized input was written in the document, when that differs.
  let documentPathOf = (path: readonly Segment[]): readonly Segment[] => path;

  const ghWebhook = (input.webhooks as Record<string, unknown> | undefined)?.ghWebhook as Record<string, unknown> | undefined;
  if (ghWebhook && typeof ghWebhook === "object" && "routing" in ghWebhook) {
    const legacy = ["webhooks", "ghWebhook", "routing"];
    if ("routing" in input) {
      problems.push({
        path: formatPath(legacy),
        message: `routing is set both at the top level (line ${at(["routing"]).line ?? "?"}) and here; keep only the top-level block`,
        ...at(legacy),
      });
    } else {
      input.routing = ghWebhook.routing;
      delete ghWebhook.routing;
      documentPathOf = (path) => (path[0] === "routing" ? [...legacy, ...path.slice(1)] : path);
      warnings.push({
        path: formatPath(legacy),
        message: "this is the older spelling of the top-level `routing` block; it is read as `routing`. Move it to the top level.",
        ...at(legacy),
      });
    }
  }

  const result = configSchema.safeParse(input);
  if (!result.success) {
    for (const issue of result.error.issues as z.core.$ZodIssue[]) {
      const path = issue.path.filter((segment): segment is Segment => typeof segment !== "symbol");
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) {
          const keyPath = [...path, key];
          problems.push({
            path: formatPath(documentPathOf(keyPath)),
            message: unknownKeyMessage(path, key),
            ...at(keyPath, documentPathOf(keyPath)),
          });
        }
      } else {
        problems.push({
          path: formatPath(documentPathOf(path)),
          message: issue.message.replace(/^Invalid input: /, ""),
          ...at(path, documentPathOf(path)),
        });
      }
    }
  }
  if (problems.length > 0 || !result.success) return { problems, warnings };

  const config = result.data;
  return {
    config: {
      ...config,
      integrations: {
        ...config.integrations,
        local: { ...config.integrations.local, project: config.integrations.local.project.toLowerCase() },
      },
    },
    problems,
    warnings,
  };
}

/** `file:line:col: key.path: message`, the form every config problem is reported in. */
export function formatProblem(problem: ConfigProblem, file: string): string {
  const position = problem.line ? `:${problem.line}${problem.column ? `:${problem.column}` : ""}` : "";
  const key = problem.path ? `${problem.path}: ` : "";
  return `${file}${position}: ${key}${problem.message}`;
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
  let outcome: ParseOutcome = { config: configSchema.parse({}), problems: [], warnings: [] };
  if (source.path) {
    const text = await readConfigText({ ...source, path: source.path });
    outcome = parseConfigText(text);
    const file = displayPath(source.path, cwd);
    if (outcome.problems.length > 0 || !outcome.config) {
      const lines = outcome.problems.map((problem) => formatProblem(problem, file));
      const only = lines.length === 1 ? lines[0] : undefined;
      throw only
        ? new ConfigError(`invalid config: ${only}`)
        : new ConfigError(`invalid config ${file}: ${lines.length} problems`, lines);
    }
  }
  const config = outcome.config ?? configSchema.parse({});
  return { config, source, baseDir, paths: deriveStatePaths(config, baseDir, homeDir), warnings: outcome.warnings };
}
