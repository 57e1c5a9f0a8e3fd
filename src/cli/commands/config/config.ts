import { readFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { CONFIG_DIR_NAME, CONFIG_ENV, CONFIG_FILE_NAME, ConfigError, DISCOVERY_PLACES, baseDirFor, discoverConfig, loadConfig } from "../../../config/load.js";
import type { LoadedConfig } from "../../../config/load.js";
import { configJsonSchema, configJsonSchemaText } from "../../../config/json-schema.js";
import { formatProblem } from "../../../config/problem.js";
import type { ConfigProblem } from "../../../config/problem.js";
import type * as Yaml from "yaml";
import { redactSecrets, secretPaths } from "../../../config/redact.js";
import { STATE_GITIGNORE, projectNameFor, starterConfigText } from "../../../config/starter.js";
import { EXIT_FAILURE, ExitError } from "../../../errors.js";
import { createFileExclusive } from "../../../state/atomic.js";
import { displayPath, printConfigWarnings } from "../../context.js";
import type { GlobalOptions } from "../../context.js";
import { stderr, stdout } from "../../output.js";

const ORIGIN_TEXT = {
  flag: "named by --config",
  env: `named by $${CONFIG_ENV}`,
  project: "found in the project",
  home: "found in the home directory",
  none: "no config file; defaults apply",
} as const;

function sourceLine(loaded: LoadedConfig): string {
  return loaded.source.path
    ? `${displayPath(loaded.source.path)} (${ORIGIN_TEXT[loaded.source.origin]})`
    : `${ORIGIN_TEXT.none} (looked for ${DISCOVERY_PLACES})`;
}

/** The OS user: on the local tracker, the login a person acts as. */
function currentLogin(): string | undefined {
  try {
    return userInfo().username || process.env.USER || undefined;
  } catch {
    return process.env.USER || undefined;
  }
}

export async function runInit(globals: GlobalOptions): Promise<void> {
  const target = resolve(globals.config ?? process.env[CONFIG_ENV] ?? join(CONFIG_DIR_NAME, CONFIG_FILE_NAME));
  const project = projectNameFor(basename(baseDirFor({ path: target, origin: "flag" }, process.cwd())));
  const written = await createFileExclusive(target, starterConfigText(project, currentLogin()));
  if (!written) {
    throw new ExitError(
      `${displayPath(target)} already exists; the-loop init never overwrites a config. Edit it, or move it aside and run init again.`,
      EXIT_FAILURE,
      "conflict",
    );
  }
  const folder = dirname(target);
  const extras: string[] = [];
  if (await createFileExclusive(join(folder, "cli-config.schema.json"), configJsonSchemaText())) {
    extras.push("cli-config.schema.json (editor completion and checks)");
  }
  if (basename(folder) === CONFIG_DIR_NAME && (await createFileExclusive(join(folder, ".gitignore"), STATE_GITIGNORE))) {
    extras.push(".gitignore (keeps generated state out of git)");
  }
  stdout.line(`wrote ${displayPath(target)}`);
  for (const extra of extras) stdout.line(`wrote ${join(displayPath(folder), extra)}`);
  stdout.line("");
  stdout.line("next:");
  stdout.line("  the-loop config validate");
  stdout.line("  the-loop start                             # the daemon: its poller watches the local tracker");
  stdout.line(`  the-loop item new "my first work item" --label "the-loop: auto-execute"   # local:${project}#1, armed`);
  stdout.line("  the-loop item comment '#1' the-loop:start-execution   # an authorized start: the session spawns");
  stdout.line("  the-loop sessions list");
  stdout.line("  the-loop events");
}

/** Where `hooks[index]` (or `hooks` itself) is written in the config file, for the problem's position. */
function hookEntryPosition(text: string, yaml: typeof Yaml, index: number | undefined): { line?: number; column?: number } {
  const lineCounter = new yaml.LineCounter();
  const doc = yaml.parseDocument(text, { lineCounter });
  const hooks = doc.get("hooks", true);
  const node = index !== undefined && yaml.isSeq(hooks) ? (hooks.items[index] ?? hooks) : hooks;
  const offset = (node as { range?: [number, number, number] } | undefined)?.range?.[0];
  if (offset === undefined) return {};
  const { line, col } = lineCounter.linePos(offset);
  return { line, column: col };
}

/**
 * Every problem of the `hooks:` declaration in `text`, checked as a daemon's load begins — every
 * rule an entry must meet, without importing a module or contacting a URL — one per bad entry,
 * so that `config validate` reports them all at once. The config loader itself accepts any list
 * there, so that a one-shot command runs (with no hooks) on a declaration a daemon would refuse.
 */
async function hookProblems(file: string, text: string, loaded?: { readonly hooks?: unknown }): Promise<ConfigProblem[]> {
  const [yaml, { HookDeclarationError, parseHookDeclaration }, { HOOK_POINT_NAMES }] = await Promise.all([
    import("yaml"),
    import("../../../hooks/declaration.js"),
    import("../../../sdk/hooks/points.js"),
  ]);
  // The value the loader read when it read the file; else the file's own, for its problems.
  let raw: unknown = loaded?.hooks;
  if (loaded === undefined) {
    try {
      const document: unknown = yaml.parse(text);
      raw = typeof document === "object" && document !== null && "hooks" in document ? document.hooks : undefined;
    } catch {
      return []; // Not YAML: the loader has said so.
    }
  }
  // Not a list: the loader has said so.
  if (!Array.isArray(raw)) return [];
  const context = { configDir: dirname(file), points: HOOK_POINT_NAMES };
  const problems: ConfigProblem[] = [];
  const problem = (message: string): void => {
    // The message starts with the entry it is about (`hooks[2] "audit": …`), as a key path would.
    const index = /^hooks\[([0-9]+)\]/.exec(message)?.[1];
    problems.push({ path: "", message, ...hookEntryPosition(text, yaml, index === undefined ? undefined : Number(index)) });
  };
  const check = (entries: unknown[], renumber: (message: string) => string): boolean => {
    try {
      parseHookDeclaration(entries, context);
      return true;
    } catch (error) {
      if (!(error instanceof HookDeclarationError)) throw error;
      problem(renumber(error.message));
      return false;
    }
  };
  const first = new Map<unknown, unknown>();
  raw.forEach((entry: unknown, index) => {
    // Each entry alone, numbered as it stands in the list.
    if (!check([entry], (message) => message.replace(/^hooks\[0\]/, `hooks[${index}]`))) return;
    // Checked alone just above, so an entry here has its name; read by shape all the same.
    const name = typeof entry === "object" && entry !== null && "name" in entry ? entry.name : undefined;
    const earlier = first.get(name);
    if (earlier === undefined) first.set(name, entry);
    // A name used before: the pair, numbered as the later entry.
    else check([earlier, entry], (message) => message.replace(/^hooks\[1\]/, `hooks[${index}]`));
  });
  // Any rule across the whole list the entries alone do not show.
  if (problems.length === 0) check(raw, (message) => message);
  return problems;
}

/** `problems` of the config at `file`, with `hooks` among them, as the loader reports its own. */
function configErrorOf(file: string, problems: readonly ConfigProblem[]): ConfigError {
  const shown = displayPath(file);
  const lines = problems.map((problem) => formatProblem(problem, shown));
  return lines.length === 1 ? new ConfigError(`invalid config: ${lines[0]}`) : new ConfigError(`invalid config ${shown}: ${lines.length} problems`, lines);
}

/**
 * The config, loaded, with its `hooks:` declaration checked too. When the loader finds problems
 * of its own, the hooks' are added to them rather than left for the next run.
 */
async function loadValidated(globals: GlobalOptions): Promise<LoadedConfig> {
  let loaded: LoadedConfig;
  try {
    loaded = await loadConfig({ explicitPath: globals.config });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw await withHookProblems(globals, error);
  }
  const file = loaded.source.path;
  if (file === null || loaded.config.hooks === undefined) return loaded;
  const text = await readFile(file, "utf8");
  const problems = await hookProblems(file, text, loaded.config);
  if (problems.length === 0) problems.push(...(await hookLoadProblems(file, text, loaded.config.hooks)));
  if (problems.length > 0) throw configErrorOf(file, problems);
  return loaded;
}

/**
 * The declaration loaded as the daemon will load it — every module imported and constructed, in a
 * child process, bounded (hooks/probe.ts) — so a declaration that reads right but does not load
 * fails here, with the daemon's error, rather than at `the-loop start`.
 */
async function hookLoadProblems(file: string, text: string, raw: unknown): Promise<ConfigProblem[]> {
  if (!Array.isArray(raw) || raw.length === 0) return [];
  const [yaml, { HOOK_LOAD_FIX, checkHooksLoad }] = await Promise.all([import("yaml"), import("../../../hooks/probe.js")]);
  const result = await checkHooksLoad({ raw, configDir: dirname(file), configPath: file });
  if (result.ok) return [];
  const index = /^hooks\[([0-9]+)\]/.exec(result.message)?.[1];
  return [{ path: "", message: `${result.message}; ${HOOK_LOAD_FIX}`, ...hookEntryPosition(text, yaml, index === undefined ? undefined : Number(index)) }];
}

async function withHookProblems(globals: GlobalOptions, error: ConfigError): Promise<ConfigError> {
  try {
    const file = (await discoverConfig({ explicitPath: globals.config })).path;
    if (file === null) return error;
    const text = await readFile(file, "utf8");
    const { parseConfigText } = await import("../../../config/parse.js");
    const own = parseConfigText(text).problems;
    // Only a file the loader read and found problems in: any other failure stands as it is.
    if (own.length === 0) return error;
    const hooks = await hookProblems(file, text);
    return hooks.length === 0 ? error : configErrorOf(file, [...own, ...hooks]);
  } catch {
    return error;
  }
}

/** Every graph the config can run, compiled: a bad graph file fails validation, naming the file and the node. */
async function graphNames(loaded: LoadedConfig): Promise<string[]> {
  const { loadGraphs } = await import("../../../graph/registry.js");
  const configDir = loaded.source.path ? dirname(loaded.source.path) : loaded.baseDir;
  const graphs = await loadGraphs(loaded.config, configDir, loaded.source.path ? { configFile: loaded.source.path } : {});
  const { unmatchedNodeCaps } = await import("../../../graph-run/node-caps.js");
  for (const key of unmatchedNodeCaps(loaded.config.routing.limits.perNode, graphs.graphs.values())) {
    stderr.warn(
      `routing.limits.perNode.${key} names no node or phase of the config's graphs (${[...graphs.graphs.keys()].join(", ")}), so it caps nothing: name a node's id or a phase (\`the-loop graph show NAME\` lists them)`,
    );
  }
  return [...graphs.graphs.keys()];
}

/**
 * Every installed capability, read and matched against its consent and its runtimeCompat read
 * against the config's harnesses as they are now, as a daemon start would: one that supports none
 * of them fails validation, one that excludes some is a warning on stderr.
 */
async function capabilityIds(loaded: LoadedConfig): Promise<string[]> {
  if (loaded.config.capabilities.length === 0) return [];
  const [{ loadCapabilities }, { configuredHarnesses }] = await Promise.all([
    import("../../../capabilities/load.js"),
    import("../../../capabilities/runtime-compat.js"),
  ]);
  const configDir = loaded.source.path ? dirname(loaded.source.path) : loaded.baseDir;
  const capabilities = await loadCapabilities(loaded.config, configDir, {
    harnesses: configuredHarnesses(loaded.config.routing),
    warn: (message) => stderr.warn(message),
    ...(loaded.source.path ? { configFile: loaded.source.path } : {}),
  });
  return capabilities.map((capability) => capability.manifest.id);
}

export async function runConfigValidate(globals: GlobalOptions, options: { json: boolean }): Promise<void> {
  const loaded = await loadValidated(globals);
  printConfigWarnings(loaded);
  const graphs = await graphNames(loaded);
  const capabilities = await capabilityIds(loaded);
  if (options.json) {
    stdout.json({ valid: true, source: loaded.source, baseDir: loaded.baseDir, graphs, capabilities, warnings: loaded.warnings });
    return;
  }
  stdout.line(`${stdout.paint("green", "config OK:")} ${sourceLine(loaded)}`);
  stdout.line(`graphs OK: ${graphs.join(", ")}`);
  if (capabilities.length > 0) stdout.line(`capabilities OK: ${capabilities.join(", ")}`);
  if (loaded.warnings.length > 0) stdout.line(`${loaded.warnings.length} warning(s) on stderr`);
}

export async function runConfigShow(globals: GlobalOptions, options: { json: boolean }): Promise<void> {
  const loaded = await loadConfig({ explicitPath: globals.config });
  printConfigWarnings(loaded);
  const config = redactSecrets(loaded.config, secretPaths(configJsonSchema()));
  if (options.json) {
    stdout.json({ source: loaded.source, baseDir: loaded.baseDir, config, paths: loaded.paths, warnings: loaded.warnings });
    return;
  }
  const { stringify } = await import("yaml");
  stdout.line(`# config: ${sourceLine(loaded)}`);
  stdout.line(`# relative paths resolve against: ${loaded.baseDir}`);
  stdout.line(stringify(config).trimEnd());
  stdout.line("");
  stdout.line("# derived paths (where each file the-loop generates lives)");
  stdout.line(stringify({ paths: loaded.paths }).trimEnd());
}
