import { isAbsolute, resolve } from "node:path";
import { checklistItems } from "../graph-run/checks.js";
import { InvalidCommandError, allowListedEnv, clip, describeOutcome, outputTail, runBounded } from "../subprocess/index.js";
import { ConsentChangedError, verifyConsented } from "./consented.js";
import type { LoadedCapability } from "./load.js";
import { TASK_ID_PLACEHOLDER } from "./manifest.js";

/**
 * Tasks of a plan and their content (`execute:task`). A plan is a Markdown checklist whose items
 * start with a task id — `- [ ] jira-123 Fix the login` — and a capability whose resolver's
 * `trackerPrefix` is the id's prefix fetches that task's content from its tracker.
 *
 * Resolution is a hard halt, never a guess: a resolver that fails, times out or is not found is
 * a failure the caller stops on, distinct from "no resolver" and "resolved to nothing", which
 * leave the plan's own text in charge. A task id comes from a plan or a ticket, so it is hostile
 * text: it reaches the resolver as exactly one argv element, never through a shell.
 */

export interface PlanTask {
  readonly id: string;
  readonly title: string;
  readonly done: boolean;
  /** 1-based. */
  readonly line: number;
}

/** The longest task id a resolver is given. */
export const TASK_ID_MAX_CHARS = 200;
/** The most of a resolver's stdout that is content; more is a failure, not a cut. */
export const TASK_CONTENT_MAX_BYTES = 256 * 1024;
const STDERR_TAIL_LINES = 5;
const STDERR_TAIL_MAX_CHARS = 400;
const ID_SHOWN_MAX_CHARS = 80;

// A kebab token with at least one '-': `<prefix>-<rest>`.
const TASK_ID = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)+$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Whether `token` is a task id as a plan writes one. */
export function isTaskId(token: string): boolean {
  return token.length <= TASK_ID_MAX_CHARS && TASK_ID.test(token);
}

/**
 * The tasks of a Markdown checklist: items (`- [ ]`, `- [x]`, as the graph's checklist-complete
 * check counts them: `*`, `+` and `1.` lists too, at any indentation) whose first word is a task
 * id; the rest of the line is the title. Items in a fenced code block are examples, and items
 * whose first word is not a task id are not tasks.
 */
export function parsePlan(text: string): PlanTask[] {
  const tasks: PlanTask[] = [];
  for (const item of checklistItems(text)) {
    const [id = ""] = item.rest.split(/\s/, 1);
    if (!isTaskId(id)) continue;
    tasks.push({ id, title: item.rest.slice(id.length).trim(), done: item.box !== " ", line: item.line });
  }
  return tasks;
}

/**
 * The capability whose resolver owns `taskId`: the one whose `trackerPrefix` followed by '-'
 * starts the id, the longest such prefix winning. Prefixes are kebab words and may hold a '-'
 * themselves, so `beads-gsd-42` belongs to `beads-gsd` when that is installed and to `beads`
 * otherwise; prefixes are unique across installed capabilities, so the match is never a tie.
 */
export function resolverFor(capabilities: readonly LoadedCapability[], taskId: string): LoadedCapability | undefined {
  let best: LoadedCapability | undefined;
  let bestLength = -1;
  for (const capability of capabilities) {
    const prefix = capability.manifest.taskContentResolver?.trackerPrefix;
    if (prefix === undefined || taskId.length <= prefix.length + 1 || !taskId.startsWith(`${prefix}-`)) continue;
    if (prefix.length > bestLength) {
      best = capability;
      bestLength = prefix.length;
    }
  }
  return best;
}

export type TaskResolution =
  | { readonly kind: "resolved"; readonly content: string }
  | { readonly kind: "unresolved"; readonly reason: "no-resolver" | "empty" }
  | {
      readonly kind: "failed";
      readonly capability: string;
      readonly error: string;
      /** The bundle changed since consent: the resolver was not run. */
      readonly consentChanged?: ConsentChangedError;
    };

