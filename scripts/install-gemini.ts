/**
 * Installs the pinned Gemini CLI into a cache folder, outside the package's dependencies (it is
 * ~96 MB), for the tests that drive the real agent. Idempotent: a cache that already holds the
 * pinned version is used as it is.
 *
 *   npx tsx scripts/install-gemini.ts     # prints the path of the `gemini` binary
 *
 * THE_LOOP_GEMINI_CACHE overrides the cache folder (default `${XDG_CACHE_HOME:-~/.cache}/the-loop`,
 * the folder the Claude Code install uses too).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** The version the harness contract is checked against; bump it deliberately, then run the real-agent test. */
export const GEMINI_CLI_VERSION = "0.61.0";
const PACKAGE = "@google/gemini-cli";

export function geminiCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.THE_LOOP_GEMINI_CACHE) return env.THE_LOOP_GEMINI_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "the-loop");
}

function installDir(env: NodeJS.ProcessEnv): string {
  return join(geminiCacheDir(env), `gemini-cli-${GEMINI_CLI_VERSION}`);
}

function binaryIn(dir: string): string {
  return join(dir, "node_modules", ".bin", "gemini");
}

async function installedVersion(dir: string): Promise<string | undefined> {
  try {
    const manifest = JSON.parse(await readFile(join(dir, "node_modules", "@google", "gemini-cli", "package.json"), "utf8")) as {
      version?: string;
    };
    return manifest.version;
  } catch {
    // No manifest (or an unreadable one) is a cache without the pinned version: install it.
    return undefined;
  }
}

/**
 * The path of the pinned `gemini` binary, installed first when missing. The install goes to a
 * fresh folder renamed into place, so a run stopped halfway never leaves a cache that looks whole.
 */
export async function ensureGeminiCli(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = installDir(env);
  if ((await installedVersion(dir)) === GEMINI_CLI_VERSION && existsSync(binaryIn(dir))) return binaryIn(dir);
  const staging = `${dir}.${process.pid}.partial`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await writeFile(join(staging, "package.json"), `${JSON.stringify({ private: true, name: "the-loop-gemini-cli-cache" })}\n`);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  try {
    await promisify(execFile)(npm, ["install", "--no-audit", "--no-fund", "--no-save", `${PACKAGE}@${GEMINI_CLI_VERSION}`], {
      cwd: staging,
      timeout: 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`could not install ${PACKAGE}@${GEMINI_CLI_VERSION} into ${dir}: ${(error as Error).message}`, { cause: error });
  }
  if (!existsSync(binaryIn(staging))) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`${PACKAGE}@${GEMINI_CLI_VERSION} installed without a gemini binary`);
  }
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  return binaryIn(dir);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureGeminiCli().then(
    (binary) => process.stdout.write(`${binary}\n`),
    (error: unknown) => {
      process.stderr.write(`${(error as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
