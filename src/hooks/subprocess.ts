import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import type { HookPoint } from "../sdk/hooks/catalog.js";
import { allowListedEnv, formatDuration, runBounded } from "../subprocess/index.js";
import type { BoundedResult } from "../subprocess/index.js";
import type { SubprocessHookEntry } from "./declaration.js";
import type { HookContext, HookExecutor } from "./types.js";
import { answerTopSchema, parseAnswer } from "./answer.js";
import { describe, isPlainObject, sameJson } from "./values.js";

/**
 * A `command` entry: a program run once per invocation through the bounded command runner —
 * argv, never a shell; the config file's folder as its working directory; an environment of the
 * base names and the entry's `env`, nothing else of this process's (no tracker token, no hook
 * token); stopped with everything it started at the entry's timeout.
 *
 * The wire is agh's subprocess-hook contract, so a hook written for agh runs unchanged. On
 * stdin, one flat JSON object: at a `loop.*` event the payload itself (`event`, `timestamp`, the
 * loop context and the event's fields at the top level), the entry's `with` under
 * `details.the_loop.with`; at a lifecycle point the context a remote hook gets as `params`, plus
 * `event` (the point's name) and `timestamp`, the entry's `with` under `the_loop.with`. On
 * stdout, the patch: nothing (or only whitespace) is the empty patch, a JSON object is the patch,
 * `null` passes; anything else is the hook's failure (fail-open at a loop event). The command
 * answers by exiting 0; any other end is its failure. Its stderr is read and dropped — never in
 * an event, a message or a comment — since a hook's diagnostics may quote the facts it was
 * given, or a secret its environment holds.
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

/** The key of a lifecycle payload (and of a loop payload's `details`) under which the-loop's own additions travel. */
export const THE_LOOP_KEY = "the_loop";

/** The object a command reads on stdin: flat, agh's framing (see the file's comment). */
export type SubprocessHookRequest = Readonly<Record<string, unknown>>;

/**
 * What a command reads on stdin at `point`. At a loop event the payload already is agh's flat
 * object; the entry's `with` joins the-loop's facts under `details.the_loop`, never the top
 * level. At a lifecycle point the context gets agh's base (`event`, `timestamp`) and `the_loop`.
 */
export function subprocessRequest(
  point: HookPoint,
  context: HookContext,
  options: Readonly<Record<string, unknown>>,
  now: () => Date = () => new Date(),
): SubprocessHookRequest {
  const withOptions = Object.keys(options).length > 0 ? { with: options } : undefined;
  if (point.family === "loop") {
    if (withOptions === undefined) return context;
    const details = isPlainObject(context["details"]) ? context["details"] : {};
    const ours = isPlainObject(details[THE_LOOP_KEY]) ? details[THE_LOOP_KEY] : {};
    return { ...context, details: { ...details, [THE_LOOP_KEY]: { ...ours, ...withOptions } } };
  }
  return { ...context, event: point.name, timestamp: now().toISOString(), ...(withOptions !== undefined ? { [THE_LOOP_KEY]: withOptions } : {}) };
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
    const request = subprocessRequest(point, context, this.entry.options);
    const timeoutMs = this.entry.timeoutSeconds * 1000;
    const result = await runBounded({
      argv: this.entry.argv,
      cwd: this.cwd,
      timeoutMs,
      env: commandEnvironment(this.entry, this.options.env ?? process.env),
      stdin: JSON.stringify(request),
      outputCapBytes: MAX_PATCH_BYTES,
    });
    const failure = failureOf(result, timeoutMs);
    if (failure !== undefined) throw new Error(failure);
    return readPatch(result.stdout, point, request);
  }
}

/**
 * Builds a command entry, checking that its program is there to run: a file that is executable,
 * or a bare name found on the PATH the command will be given. Throws SubprocessHookError.
 */
export function createSubprocessExecutor(entry: SubprocessHookEntry, options: SubprocessExecutorOptions): HookExecutor {
  const program = entry.argv[0] ?? "";
  const env = commandEnvironment(entry, options.env ?? process.env);
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

/**
 * The command's environment: the base names and the list's names read from `source`, then the
 * map's values as written (a name the map gives is never read from `source`).
 */
function commandEnvironment(entry: SubprocessHookEntry, source: NodeJS.ProcessEnv): Record<string, string> {
  const fromSource = entry.env.filter((name) => !Object.hasOwn(entry.envValues, name));
  return { ...allowListedEnv(fromSource, source), ...entry.envValues };
}

/**
 * The patch a command printed, read as agh reads it: nothing is the empty patch, `null` passes,
 * an object is the patch, anything else is the failure. Keys that only echo what was sent (a
 * hook that prints its payload back, agh's framing included) are no answer and are dropped
 * before the point reads the rest. Throws saying what is wrong, never quoting it.
 */
function readPatch(stdout: string, point: HookPoint, sent: SubprocessHookRequest): unknown {
  if (stdout.trim() === "") return undefined;
  let printed: unknown;
  try {
    printed = JSON.parse(stdout);
  } catch {
    throw new Error(
      "the command printed something that is not one JSON document; print the patch as one JSON object on stdout, or nothing (diagnostics go to stderr)",
    );
  }
  const patch = answerTopSchema.safeParse(printed);
  if (!patch.success) throw new Error(`the command printed ${describe(printed)}, not a patch object or null`);
  if (patch.data === null) return undefined;
  const answer: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch.data)) {
    if (!Object.hasOwn(point.decisions, key) && Object.hasOwn(sent, key) && sameJson(value, sent[key])) continue;
    answer[key] = value;
  }
  return parseAnswer(point, answer);
}
