/**
 * A pinned agent CLI installed from the npm registry into a cache folder, outside the package's
 * dependencies (each is tens to hundreds of MB), for the tests and benchmarks that drive the real
 * agent. Idempotent: a cache that already holds the pinned version is used as it is. The install
 * goes to a fresh folder renamed into place, so a run stopped halfway never leaves a cache that
 * looks whole. Each `install-*.ts` script names one CLI.
 *
 * THE_LOOP_CLAUDE_CODE_CACHE overrides the cache folder of them all (default
 * `${XDG_CACHE_HOME:-~/.cache}/the-loop`).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export interface PinnedCli {
  /** The npm package, e.g. `@openai/codex`. */
  readonly package: string;
  /** The version the harness contract is checked against. */
  readonly version: string;
  /** The program its package puts in `node_modules/.bin`. */
  readonly bin: string;
  /** The cache's folder for it, without the version: `codex` → `<cache>/codex-0.169.0`. */
  readonly folder: string;
  /** How long npm may take (the largest CLI is ~400 MB). */
  readonly timeoutMs?: number;
}

export function agentCliCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.THE_LOOP_CLAUDE_CODE_CACHE) return env.THE_LOOP_CLAUDE_CODE_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "the-loop");
}

async function installedVersion(dir: string, cli: PinnedCli): Promise<string | undefined> {
  try {
    const manifest = JSON.parse(await readFile(join(dir, "node_modules", ...cli.package.split("/"), "package.json"), "utf8")) as { version?: string };
    return manifest.version;
  } catch {
    // No manifest: nothing installed there yet (or a damaged cache, which is installed afresh).
    return undefined;
  }
}

/** The path of the CLI's pinned binary, installed first when missing. */
export async function ensurePinnedCli(cli: PinnedCli, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = join(agentCliCacheDir(env), `${cli.folder}-${cli.version}`);
  const binaryIn = (root: string): string => join(root, "node_modules", ".bin", cli.bin);
  if ((await installedVersion(dir, cli)) === cli.version && existsSync(binaryIn(dir))) return binaryIn(dir);
  const staging = `${dir}.${process.pid}.partial`;
  const spec = `${cli.package}@${cli.version}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await writeFile(join(staging, "package.json"), `${JSON.stringify({ private: true, name: `the-loop-${cli.folder}-cache` })}\n`);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  try {
    // A native binary comes in a per-platform optional dependency of the package, from the
    // registry: nothing is downloaded from elsewhere.
    await promisify(execFile)(npm, ["install", "--no-audit", "--no-fund", "--no-save", spec], {
      cwd: staging,
      timeout: cli.timeoutMs ?? 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`could not install ${spec} into ${dir}: ${(error as Error).message}`, { cause: error });
  }
  if (!existsSync(binaryIn(staging))) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`${spec} installed without a ${cli.bin} binary for ${process.platform}-${process.arch}`);
  }
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  return binaryIn(dir);
}

/** Run as a script (`npx tsx scripts/install-codex.ts`): installs, and prints the binary's path. */
export function installWhenRun(moduleUrl: string, ensure: () => Promise<string>): void {
  if (process.argv[1] === undefined || fileURLToPath(moduleUrl) !== process.argv[1]) return;
  ensure().then(
    (binary) => process.stdout.write(`${binary}\n`),
    (error: unknown) => {
      process.stderr.write(`${(error as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
