import { readFileSync, statSync } from "node:fs";
import { dirname, extname, join, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { messageOf } from "../errors.js";
import { LIFECYCLE_HOOKS_BRAND, isLifecycleHooksClass } from "../sdk/hooks/base.js";
import type { HookPoint } from "../sdk/hooks/catalog.js";
import type { LocalHookEntry } from "./declaration.js";
import { resolveThisPackageForHooks } from "./self-resolve.js";
import type { HookContext, HookExecutor } from "./types.js";

/**
 * A `module` or `path` entry: an ES module imported into this process, exporting a class that
 * extends `LifecycleHooks`. Everything that can fail about it — the import, the choice of class,
 * its construction, an `on` naming a method it does not write — fails here, at load, so a chain
 * that runs never holds a half-built executor.
 *
 * Modules are imported through Node's module cache: loading the same file twice in one process
 * yields the same module, and an edited file takes effect at the next start of the process (docs/hooks.md#writing-a-local-hook).
 */

export interface LocalExecutorOptions {
  /** The points a class may handle: the catalog the declaration was checked against. */
  readonly points: readonly HookPoint[];
  /** The directory of the config file in effect: a `module` is resolved from there, never from a checkout or the cwd. */
  readonly configDir: string;
  /** How long importing the module may take (default DEFAULT_IMPORT_TIMEOUT_MS). */
  readonly importTimeoutMs?: number;
}

/**
 * A module's import is bounded, unlike its methods (docs/hooks.md#when-a-hook-fails): an import that never settles (a
 * top-level await on a service that does not answer) would hold a daemon's start forever, or —
 * with nothing else keeping Node's event loop alive — end the process silently with code 13 and
 * no record. Generous, since compiling a large `.ts` file or opening a client takes a moment.
 */
export const DEFAULT_IMPORT_TIMEOUT_MS = 30_000;

/** Why a local entry cannot be loaded; load.ts prefixes the entry's name. */
export class LocalHookError extends Error {
  override readonly name = "LocalHookError";
}

const TYPESCRIPT_EXTENSIONS = new Set([".ts", ".mts", ".cts"]);
/** The conditions a hook module is imported under: it is `import`ed, by Node. */
const CONDITIONS = new Set(["import", "node", "default"]);

type Constructor = new (options: Record<string, unknown>) => object;

class LocalHookExecutor implements HookExecutor {
  readonly name: string;
  readonly kind: "module" | "path";
  readonly points: ReadonlySet<string>;
  readonly required: boolean;

  constructor(
    entry: LocalHookEntry,
    private readonly instance: object,
    points: readonly string[],
  ) {
    this.name = entry.name;
    this.kind = entry.kind;
    this.points = new Set(points);
    this.required = entry.required;
  }

  /** In-process and unbounded (docs/hooks.md#when-a-hook-fails): a hook that never returns is its author's to fix. */
  async invoke(point: HookPoint, context: HookContext): Promise<unknown> {
    const method: unknown = Reflect.get(this.instance, point.method);
    if (typeof method !== "function") throw new Error(`the executor has no method ${point.method}()`);
    const result: unknown = await Reflect.apply(method, this.instance, [context]);
    return result;
  }
}

/** Imports, picks and constructs a local entry's class. Throws LocalHookError saying what to fix. */
export async function loadLocalExecutor(entry: LocalHookEntry, options: LocalExecutorOptions): Promise<HookExecutor> {
  const file = entry.kind === "path" ? checkFile(entry.resolved) : resolvePackage(entry.target, options.configDir);
  // Before the first import: the hook's `import … from "the-loop/sdk/hooks"` needs no link or install.
  resolveThisPackageForHooks();
  const namespace = await importWithin(file, options.importTimeoutMs ?? DEFAULT_IMPORT_TIMEOUT_MS);
  const { exportName, cls } = pickClass(namespace, entry, file);
  let instance: object;
  try {
    // A copy: the entry's options are the declaration's, not the executor's to keep and change.
    instance = new cls(structuredClone({ ...entry.options }));
  } catch (error) {
    throw new LocalHookError(`constructing ${exportName} (${file}) failed: ${messageOf(error)}`);
  }
  const overridden = options.points.filter((point) => overrides(instance, cls, point.method));
  if (entry.on === undefined) {
    if (overridden.length === 0) {
      throw new LocalHookError(
        `${exportName} overrides none of the hook methods (${options.points.map((point) => `${point.method}()`).join(", ")}), so it would never run; write the methods of the points it handles`,
      );
    }
    return new LocalHookExecutor(
      entry,
      instance,
      overridden.map((point) => point.name),
    );
  }
  for (const name of entry.on) {
    if (overridden.some((point) => point.name === name)) continue;
    const point = options.points.find((candidate) => candidate.name === name);
    const method = point === undefined ? "" : ` ${point.method}()`;
    throw new LocalHookError(`on names "${name}", but ${exportName} does not override${method}; write that method, or remove "${name}" from on`);
  }
  return new LocalHookExecutor(entry, instance, entry.on);
}

function checkFile(file: string): string {
  let isFile = false;
  try {
    isFile = statSync(file).isFile();
  } catch {
    // Absent: reported below with where it was looked for.
  }
  if (!isFile) throw new LocalHookError(`no file at ${file} (a relative path resolves against the config file's directory)`);
  return file;
}

/** Imports `file`, or throws LocalHookError when the import fails or has not finished within `timeoutMs`. */
async function importWithin(file: string, timeoutMs: number): Promise<Record<string, unknown>> {
  let timer: NodeJS.Timeout | undefined;
  // The timer is left referenced on purpose: it is what keeps the process alive until it fires.
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(
        new LocalHookError(
          `importing ${file} did not finish within ${timeoutMs / 1000} s; a hook module must not wait at load on something that may never answer (a top-level await)`,
        ),
      );
    }, timeoutMs);
  });
  const imported = importFile(file).catch((error: unknown) => {
    throw new LocalHookError(`importing ${file} failed: ${messageOf(error)}${importFix(error, file)}`);
  });
  try {
    return await Promise.race([imported, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** What to do about a failed import, when the error says: a package the module imports is not installed. */
function importFix(error: unknown, file: string): string {
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return "";
  return `; install the package it names in a node_modules folder at or above ${dirname(file)}, where the hook file's imports resolve`;
}

/**
 * How a `.ts` hook module is imported: by Node itself where it strips types (`process.features.typescript`
 * is "strip" or "transform": Node 22.18+ and 23.6+ by default, 22.6+ with --experimental-strip-types),
 * else through tsx. Pure, for a table test: this Node (20) only ever takes the tsx path.
 */
export function typescriptLoaderFor(features: { readonly typescript?: unknown }): "native" | "tsx" {
  return features.typescript === "strip" || features.typescript === "transform" ? "native" : "tsx";
}

/**
 * Refusals of Node's own stripping that tsx gets past: syntax it does not strip (an enum, a
 * namespace, a parameter property, unless --experimental-transform-types) and a `.ts` file under
 * node_modules (a `module` entry's package shipping TypeScript). Both are raised while the module
 * graph loads, before any of it runs, so importing it again through tsx runs nothing twice.
 */
const NATIVE_REFUSALS = new Set(["ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX", "ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING"]);

function refusedByNative(error: unknown): boolean {
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
  return typeof code === "string" && NATIVE_REFUSALS.has(code);
}

let typescriptImport: Promise<(specifier: string, parent: string) => Promise<unknown>> | undefined;

async function importWithTsx(url: string): Promise<unknown> {
  // tsx is only loaded once a TypeScript hook needs it: no cost for anyone else.
  typescriptImport ??= import("tsx/esm/api").then((api) => api.tsImport);
  const tsImport = await typescriptImport;
  return await tsImport(url, import.meta.url);
}

/** Where `process.features` has no `typescript` (before Node 22.6) it reads as undefined. */
function runningFeatures(): { readonly typescript?: unknown } {
  return { typescript: Reflect.get(process.features, "typescript") };
}

async function importFile(file: string, features: { readonly typescript?: unknown } = runningFeatures()): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  let namespace: unknown;
  if (!TYPESCRIPT_EXTENSIONS.has(extname(file))) namespace = await import(url);
  else if (typescriptLoaderFor(features) === "tsx") namespace = await importWithTsx(url);
  else {
    try {
      namespace = await import(url);
    } catch (error) {
      if (!refusedByNative(error)) throw error;
      namespace = await importWithTsx(url);
    }
  }
  // A module namespace is always an object; checked rather than trusted all the same.
  if (!isRecord(namespace)) throw new LocalHookError(`importing ${file} gave no module namespace`);
  return namespace;
}

/** An object's own string keys; no claim about its values (each is checked where read). */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The class an entry runs: its `executor` export, else the module's one LifecycleHooks subclass. */
function pickClass(namespace: Record<string, unknown>, entry: LocalHookEntry, file: string): { exportName: string; cls: Constructor } {
  const exported = exportsOf(namespace);
  const classes = new Map<Constructor, string[]>();
  for (const [exportName, value] of exported) {
    if (!isLifecycleHooksClass(value)) continue;
    classes.set(value, [...(classes.get(value) ?? []), exportName]);
  }
  const described = [...classes.values()].map(describeExport);
  if (entry.executor !== undefined) {
    const found = exported.find(([exportName]) => exportName === entry.executor);
    if (found === undefined) {
      throw new LocalHookError(
        `executor "${entry.executor}" is not exported by ${file}; ${described.length > 0 ? `its LifecycleHooks subclasses are ${described.join(", ")}` : "it exports no LifecycleHooks subclass"}`,
      );
    }
    if (!isLifecycleHooksClass(found[1])) {
      throw new LocalHookError(
        `executor "${entry.executor}" of ${file} is not a class extending LifecycleHooks (from "the-loop/sdk/hooks")${described.length > 0 ? `; its subclasses are ${described.join(", ")}` : ""}`,
      );
    }
    return { exportName: entry.executor, cls: found[1] };
  }
  const [only, ...others] = [...classes.entries()];
  if (only === undefined) {
    throw new LocalHookError(`${file} defines no LifecycleHooks subclass; export a class extending LifecycleHooks from "the-loop/sdk/hooks"`);
  }
  if (others.length > 0) {
    throw new LocalHookError(`${file} exports several LifecycleHooks subclasses (${described.join(", ")}); set executor to the one to use`);
  }
  return { exportName: preferredName(only[1]), cls: only[0] };
}

/**
 * A module's exports by name. A CommonJS module imported as ESM — a .ts file outside a
 * `"type": "module"` package, which tsx compiles to CommonJS — carries its exports on
 * `default` (module.exports, with its own `default` when it was written as ESM): those count.
 */
function exportsOf(namespace: Record<string, unknown>): [string, unknown][] {
  const exported = new Map<string, unknown>(Object.keys(namespace).map((key) => [key, namespace[key]]));
  const commonjs = namespace["default"];
  if (typeof commonjs === "object" && commonjs !== null && Object.getPrototypeOf(commonjs) === Object.prototype) {
    for (const key of Object.keys(commonjs)) {
      if (key === "__esModule") continue;
      if (key === "default" || !exported.has(key)) exported.set(key, Reflect.get(commonjs, key));
    }
  }
  return [...exported.entries()];
}

function preferredName(names: readonly string[]): string {
  return names.find((name) => name !== "default") ?? names[0] ?? "default";
}

function describeExport(names: readonly string[]): string {
  const name = preferredName(names);
  const aliases = names.filter((other) => other !== name);
  return aliases.length > 0 ? `${name} (also ${aliases.join(", ")})` : name;
}

/**
 * Whether the instance's method for a point is its own: not the branded base class's pass-through.
 * Compared by function identity against the base the class actually extends, which may be
 * another copy of the SDK than the daemon's.
 */
function overrides(instance: object, cls: Constructor, method: string): boolean {
  const implementation: unknown = Reflect.get(instance, method);
  if (typeof implementation !== "function") return false;
  let base: unknown = Object.getPrototypeOf(cls);
  while (typeof base === "function" && !Object.hasOwn(base, LIFECYCLE_HOOKS_BRAND)) base = Object.getPrototypeOf(base);
  if (typeof base !== "function") return true;
  const prototype: unknown = base.prototype;
  return typeof prototype !== "object" || prototype === null || implementation !== Reflect.get(prototype, method);
}

/**
 * The file a package specifier (`acme-hooks`, `@acme/hooks/lifecycle`) names, found as Node
 * would from a file in `fromDir`: the nearest `node_modules/<name>` walking up, its package.json
 * `exports` under the import conditions, else `main`, else index.js.
 */
export function resolvePackage(specifier: string, fromDir: string): string {
  const parsed = splitSpecifier(specifier);
  if (parsed === undefined) {
    throw new LocalHookError(`module "${specifier}" is not a package name; name an installed package, or use path for a file`);
  }
  const { name, subpath } = parsed;
  for (let dir = resolve(fromDir); ; dir = dirname(dir)) {
    const packageDir = join(dir, "node_modules", name);
    if (isDirectory(packageDir)) return resolveInPackage(packageDir, name, subpath);
    if (dirname(dir) === dir) break;
  }
  throw new LocalHookError(`cannot find package "${name}" in a node_modules directory at or above ${fromDir} (the config file's directory); install it there`);
}

function splitSpecifier(specifier: string): { name: string; subpath: string } | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.includes(":") || specifier.includes("\\")) return undefined;
  const parts = specifier.split("/");
  const nameParts = specifier.startsWith("@") ? 2 : 1;
  if (parts.length < nameParts || parts.slice(0, nameParts).some((part) => part === "" || part === "." || part === "..")) return undefined;
  const rest = parts.slice(nameParts);
  if (rest.some((part) => part === "" || part === "." || part === "..")) return undefined;
  return { name: parts.slice(0, nameParts).join("/"), subpath: rest.length > 0 ? `./${rest.join("/")}` : "." };
}

