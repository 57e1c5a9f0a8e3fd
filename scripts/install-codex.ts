/**
 * Installs the pinned Codex CLI into a cache folder, outside the package's dependencies (it is
 * ~404 MB with its native binary), for the test that drives the real agent. Idempotent: a cache
 * that already holds the pinned version is used as it is.
 *
 *   npx tsx scripts/install-codex.ts     # prints the path of the `codex` binary
 *
 * THE_LOOP_CLAUDE_CODE_CACHE overrides the cache folder, shared with the Claude Code install
 * (default `${XDG_CACHE_HOME:-~/.cache}/the-loop`).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { claudeCodeCacheDir } from "./install-claude-code.js";

/** The version the harness contract is checked against; bump it deliberately, then run the real-agent test. */
export const CODEX_VERSION = "0.169.0";
const PACKAGE = "@openai/codex";

function installDir(env: NodeJS.ProcessEnv): string {
  return join(claudeCodeCacheDir(env), `codex-${CODEX_VERSION}`);
}

function binaryIn(dir: string): string {
  return join(dir, "node_modules", ".bin", "codex");
}

async function installedVersion(dir: string): Promise<string | undefined> {
  try {
    const manifest = JSON.parse(await readFile(join(dir, "node_modules", "@openai", "codex", "package.json"), "utf8")) as {
      version?: string;
    };
    return manifest.version;
  } catch {
    // No manifest: nothing installed there yet (or a damaged cache, which is installed afresh).
    return undefined;
  }
}

/**
 * The path of the pinned `codex` binary, installed first when missing. The install goes to a
 * fresh folder renamed into place, so a run stopped halfway never leaves a cache that looks whole.
 */
export async function ensureCodex(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = installDir(env);
  if ((await installedVersion(dir)) === CODEX_VERSION && existsSync(binaryIn(dir))) return binaryIn(dir);
  const staging = `${dir}.${process.pid}.partial`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await writeFile(join(staging, "package.json"), `${JSON.stringify({ private: true, name: "the-loop-codex-cache" })}\n`);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  try {
    // The package ships its native binary in a per-platform optional dependency, resolved by
    // its launcher at run time; the install downloads nothing beyond the registry.
    await promisify(execFile)(npm, ["install", "--no-audit", "--no-fund", "--no-save", `${PACKAGE}@${CODEX_VERSION}`], {
      cwd: staging,
      timeout: 600_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`could not install ${PACKAGE}@${CODEX_VERSION} into ${dir}: ${(error as Error).message}`, { cause: error });
  }
  if (!existsSync(binaryIn(staging))) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`${PACKAGE}@${CODEX_VERSION} installed without a codex binary for ${process.platform}-${process.arch}`);
  }
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  return binaryIn(dir);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureCodex().then(
    (binary) => process.stdout.write(`${binary}\n`),
    (error: unknown) => {
      process.stderr.write(`${(error as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
