import { access, realpath } from "node:fs/promises";
import { homedir } from "node:os";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { parse as parseYaml } from "yaml";
import type { CapabilityEntryConfig } from "../config/capability-schema.js";
import { EXIT_USAGE, ExitError } from "../errors.js";
import type { EventSink } from "../events/log.js";
import { readBundleFiles, readRegularFile, sha256Of, within } from "./bundle-files.js";
import type { BundleReadOptions } from "./bundle-files.js";
import { GSD_VERSION, MANIFEST_FILES, gsdVersionSatisfies, parseManifest } from "./manifest.js";
import type { CapabilityManifest, ConfigEntry } from "./manifest.js";
import { loadedRuntimeCheck } from "./runtime-compat.js";

/**
 * Reading capability bundles: one bundle with every problem named by file and field
 * (`readBundle`), the rules across the installed set (`crossCheck`), and the config's
 * capabilities as a daemon runs them — consented hashes checked, all or nothing
 * (`loadCapabilities`).
 */

export interface CapabilityBundle {
  /** The bundle's folder, absolute. */
  readonly dir: string;
  /** The manifest file, absolute. */
  readonly file: string;
  readonly manifest: CapabilityManifest;
  readonly sha256: string;
  /** The folder with every symlink followed: where `files`' paths are. */
  readonly realDir: string;
  /**
   * Each file's SHA-256 by its path in the bundle, as read when `sha256` was: once the load has
   * matched `sha256` with the consented hash, these are the consented files, and every later use
   * of a file is checked against them (consented.ts).
   */
  readonly files: ReadonlyMap<string, string>;
  /**
   * The text of each fragment file the manifest names (`fragment.path`), by that path: read at
   * the load from the bytes consented to, as gsd-core inlines a fragment at load, so an envelope
   * carries the text (`fragment.inline`) beside its path.
   */
  readonly fragments: ReadonlyMap<string, string>;
}

export interface BundleOutcome {
  readonly bundle?: CapabilityBundle;
  readonly problems: string[];
}

export class CapabilityError extends ExitError {
  override readonly name: string = "CapabilityError";
  constructor(readonly problems: readonly string[]) {
    const only = problems.length === 1 ? problems[0] : undefined;
    super(only ? `capability refused: ${only}` : `capabilities refused: ${problems.length} problems`, EXIT_USAGE, "config", only ? [] : problems);
  }
}

