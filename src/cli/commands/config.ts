import { readFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { CONFIG_DIR_NAME, CONFIG_ENV, CONFIG_FILE_NAME, ConfigError, baseDirFor, loadConfig } from "../../config/load.js";
import type { LoadedConfig } from "../../config/load.js";
import { configJsonSchema, configJsonSchemaText } from "../../config/json-schema.js";
import { formatProblem } from "../../config/problem.js";
import { redactSecrets, secretPaths } from "../../config/redact.js";
import { STATE_GITIGNORE, projectNameFor, starterConfigText } from "../../config/starter.js";
import { EXIT_FAILURE, ExitError } from "../../errors.js";
import { createFileExclusive } from "../../state/atomic.js";
import { displayPath, printConfigWarnings } from "../context.js";
import type { GlobalOptions } from "../context.js";
import { stdout } from "../output.js";

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
    : `${ORIGIN_TEXT.none} (looked for ./${CONFIG_DIR_NAME}/${CONFIG_FILE_NAME} and ~/${CONFIG_DIR_NAME}/${CONFIG_FILE_NAME})`;
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
async function hookEntryPosition(file: string, index: number | undefined): Promise<{ line?: number; column?: number }> {
  const { LineCounter, isSeq, parseDocument } = await import("yaml");
  const lineCounter = new LineCounter();
  const doc = parseDocument(await readFile(file, "utf8"), { lineCounter });
  const hooks = doc.get("hooks", true);
  const node = index !== undefined && isSeq(hooks) ? (hooks.items[index] ?? hooks) : hooks;
  const offset = (node as { range?: [number, number, number] } | undefined)?.range?.[0];
  if (offset === undefined) return {};
  const { line, col } = lineCounter.linePos(offset);
  return { line, column: col };
}

/**
 * The `hooks:` declaration, checked as a daemon's load begins: every rule an entry must meet,
 * without importing a module or contacting a URL. The config loader itself accepts any list, so
 * that a one-shot command runs (with no hooks) on a declaration a daemon would refuse.
 */
async function validateHooks(loaded: LoadedConfig): Promise<void> {
  const file = loaded.source.path;
  if (file === null || loaded.config.hooks === undefined) return;
  const [{ HookDeclarationError, parseHookDeclaration }, { LIFECYCLE_POINT_NAMES }] = await Promise.all([
    import("../../hooks/declaration.js"),
    import("../../sdk/hooks/catalog.js"),
  ]);
  try {
    parseHookDeclaration(loaded.config.hooks, { configDir: dirname(file), points: LIFECYCLE_POINT_NAMES });
  } catch (error) {
    if (!(error instanceof HookDeclarationError)) throw error;
    // The message starts with the entry it is about (`hooks[2] "audit": …`), as a key path would.
    const index = /^hooks\[([0-9]+)\]/.exec(error.message)?.[1];
    const position = await hookEntryPosition(file, index === undefined ? undefined : Number(index));
    throw new ConfigError(`invalid config: ${formatProblem({ path: "", message: error.message, ...position }, displayPath(file))}`);
  }
}

export async function runConfigValidate(globals: GlobalOptions, options: { json: boolean }): Promise<void> {
  const loaded = await loadConfig({ explicitPath: globals.config });
  printConfigWarnings(loaded);
  await validateHooks(loaded);
  if (options.json) {
    stdout.json({ valid: true, source: loaded.source, baseDir: loaded.baseDir, warnings: loaded.warnings });
    return;
  }
  stdout.line(`${stdout.paint("green", "config OK:")} ${sourceLine(loaded)}`);
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
