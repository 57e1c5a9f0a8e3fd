import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ConfigProblem } from "./problem.js";
import type { CliConfig } from "./schema.js";

/**
 * A cache of validated configs, so a command whose config file has not changed skips YAML
 * parsing and schema validation — most of a short command's start-up. An entry is used only
 * when its key matches: the file's path and exact text, and the schema build that validated it
 * (a new the-loop, or a rebuilt one, never trusts an older entry). Only valid configs are
 * cached; a broken one is parsed, and its problems reported, every time. Entries live in the
 * user's cache folder, one per config file, and are safe to delete.
 */

const FORMAT = 1;

interface CacheEntry {
  readonly format: number;
  readonly key: string;
  readonly config: CliConfig;
  readonly warnings: readonly ConfigProblem[];
}

export interface CachedConfig {
  readonly config: CliConfig;
  readonly warnings: readonly ConfigProblem[];
}

/** The modules the config schema is built from: a change to any of them can change what is valid. */
const SCHEMA_MODULES = ["schema", "graph-schema", "keyword-schema"];

/** Size and mtime of the schema modules this process runs: changes whenever the schema can. */
function schemaFingerprint(): string {
  return SCHEMA_MODULES.map((module) => {
    for (const name of [`./${module}.js`, `./${module}.ts`]) {
      try {
        const stat = statSync(fileURLToPath(new URL(name, import.meta.url)));
        return `${stat.size}:${stat.mtimeMs}`;
      } catch {
        // Not this one (compiled or run from source).
      }
    }
    return "unknown";
  }).join(",");
}

export function cacheKey(path: string, text: string): string {
  return createHash("sha256")
    .update(JSON.stringify([FORMAT, schemaFingerprint(), path, text]))
    .digest("hex");
}

export function cacheFileFor(path: string, env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const root = env.XDG_CACHE_HOME || join(home, ".cache");
  const name = createHash("sha256").update(path).digest("hex").slice(0, 24);
  return join(root, "the-loop", "config", `${name}.json`);
}

/**
 * The envelope checked, the config inside trusted: it was validated by the schema when it was
 * written, and the key binds it to this file's exact text and this schema build. Validating it
 * again is the start-up cost the cache exists to skip (zod alone takes 60–130 ms to load).
 */
function isCacheEntry(value: unknown): value is CacheEntry {
  if (typeof value !== "object" || value === null) return false;
  const entry: { format?: unknown; key?: unknown; config?: unknown; warnings?: unknown } = value;
  return (
    typeof entry.format === "number" &&
    typeof entry.key === "string" &&
    typeof entry.config === "object" &&
    entry.config !== null &&
    !Array.isArray(entry.config) &&
    Array.isArray(entry.warnings) &&
    entry.warnings.every(
      (warning: unknown) =>
        typeof warning === "object" &&
        warning !== null &&
        "path" in warning &&
        typeof warning.path === "string" &&
        "message" in warning &&
        typeof warning.message === "string",
    )
  );
}

export function readCachedConfig(file: string, key: string): CachedConfig | undefined {
  try {
    const entry: unknown = JSON.parse(readFileSync(file, "utf8"));
    if (!isCacheEntry(entry) || entry.format !== FORMAT || entry.key !== key) return undefined;
    return { config: entry.config, warnings: entry.warnings };
  } catch {
    return undefined;
  }
}

/** Best-effort: a cache that cannot be written only means the next command parses again. */
export function writeCachedConfig(file: string, key: string, value: CachedConfig): void {
  const entry: CacheEntry = { format: FORMAT, key, config: value.config, warnings: value.warnings };
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(join(file, ".."), { recursive: true, mode: 0o700 });
    writeFileSync(temporary, JSON.stringify(entry), { mode: 0o600 });
    renameSync(temporary, file);
  } catch {
    // Read-only home, full disk: carry on without the cache.
  }
}