/** Why `taskId` may not reach a resolver, or undefined when it may. */
function taskIdProblem(taskId: string): string | undefined {
  if (taskId.length > TASK_ID_MAX_CHARS) return `the task id is ${taskId.length} characters long; at most ${TASK_ID_MAX_CHARS} are given to a resolver`;
  if (CONTROL.test(taskId)) return "the task id holds a control character, which no resolver is given";
  return undefined;
}

/** The resolver's program: a bare name is looked up on PATH, an absolute path is used, any other path is a file in the bundle. */
function programOf(capability: LoadedCapability, binary: string): string {
  return isAbsolute(binary) || !/[\\/]/.test(binary) ? binary : resolve(capability.dir, binary);
}

/**
 * Runs the resolver that owns `taskId` and answers its content. See the module comment: exit 0
 * with output is the content (stdout verbatim, at most `TASK_CONTENT_MAX_BYTES`); exit 0 with
 * nothing but whitespace is "empty"; anything else is a failure naming the capability, the id,
 * how the resolver ended and the end of its stderr. The resolver runs in its bundle with the
 * base environment only (`allowListedEnv`), bounded by its `timeoutMs`. The promise never rejects.
 */
export async function resolveTaskContent(
  capabilities: readonly LoadedCapability[],
  taskId: string,
  options: { readonly signal?: AbortSignal } = {},
): Promise<TaskResolution> {
  const capability = resolverFor(capabilities, taskId);
  const resolver = capability?.manifest.taskContentResolver;
  if (capability === undefined || resolver === undefined) return { kind: "unresolved", reason: "no-resolver" };
  const id = capability.manifest.id;
  const shownId = JSON.stringify(clip(taskId.replace(new RegExp(CONTROL.source, "g"), "?"), ID_SHOWN_MAX_CHARS));
  const failed = (why: string): TaskResolution => ({
    kind: "failed",
    capability: id,
    error: `capability ${id} could not resolve task ${shownId}: ${why}; the task does not run without its content (fix the resolver in ${capability.dir}, or the task id in the plan)`,
  });
  const refused = taskIdProblem(taskId);
  if (refused !== undefined) return failed(refused);
  // The resolver runs from inside its bundle: the bundle must still be the one consented to.
  try {
    await verifyConsented(capability);
  } catch (error) {
    if (!(error instanceof ConsentChangedError)) throw error;
    return { kind: "failed", capability: id, error: error.message, consentChanged: error };
  }

  const { binary, args, timeoutMs } = resolver.invoke;
  // The id replaces an element that is exactly the placeholder, never text inside one.
  const argv = [programOf(capability, binary), ...args.map((arg) => (arg === TASK_ID_PLACEHOLDER ? taskId : arg))];
  let result;
  try {
    result = await runBounded({
      argv,
      cwd: capability.dir,
      env: allowListedEnv([]),
      timeoutMs,
      outputCapBytes: TASK_CONTENT_MAX_BYTES,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    if (error instanceof InvalidCommandError) return failed(`its invocation cannot be run: ${error.message}`);
    throw error;
  }
  const ended = describeOutcome(result, timeoutMs);
  const stderrTail = outputTail(result.stderr, STDERR_TAIL_LINES, STDERR_TAIL_MAX_CHARS);
  const withStderr = (why: string): string => (stderrTail === "" ? why : `${why}; stderr: ${stderrTail}`);
  if (result.error !== undefined || result.exitCode !== 0 || result.timedOut || result.aborted) return failed(withStderr(`the resolver failed (${ended})`));
  if (result.stdoutTruncated) return failed(withStderr(`the resolver printed more than ${TASK_CONTENT_MAX_BYTES / 1024} KiB, more than a task's content may be`));
  if (result.stdout.trim() === "") return { kind: "unresolved", reason: "empty" };
  return { kind: "resolved", content: result.stdout };
}