function resolveInPackage(packageDir: string, name: string, subpath: string): string {
  const manifest = readManifest(packageDir);
  const where = subpath === "." ? `package "${name}"` : `"${name}/${subpath.slice(2)}"`;
  let file: string | undefined;
  if (manifest["exports"] !== undefined && manifest["exports"] !== null) {
    const target = exportTarget(manifest["exports"], subpath);
    if (target === undefined) throw new LocalHookError(`${where}: the package's "exports" offer no import of "${subpath}" (${packageDir})`);
    file = join(packageDir, target);
    if (!file.startsWith(packageDir + sep)) throw new LocalHookError(`${where}: its "exports" point outside the package`);
  } else {
    const main = subpath === "." ? (typeof manifest["main"] === "string" ? manifest["main"] : "index.js") : subpath;
    file = [main, `${main}.js`, join(main, "index.js")].map((candidate) => join(packageDir, candidate)).find(isFile);
  }
  if (file === undefined || !isFile(file)) throw new LocalHookError(`${where} resolves to no file in ${packageDir}`);
  return file;
}

/** A package.json: an object whose fields are read one by one where used (`exports`, `main`). */
const manifestSchema = z.record(z.string(), z.unknown());

function readManifest(packageDir: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(join(packageDir, "package.json"), "utf8");
  } catch {
    return {};
  }
  try {
    const parsed = manifestSchema.safeParse(JSON.parse(text));
    // Not an object: no fields, as Node reads a package.json without "exports" or "main".
    return parsed.success ? parsed.data : {};
  } catch (error) {
    throw new LocalHookError(`${join(packageDir, "package.json")} is not valid JSON: ${messageOf(error)}`);
  }
}

