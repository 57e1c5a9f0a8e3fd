import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import { DIR_MARKER, RUN_KEY, RUN_MARKER, WORKER_MARKER } from "./processes.js";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const BIN = fileURLToPath(new URL("../../bin/the-loop.js", import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly cwd: string;
  /** Merged over a clean environment whose HOME is `home` (or `cwd`), so no user config leaks in. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly home?: string;
  readonly input?: string;
}

/**
 * A minimal, predictable environment for the CLI under test, marked so that what it starts can
 * be found again when a test ends (processes.ts).
 */
export function cliEnv(options: CliOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: options.home ?? options.cwd,
    USER: "tester",
    LOGNAME: "tester",
    NO_COLOR: "1",
    TZ: "UTC",
  };
  for (const [key, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  env[RUN_MARKER] = inject(RUN_KEY);
  env[WORKER_MARKER] = String(process.pid);
  env[DIR_MARKER] = options.cwd;
  return env;
}

/** Runs `the-loop …` as a real process and collects its output. */
export function runCli(args: readonly string[], options: CliOptions): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: cliEnv(options) });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

/** Parses stdout of a `--json` command, failing the test with the output when it is not JSON. */
export function jsonOf<T = unknown>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (exit ${result.code}):\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}
