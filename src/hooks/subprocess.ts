import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import type { HookPoint } from "../sdk/hooks/catalog.js";
import { allowListedEnv, formatDuration, runBounded } from "../subprocess/index.js";
import type { BoundedResult } from "../subprocess/index.js";
import type { SubprocessHookEntry } from "./declaration.js";
import type { HookContext, HookExecutor } from "./types.js";
import { answerTopSchema, parseAnswer } from "./answer.js";
import { describe } from "./values.js";

/**
 * A `command` entry: a program run once per invocation through the bounded command runner —
 * argv, never a shell; the config file's folder as its working directory; an environment of the
 * base names and the entry's `env`, nothing else of this process's (no tracker token, no hook
 * token); stopped with everything it started at the entry's timeout.
 *
 * The protocol is the remote one without JSON-RPC's framing. On stdin, one JSON document:
 *
 *     {"point": "work_item_start", "context": {…facts and decisions…}, "with": {…the entry's with…}}
 *
 * On stdout, one JSON document: an object (the context, or only the decisions it changes) or
 * `null` to pass. The command answers by exiting 0; any other end is its failure. Its stderr is
 * read and dropped — never in an event, a message or a comment — since a hook's diagnostics may
 * quote the facts it was given, or a secret its environment holds.
 */

/** A hook's answer is decisions, not a download: more stdout than this is a failure (as a remote reply's cap). */
export const MAX_PATCH_BYTES = 1024 * 1024;

export interface SubprocessExecutorOptions {
  /** The points an entry without `on` runs at (load.ts has left out the opt-in ones). */
  readonly points: readonly HookPoint[];
  /** The directory of the config file in effect: the command's working directory. */
  readonly configDir: string;
  /** Where the `env` names (and PATH, HOME, …) are read, at each call (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
}

/** Why a command entry cannot be loaded; load.ts prefixes the entry's name. */
export class SubprocessHookError extends Error {
  override readonly name = "SubprocessHookError";
}

/** The document a command reads on stdin. */
export interface SubprocessHookRequest {
  /** The point's name, as `on` lists it. */
  readonly point: string;
  /** The whole context: facts and decisions. */
  readonly context: HookContext;
  /** The entry's `with` (an empty object when it has none). */
  readonly with: Readonly<Record<string, unknown>>;
}

class SubprocessHookExecutor implements HookExecutor {
  readonly name: string;
  readonly kind = "command" as const;
  readonly points: ReadonlySet<string>;
  readonly required: boolean;

  constructor(
    private readonly entry: SubprocessHookEntry,
    private readonly cwd: string,
    private readonly options: SubprocessExecutorOptions,
  ) {
    this.name = entry.name;
    this.points = new Set(entry.on ?? options.points.map((point) => point.name));
    this.required = entry.required;
  }

  async invoke(point: HookPoint, context: HookContext): Promise<unknown> {
    const request: SubprocessHookRequest = { point: point.name, context, with: this.entry.options };
    const timeoutMs = this.entry.timeoutSeconds * 1000;
    const result = await runBounded({
      argv: this.entry.argv,
      cwd: this.cwd,
      timeoutMs,
      env: allowListedEnv(this.entry.env, this.options.env ?? process.env),
      stdin: JSON.stringify(request),
      outputCapBytes: MAX_PATCH_BYTES,
    });
    const failure = failureOf(result, timeoutMs);
    if (failure !== undefined) throw new Error(failure);
    return readPatch(result.stdout, point);
  }
}

/**
 * Builds a command entry, checking that its program is there to run: a file that is executable,
 * or a bare name found on the PATH the command will be given. Throws SubprocessHookError.
 */
export function createSubprocessExecutor(entry: SubprocessHookEntry, options: SubprocessExecutorOptions): HookExecutor {
  const program = entry.argv[0] ?? "";
  const env = allowListedEnv(entry.env, options.env ?? process.env);
  if (isAbsolute(program)) checkProgram(program, `${program} (a relative path resolves against the config file's directory)`);
  else if (findOnPath(program, env["PATH"] ?? "") === undefined) {
    throw new SubprocessHookError(
      `command not found: ${program} is on no folder of the PATH the command is given; install it, or name the file (./${program} is relative to the config file's directory)`,
    );
  }
  return new SubprocessHookExecutor(entry, resolve(options.configDir), options);
}

function checkProgram(file: string, where: string): void {
  let isFile = false;
  try {
    isFile = statSync(file).isFile();
  } catch {
    // Absent: reported below with where it was looked for.
  }
  if (!isFile) throw new SubprocessHookError(`no file at ${where}`);
  if (!isExecutable(file)) {
    throw new SubprocessHookError(`${file} is not executable; make it so (chmod +x), or run it through its interpreter (command: [node, ${file}])`);
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The file a bare name runs as, looked up as the child's spawn will look it up. */
function findOnPath(name: string, path: string): string | undefined {
  for (const folder of path.split(delimiter)) {
    if (folder === "") continue;
    const file = join(folder, name);
    try {
      if (statSync(file).isFile() && isExecutable(file)) return file;
    } catch {
      // Not in this folder.
    }
  }
  return undefined;
}

/** Why a run is the hook's failure, in words with no byte of its output; undefined when it answered. */
function failureOf(result: BoundedResult, timeoutMs: number): string | undefined {
  if (result.error !== undefined) return result.error;
  if (result.timedOut) return `the command did not finish within ${formatDuration(timeoutMs)} and was stopped`;
  if (result.aborted) return "the command was stopped before it finished";
  if (result.exitCode === null) return `the command was killed by ${result.signal ?? "a signal"}`;
  if (result.exitCode !== 0) return `the command exited with status ${result.exitCode} (its stderr is not kept; run it by hand to read it)`;
  if (result.stdoutTruncated) return `the command printed more than ${MAX_PATCH_BYTES} bytes; a hook answers with decisions only`;
  return undefined;
}

/** The answer a command printed, parsed at `point`: an object, or undefined for `null`. Throws saying what is wrong, never quoting it. */
function readPatch(stdout: string, point: HookPoint): unknown {
  if (stdout.trim() === "") throw new Error("the command printed nothing; print the context (or {} to change nothing, or null to pass) as JSON");
  let printed: unknown;
  try {
    printed = JSON.parse(stdout);
  } catch {
    throw new Error("the command printed something that is not one JSON document; print only the context, as JSON, on stdout (diagnostics go to stderr)");
  }
  const patch = answerTopSchema.safeParse(printed);
  if (!patch.success) throw new Error(`the command printed ${describe(printed)}, not a context object or null`);
  return patch.data === null ? undefined : parseAnswer(point, patch.data);
}
