import { spawn } from "node:child_process";
import { extname } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DEFAULT_IMPORT_TIMEOUT_MS } from "./local.js";

/**
 * Loading a `hooks:` declaration as the daemon will, for a check that must not be fooled by a
 * declaration that only looks right (docs/hooks.md#declaring-hooks). The load runs in a child
 * process: a hook module's top-level code — and its constructor — runs at import, and a check must
 * never let it touch, hang or end the process that asked. The child calls the daemon's own
 * loader, with the options a daemon builds, so what it imports is what the daemon would import.
 */

/** What the child is given: the declaration as the config loader read it, and where it was read. */
export interface HookLoadRequest {
  /** The config's `hooks` value. */
  readonly raw: unknown;
  /** The directory of the config file in effect. */
  readonly configDir: string;
  readonly configPath?: string;
  /** How long one module's import may take in the child (default: the daemon's). */
  readonly importTimeoutMs?: number;
}

/** The child's answer: the names of the hooks that loaded, or the daemon's own error. */
export type HookLoadResult =
  { readonly ok: true; readonly hooks: readonly string[] } | { readonly ok: false; readonly message: string; readonly hook?: string };

export interface CheckHooksOptions {
  /** How long the whole load may take before the child is killed (default: every local import's bound, and a margin). */
  readonly timeoutMs?: number;
  readonly env?: NodeJS.ProcessEnv;
}

/** Beyond the imports' own bounds: Node's start, the loader, a `.ts` compile. */
const MARGIN_MS = 15_000;

/** What to do about any entry that does not load: the same for every cause, so it is said once, here. */
export const HOOK_LOAD_FIX = "the daemon refuses to start on it; fix the entry, or set enabled: false on it until it loads";

function localEntries(raw: unknown): number {
  if (!Array.isArray(raw)) return 0;
  return raw.filter((entry: unknown) => typeof entry === "object" && entry !== null && ("module" in entry || "path" in entry)).length;
}

/** The child's command: its compiled file, or — when this module runs from source, under a test runner — the source through tsx. */
function childArgv(): string[] {
  const self = fileURLToPath(import.meta.url);
  const child = self.slice(0, -extname(self).length) + `-child${extname(self)}`;
  // tsx named by its file, so the child finds it whatever its working directory.
  return extname(self) === ".ts" ? ["--import", pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href, child] : [child];
}

function isResult(value: unknown): value is HookLoadResult {
  if (typeof value !== "object" || value === null) return false;
  const ok: unknown = Reflect.get(value, "ok");
  return ok === true || (ok === false && typeof Reflect.get(value, "message") === "string");
}

const optionalString = (value: unknown): boolean => value === undefined || typeof value === "string";

/** What the child accepts as its request (it comes over IPC, so it is checked, not assumed). */
export function isLoadRequest(value: unknown): value is HookLoadRequest {
  if (typeof value !== "object" || value === null) return false;
  const timeout: unknown = Reflect.get(value, "importTimeoutMs");
  return (
    typeof Reflect.get(value, "configDir") === "string" &&
    optionalString(Reflect.get(value, "configPath")) &&
    (timeout === undefined || (typeof timeout === "number" && Number.isFinite(timeout) && timeout > 0))
  );
}

/** Loads the declaration in a child process, bounded; never throws for a hook's sake. */
export async function checkHooksLoad(request: HookLoadRequest, options: CheckHooksOptions = {}): Promise<HookLoadResult> {
  const importBound = request.importTimeoutMs ?? DEFAULT_IMPORT_TIMEOUT_MS;
  const timeoutMs = options.timeoutMs ?? Math.max(1, localEntries(request.raw)) * importBound + MARGIN_MS;
  const child = spawn(process.execPath, childArgv(), {
    stdio: ["ignore", "ignore", "pipe", "ipc"],
    env: options.env ?? process.env,
  });
  // Over IPC, not argv: a `with` object may hold what the process list must not show.
  child.send(request);
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    // The tail is what names a crash; a chatty module must not fill the memory.
    stderr = (stderr + chunk).slice(-4000);
  });
  return await new Promise<HookLoadResult>((resolve) => {
    let answer: HookLoadResult | undefined;
    const timer = setTimeout(() => {
      answer ??= {
        ok: false,
        message: `loading the hooks did not finish within ${timeoutMs / 1000} s: a hook module or constructor that blocks (a synchronous loop, a wait that never ends) would hold the daemon's start the same way`,
      };
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("message", (message: unknown) => {
      if (isResult(message)) answer ??= message;
    });
    child.on("error", (error) => {
      answer ??= { ok: false, message: `the hooks could not be checked: ${error.message}` };
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const why = signal !== null ? `by ${signal}` : `with code ${String(code)}`;
      const tail = stderr.trim().split("\n").slice(-5).join("\n");
      resolve(answer ?? { ok: false, message: `loading the hooks ended the process ${why}, as it would end the daemon${tail === "" ? "" : `: ${tail}`}` });
    });
  });
}