/** The target `exports` gives a subpath, per Node's rules for the conditions we import under. */
function exportTarget(exports: unknown, subpath: string): string | undefined {
  if (!isRecord(exports) || !Object.keys(exports).some((key) => key.startsWith("."))) {
    return subpath === "." ? conditionalTarget(exports, undefined) : undefined;
  }
  const map = exports;
  if (Object.hasOwn(map, subpath) && !subpath.includes("*")) return conditionalTarget(map[subpath], undefined);
  let best: { key: string; match: string } | undefined;
  for (const key of Object.keys(map)) {
    const star = key.indexOf("*");
    if (star < 0 || key.indexOf("*", star + 1) >= 0) continue;
    const prefix = key.slice(0, star);
    const suffix = key.slice(star + 1);
    if (!subpath.startsWith(prefix) || !subpath.endsWith(suffix) || subpath.length < key.length) continue;
    if (best === undefined || prefix.length > best.key.indexOf("*")) best = { key, match: subpath.slice(prefix.length, subpath.length - suffix.length) };
  }
  return best === undefined ? undefined : conditionalTarget(map[best.key], best.match);
}

function conditionalTarget(target: unknown, match: string | undefined): string | undefined {
  if (typeof target === "string") {
    if (!target.startsWith("./")) return undefined;
    return match === undefined ? target : target.replaceAll("*", match);
  }
  if (Array.isArray(target)) {
    for (const candidate of target) {
      const found = conditionalTarget(candidate, match);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof target === "object" && target !== null) {
    for (const [condition, value] of Object.entries(target)) {
      if (!CONDITIONS.has(condition)) continue;
      const found = conditionalTarget(value, match);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
