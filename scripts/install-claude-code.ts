/**
 * Installs the pinned Claude Code CLI into a cache folder, outside the package's dependencies
 * (it is ~235 MB with its native binary), for the tests and benchmarks that drive the real
 * agent. Idempotent: a cache that already holds the pinned version is used as it is.
 *
 *   npx tsx scripts/install-claude-code.ts     # prints the path of the `claude` binary
 *
 * THE_LOOP_CLAUDE_CODE_CACHE overrides the cache folder (default
 * `${XDG_CACHE_HOME:-~/.cache}/the-loop`).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** The version the harness contract is checked against; bump it deliberately, then run the real-agent test. */
export const CLAUDE_CODE_VERSION = "2.1.197";
const PACKAGE = "@anthropic-ai/claude-code";

export function claudeCodeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.THE_LOOP_CLAUDE_CODE_CACHE) return env.THE_LOOP_CLAUDE_CODE_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "the-loop");
}

function installDir(env: NodeJS.ProcessEnv): string {
  return join(claudeCodeCacheDir(env), `claude-code-${CLAUDE_CODE_VERSION}`);
}

function binaryIn(dir: string): string {
  return join(dir, "node_modules", ".bin", "claude");
}

async function installedVersion(dir: string): Promise<string | undefined> {
  try {
    const manifest = JSON.parse(await readFile(join(dir, "node_modules", "@anthropic-ai", "claude-code", "package.json"), "utf8")) as {
      version?: string;
    };
    return manifest.version;
  } catch {
    return undefined;
  }
}

/**
 * The path of the pinned `claude` binary, installed first when missing. The install goes to a
 * fresh folder renamed into place, so a run stopped halfway never leaves a cache that looks whole.
 */
export async function ensureClaudeCode(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = installDir(env);
  if ((await installedVersion(dir)) === CLAUDE_CODE_VERSION && existsSync(binaryIn(dir))) return binaryIn(dir);
  const staging = `${dir}.${process.pid}.partial`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await writeFile(join(staging, "package.json"), `${JSON.stringify({ private: true, name: "the-loop-claude-code-cache" })}\n`);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  try {
    // The package ships its binary in a per-platform optional dependency; its own postinstall
    // only links it, so the install needs no script and no download beyond the registry.
    await promisify(execFile)(npm, ["install", "--no-audit", "--no-fund", "--no-save", `${PACKAGE}@${CLAUDE_CODE_VERSION}`], {
      cwd: staging,
      timeout: 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`could not install ${PACKAGE}@${CLAUDE_CODE_VERSION} into ${dir}: ${(error as Error).message}`, { cause: error });
  }
  if (!existsSync(binaryIn(staging))) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`${PACKAGE}@${CLAUDE_CODE_VERSION} installed without a claude binary for ${process.platform}-${process.arch}`);
  }
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  return binaryIn(dir);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureClaudeCode().then(
    (binary) => process.stdout.write(`${binary}\n`),
    (error: unknown) => {
      process.stderr.write(`${(error as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