/** Where a `capabilities[].path` points: absolute, `~`-relative, or relative to the config file's folder. */
export function resolveCapabilityPath(path: string, configDir: string, homeDir: string = homedir()): string {
  if (path === "~" || path.startsWith("~/")) return join(homeDir, path.slice(1));
  return isAbsolute(path) ? resolve(path) : resolve(configDir, path);
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * A file the manifest names inside its bundle: relative, no `..`, and still inside once every
 * symlink is followed. Its real path, or the problem.
 */
async function locateInBundle(dir: string, realDir: string, path: string): Promise<{ readonly real: string } | { readonly problem: string }> {
  if (isAbsolute(path)) return { problem: `${JSON.stringify(path)} is absolute; name a file inside the bundle, relative to it` };
  if (path.split(/[\\/]/).includes("..")) return { problem: `${JSON.stringify(path)} climbs out with '..'; name a file inside the bundle` };
  const real = await realpath(join(dir, path)).catch(() => undefined);
  if (real === undefined) return { problem: `${JSON.stringify(path)} does not exist in the bundle` };
  if (!within(realDir, real)) return { problem: `${JSON.stringify(path)} leads outside the bundle through a symlink` };
  return { real };
}

async function bundlePathProblem(dir: string, realDir: string, path: string): Promise<string | undefined> {
  const located = await locateInBundle(dir, realDir, path);
  return "problem" in located ? located.problem : undefined;
}

/**
 * The real path of a file the bundle at `dir` names, checked again at the moment it is used (the
 * load checked it too, but a file can change between the two): inside the bundle, through every
 * symlink. A `CapabilityError` naming `field` when it is not.
 */
export async function bundleFile(dir: string, path: string, field: string): Promise<string> {
  const located = await locateInBundle(dir, await realpath(dir), path);
  if ("problem" in located) throw new CapabilityError([`${dir}: ${field}: ${located.problem}`]);
  return located.real;
}

/** A program is a bundle file when it is relative and has a '/': a bare name is looked up on PATH. */
export const isBundleProgram = (program: string): boolean => !isAbsolute(program) && /[\\/]/.test(program);

/** Each fragment file the manifest names, with its field. */
function fragmentFiles(manifest: CapabilityManifest): { field: string; path: string }[] {
  const named = (list: string, entries: readonly { readonly fragment?: { readonly path?: string; readonly legacyFile?: boolean } }[]) =>
    entries.flatMap((entry, index) =>
      entry.fragment?.path !== undefined
        ? [{ field: `${list}[${index}].fragment.${entry.fragment.legacyFile === true ? "file" : "path"}`, path: entry.fragment.path }]
        : [],
    );
  return [...named("steps", manifest.steps), ...named("contributions", manifest.contributions)];
}

async function pathProblems(dir: string, manifest: CapabilityManifest): Promise<string[]> {
  const realDir = await realpath(dir);
  const named: { field: string; path: string }[] = [
    ...fragmentFiles(manifest),
    ...manifest.commands.flatMap((command, index) =>
      isBundleProgram(command.argv[0] ?? "") ? [{ field: `commands[${index}].argv[0]`, path: command.argv[0] ?? "" }] : [],
    ),
    ...(manifest.taskContentResolver && isBundleProgram(manifest.taskContentResolver.invoke.binary)
      ? [{ field: "taskContentResolver.invoke.binary", path: manifest.taskContentResolver.invoke.binary }]
      : []),
  ];
  const problems: string[] = [];
  for (const { field, path } of named) {
    const problem = await bundlePathProblem(dir, realDir, path);
    if (problem !== undefined) problems.push(`${field}: ${problem}`);
  }
  return problems;
}

/**
 * The bundle at `dir`: its manifest checked on its own and its files hashed, or every problem,
 * each naming the file and the field. Each file is read once: the manifest is parsed from the very
 * bytes that were hashed, so what is checked against consent is what runs.
 */
export async function readBundle(dir: string, options: Pick<BundleReadOptions, "afterRead"> = {}): Promise<BundleOutcome> {
  const present = [];
  for (const name of MANIFEST_FILES) if (await exists(join(dir, name))) present.push(name);
  if (present.length !== 1) {
    const why = present.length === 0 ? `no ${MANIFEST_FILES.join(" or ")} in it` : `both ${present.join(" and ")} in it; keep one`;
    return { problems: [`${dir}: not a capability bundle (${why})`] };
  }
  const name = present[0] as string;
  const file = join(dir, name);
  let snapshot;
  try {
    snapshot = await readBundleFiles(dir, { ...options, keep: [name] });
  } catch (error) {
    if (error instanceof ExitError) return { problems: [error.message] };
    throw error;
  }
  const bytes = snapshot.bytes.get(name);
  if (bytes === undefined)
    return { problems: snapshot.problems.length > 0 ? [...snapshot.problems] : [`${file}: not a regular file; the manifest is a file of the bundle itself`] };
  let raw: unknown;
  try {
    const text = bytes.toString("utf8");
    raw = file.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    return { problems: [...snapshot.problems, `${file}: not ${file.endsWith(".json") ? "JSON" : "YAML"}: ${(error as Error).message.split("\n")[0]}`] };
  }
  const parsed = parseManifest(raw);
  const problems = [...snapshot.problems, ...parsed.problems.map((problem) => `${file}: ${problem}`)];
  if (!parsed.manifest) return { problems };
  const range = parsed.manifest.engines?.gsd;
  if (range !== undefined && !gsdVersionSatisfies(range)) {
    problems.push(
      `${file}: engines.gsd: the capability needs gsd-core ${JSON.stringify(range)}, and the-loop implements gsd-core ${GSD_VERSION}'s capability contract; use a version of the capability made for gsd-core ${GSD_VERSION}`,
    );
  }
  problems.push(...(await pathProblems(dir, parsed.manifest)).map((problem) => `${file}: ${problem}`));
  if (problems.length > 0) return { problems };
  const fragments = new Map<string, string>();
  for (const { field, path } of fragmentFiles(parsed.manifest)) {
    if (fragments.has(path)) continue;
    // Read once more, and used only when these are the bytes the bundle's hash was computed from.
    const located = await locateInBundle(dir, snapshot.realDir, path);
    const key = "real" in located ? relative(snapshot.realDir, located.real).split(sep).join("/") : undefined;
    // Unreadable now is treated as changed: the fragment is refused below (fails closed), never read from elsewhere.
    const bytes = "real" in located ? await readRegularFile(located.real).catch(() => undefined) : undefined;
    if (key === undefined || bytes === undefined || snapshot.files.get(key) !== sha256Of(bytes)) {
      return { problems: [`${file}: ${field}: ${JSON.stringify(path)} changed while the bundle was read; run this again`] };
    }
    fragments.set(path, bytes.toString("utf8"));
  }
  return {
    bundle: { dir, file, manifest: parsed.manifest, sha256: snapshot.sha256, realDir: snapshot.realDir, files: snapshot.files, fragments },
    problems: [],
  };
}

/**
 * The first words of the-loop's own commands (src/cli/program.ts declares them; a test keeps the
 * two lists together). A capability command may not begin with one: `the-loop <words> …` runs a
 * capability's command only when the first word is none of these.
 */
export const BUILT_IN_COMMAND_WORDS: readonly string[] = [
  "ask",
  "capabilities",
  "config",
  "dashboard",
  "demo",
  "events",
  "graph",
  "help",
  "hooks",
  "init",
  "item",
  "loop",
  "mcp",
  "receive",
  "serve",
  "sessions",
  "start",
  "state",
  "status",
  "stop",
  "task",
  "upgrade-config",
  "why",
];

/**
 * The rules across the installed set: ids and tracker prefixes unique, every `requires` present,
 * and every command name its own (unique, and not beginning with a built-in command's word). A
 * `ref.command` or `check.query` naming no installed command is not refused — a gsd-core bundle's
 * names a gsd-core command module — but warned about at consent (consent.ts), and at dispatch
 * the check fails (or the step is skipped) as the contract routes it.
 */
export function crossCheck(bundles: readonly CapabilityBundle[]): string[] {
  const problems: string[] = [];
  const byId = new Map<string, CapabilityBundle>();
  const prefixes = new Map<string, CapabilityBundle>();
  for (const bundle of bundles) {
    const { manifest } = bundle;
    const earlier = byId.get(manifest.id);
    if (earlier !== undefined) problems.push(`${bundle.file}: id: "${manifest.id}" is already installed from ${earlier.dir}`);
    byId.set(manifest.id, bundle);
    const prefix = manifest.taskContentResolver?.trackerPrefix;
    if (prefix !== undefined) {
      const owner = prefixes.get(prefix);
      if (owner !== undefined) problems.push(`${bundle.file}: taskContentResolver.trackerPrefix: "${prefix}" is already the prefix of ${owner.manifest.id}`);
      prefixes.set(prefix, bundle);
    }
  }
  const owners = new Map<string, CapabilityBundle>();
  for (const bundle of bundles) {
    bundle.manifest.commands.forEach((command, index) => {
      const first = command.name.split(" ")[0] ?? "";
      if (BUILT_IN_COMMAND_WORDS.includes(first)) {
        problems.push(
          `${bundle.file}: commands[${index}].name: "${command.name}" begins with "${first}", a command of the-loop itself, so \`the-loop ${command.name}\` could never reach it; begin it with a word of its own, such as the capability's id`,
        );
      }
      const owner = owners.get(command.name);
      if (owner !== undefined && owner !== bundle) {
        problems.push(
          `${bundle.file}: commands[${index}].name: "${command.name}" is already a command of ${owner.manifest.id}; \`the-loop ${command.name}\` must name one`,
        );
      }
      if (owner === undefined) owners.set(command.name, bundle);
    });
  }
  for (const bundle of bundles) {
    for (const required of bundle.manifest.requires) {
      if (!byId.has(required)) problems.push(`${bundle.file}: requires: "${required}" is not installed; install it first`);
    }
  }
  return problems;
}

/** A value of a capability's config slice. */
export type CapabilityConfigValue = boolean | string | number;

export interface LoadedCapability extends CapabilityBundle {
  /** The entry's path as the config writes it. */
  readonly configuredPath: string;
  /** The capability's config slice: the manifest's defaults with the config entry's `config` over them. What a hook's `when` reads. */
  readonly values: Readonly<Record<string, CapabilityConfigValue>>;
}

/** Why `value` is not one a key declared as `entry` takes (a boolean key's `"false"` is a string, not false). */
function valueProblem(entry: ConfigEntry, value: CapabilityConfigValue): string | undefined {
  const expected = entry.type === "enum" ? "string" : entry.type;
  if (typeof value !== expected)
    return `is a ${typeof value}; the key is declared ${entry.type}${entry.type === "boolean" ? " (write true or false, unquoted)" : ""}`;
  if (entry.type === "enum" && entry.values !== undefined && !entry.values.includes(value as string))
    return `is not one of its values: ${entry.values.join(", ")}`;
  return undefined;
}

/**
 * The slice's values: the manifest's defaults, the entry's over them. Every key of the entry must
 * be one the manifest declares (a misspelt key would otherwise leave its default in force, unseen);
 * the problems name each key that is not.
 */
export function configValues(
  manifest: CapabilityManifest,
  overrides: Readonly<Record<string, CapabilityConfigValue>> | undefined,
): { values: Readonly<Record<string, CapabilityConfigValue>>; problems: string[] } {
  const declared = Object.keys(manifest.config);
  const problems: string[] = [];
  const values = new Map<string, CapabilityConfigValue>(Object.entries(manifest.config).map(([key, entry]) => [key, entry.default]));
  for (const [key, value] of Object.entries(overrides ?? {})) {
    const entry = Object.hasOwn(manifest.config, key) ? manifest.config[key] : undefined;
    if (entry === undefined) {
      problems.push(
        `config.${key}: "${key}" is not a key of ${manifest.id}'s config (${declared.length > 0 ? `it declares ${declared.map((name) => `"${name}"`).join(", ")}` : "it declares none"}); remove it or correct its spelling`,
      );
      continue;
    }
    const wrong = valueProblem(entry, value);
    if (wrong !== undefined) {
      problems.push(`config.${key}: ${JSON.stringify(value)} ${wrong}`);
      continue;
    }
    values.set(key, value);
  }
  return { values: Object.freeze(Object.fromEntries(values)), problems };
}

export interface LoadCapabilitiesOptions {
  readonly events?: EventSink;
  readonly homeDir?: string;
  /** Named in messages: the config file. */
  readonly configFile?: string;
  /** A check ahead of the load (`the-loop start`, before it spawns the daemon): refusals are recorded, loads are not. */
  readonly checkOnly?: boolean;
  /**
   * The harnesses the config runs sessions in (runtime-compat.ts `configuredHarnesses`): given,
   * each capability's runtimeCompat is read against them again, since they may have changed since
   * its consent. One that supports none of them is refused with the rest; `warn` hears of one that
   * excludes some. Left out by the commands that only read a capability (`loop render-hooks`, `task`).
   */
  readonly harnesses?: readonly string[];
  readonly warn?: (message: string) => void;
  /** Called after each bundle file is read (a test's hook point: each file is read once, before it is hashed and parsed). */
  readonly afterRead?: BundleReadOptions["afterRead"];
}

/** The command that consents to the bundle at `dir` again. */
export const consentCommand = (dir: string): string => `the-loop capabilities add ${JSON.stringify(dir)} --yes`;

/**
 * The config's capabilities, each bundle read, checked and matched against the hash consented
 * to. Any problem refuses them all (`CapabilityError`, exit 2) with every problem at once, so a
 * daemon never runs on part of them or on a bundle changed since consent.
 */
export async function loadCapabilities(
  config: { readonly capabilities: readonly CapabilityEntryConfig[] },
  configDir: string,
  options: LoadCapabilitiesOptions = {},
): Promise<LoadedCapability[]> {
  const where = options.configFile ?? "the config";
  const problems: string[] = [];
  const loaded: LoadedCapability[] = [];
  for (const [index, entry] of config.capabilities.entries()) {
    const dir = resolveCapabilityPath(entry.path, configDir, options.homeDir);
    const outcome = await readBundle(dir, options.afterRead ? { afterRead: options.afterRead } : {}).catch((error: unknown): BundleOutcome => ({
      problems: [`${dir}: ${(error as Error).message}`],
    }));
    const refuse = (reason: string, id?: string): void => {
      problems.push(reason);
      options.events?.emit("capability.refused", { path: dir, bundle_hash: entry.sha256, reason, ...(id ? { id } : {}) });
    };
    if (!outcome.bundle) {
      for (const problem of outcome.problems) refuse(`capabilities[${index}] in ${where}: ${problem}`);
      continue;
    }
    const { bundle } = outcome;
    if (bundle.sha256 !== entry.sha256) {
      refuse(
        `capability "${bundle.manifest.id}" (${dir}) changed since it was consented to (its files hash to ${bundle.sha256}, consented ${entry.sha256}); read what it runs and consent again with \`${consentCommand(dir)}\``,
        bundle.manifest.id,
      );
      continue;
    }
    const slice = configValues(bundle.manifest, entry.config);
    if (slice.problems.length > 0) {
      for (const problem of slice.problems) refuse(`capabilities[${index}] in ${where} (${bundle.manifest.id}): ${problem}`, bundle.manifest.id);
      continue;
    }
    if (options.harnesses !== undefined) {
      const runtimes = loadedRuntimeCheck(bundle.manifest, options.harnesses);
      if (runtimes.refusal !== undefined) {
        refuse(`capabilities[${index}] in ${where} (${dir}): ${runtimes.refusal}`, bundle.manifest.id);
        continue;
      }
      if (runtimes.warning !== undefined) options.warn?.(runtimes.warning);
    }
    loaded.push({ ...bundle, configuredPath: entry.path, values: slice.values });
  }
  for (const problem of crossCheck(loaded)) {
    problems.push(problem);
    options.events?.emit("capability.refused", { path: where, bundle_hash: "", reason: problem });
  }
  if (problems.length > 0) throw new CapabilityError(problems);
  if (options.checkOnly === true) return loaded;
  for (const capability of loaded) {
    options.events?.emit("capability.loaded", {
      id: capability.manifest.id,
      version: capability.manifest.version,
      path: capability.dir,
      bundle_hash: capability.sha256,
    });
  }
  return loaded;
}
