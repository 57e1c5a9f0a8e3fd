import { isAbsolute, resolve } from "node:path";
import { checklistItems } from "../graph-run/checks.js";
import { InvalidCommandError, allowListedEnv, clip, describeOutcome, outputTail, runBounded, stripControlCharacters } from "../subprocess/index.js";
import { ConsentChangedError, verifyConsented } from "./consented.js";
import type { LoadedCapability } from "./load.js";
import { TASK_ID_PLACEHOLDER } from "./manifest.js";

/**
 * Tasks of a plan and their content (`execute:task`), in two grammars side by side:
 *
 * - the-loop's Markdown checklist, whose items start with a task id — `- [ ] jira-123 Fix the
 *   login` — owned by the resolver whose `trackerPrefix` is the id's prefix before a '-'; its
 *   stdout is the content, verbatim;
 * - gsd-core's `<task tracker-id="beads:GSD-42">` elements, whose id is split on its first ':'
 *   into the resolver's `trackerPrefix` and the tracker's own id; its stdout is the tracker's
 *   JSON, read into gsd-core's task content (`{action, verify, acceptanceCriteria, readFirst, done}`).
 *
 * Resolution is a hard halt, never a guess: a resolver that fails, times out, is not found or (in
 * gsd-core's grammar) prints something that is not a JSON object is a failure the caller stops on,
 * distinct from "no resolver" and "resolved to nothing", which leave the plan's own text in charge.
 * A task id comes from a plan or a ticket, so it is hostile text: it reaches the resolver as
 * exactly one argv element, never through a shell.
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

/** A `<task>` element of gsd-core's plan grammar that carries a `tracker-id`. */
export interface TrackerTask {
  /** The attribute's value, trimmed, unsplit: `beads:GSD-42`. */
  readonly trackerId: string;
  /** 1-based: the line the element opens on. */
  readonly line: number;
  /** The text of its `<name>` element, on one line; empty when it has none. */
  readonly name: string;
}

// gsd-core's opening tag: `<task` followed by a space or `>`, in any case.
const TASK_OPENING = /<task(?=[\s>])[^>]*>/gi;
const TASK_CLOSING = /<\/task\s*>/i;
const TASK_NAME = /<name(?:\s[^>]*)?>([\s\S]*?)<\/name\s*>/i;
const NAME_MAX_CHARS = 200;

/** The `<name>` of the element opened at `from` (its body ends at `</task>`), on one line, bounded. */
function taskName(text: string, from: number): string {
  const rest = text.slice(from);
  const close = TASK_CLOSING.exec(rest);
  const body = close === null ? rest : rest.slice(0, close.index);
  const found = TASK_NAME.exec(body)?.[1] ?? "";
  return clip(stripControlCharacters(found.replace(/\s+/g, " ")).trim(), NAME_MAX_CHARS);
}
const FENCE = /^\s*(`{3,}|~{3,})/;

function attribute(openTag: string, name: string): string | undefined {
  const found = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`, "i").exec(openTag);
  const value = (found?.[1] ?? found?.[2] ?? "").trim();
  return value === "" ? undefined : value;
}

/** `text` with the lines of its fenced code blocks emptied, so line numbers still count them. */
function withoutFences(text: string): string {
  let fence: string | undefined;
  return text
    .split(/\r?\n/)
    .map((line) => {
      const marker = FENCE.exec(line)?.[1];
      if (marker !== undefined) {
        if (fence === undefined) fence = marker;
        else if (marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
        return "";
      }
      return fence === undefined ? line : "";
    })
    .join("\n");
}

/**
 * The `<task>` elements of a plan in gsd-core's grammar that name a tracker id, read as gsd-core
 * reads them: `tracker-id` in double or single quotes, trimmed, an empty one absent. A checkpoint
 * task (`type="checkpoint:…"`) is a human's step, so its tracker id is not read — as in gsd-core.
 * Unlike gsd-core, an element inside a fenced code block is an example, as a checklist item there is.
 */
export function parseTrackerTasks(text: string): TrackerTask[] {
  const plain = withoutFences(text);
  const tasks: TrackerTask[] = [];
  // Lines are counted from the previous match on, so a long plan is read once.
  let line = 1;
  let counted = 0;
  for (const match of plain.matchAll(TASK_OPENING)) {
    for (let at = plain.indexOf("\n", counted); at !== -1 && at < match.index; at = plain.indexOf("\n", at + 1)) line += 1;
    counted = match.index;
    if (attribute(match[0], "type")?.toLowerCase().startsWith("checkpoint") === true) continue;
    const trackerId = attribute(match[0], "tracker-id");
    if (trackerId === undefined) continue;
    tasks.push({ trackerId, line, name: taskName(plain, match.index + match[0].length) });
  }
  return tasks;
}

/** gsd-core's split of a tracker id on its first ':'; undefined when either side is empty. */
export function splitTrackerId(trackerId: string): { readonly prefix: string; readonly id: string } | undefined {
  const colon = trackerId.indexOf(":");
  if (colon <= 0 || colon === trackerId.length - 1) return undefined;
  return { prefix: trackerId.slice(0, colon), id: trackerId.slice(colon + 1) };
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
  { readonly kind: "resolved"; readonly content: string } | { readonly kind: "unresolved"; readonly reason: "no-resolver" | "empty" } | TaskResolutionFailure;

export interface TaskResolutionFailure {
  readonly kind: "failed";
  readonly capability: string;
  readonly error: string;
  /** The bundle changed since consent: the resolver was not run. */
  readonly consentChanged?: ConsentChangedError;
}

/** gsd-core's task content: what stands in for a `<task>` element's own elements. */
export interface TaskContent {
  readonly action: string | null;
  readonly verify: string | null;
  readonly acceptanceCriteria: readonly string[];
  readonly readFirst: readonly string[];
  readonly done: string | null;
}

/**
 * gsd-core's task content as the agent reads it in its assignment: the fields in the order a
 * `<task>` element gives them (`read_first` first, as gsd-core reads those files before acting),
 * each under gsd-core's element name, an empty one left out. It supersedes the plan's own
 * elements of that task, as in gsd-core.
 */
export function taskContentText(content: TaskContent): string {
  const list = (items: readonly string[]): string => items.map((item) => `- ${item}`).join("\n");
  const sections: [string, string][] = [
    ["read_first", list(content.readFirst)],
    ["action", content.action ?? ""],
    ["verify", content.verify ?? ""],
    ["acceptance_criteria", list(content.acceptanceCriteria)],
    ["done", content.done ?? ""],
  ];
  return sections
    .filter(([, text]) => text.trim() !== "")
    .map(([name, text]) => `<${name}>\n${text.trim()}\n</${name}>`)
    .join("\n\n");
}

export type TrackerTaskResolution =
  | { readonly kind: "resolved"; readonly content: TaskContent }
  /** `not-applicable`: the id has no `<prefix>:` to own it (gsd-core answers `{resolved: false}`). */
  | { readonly kind: "unresolved"; readonly reason: "no-resolver" | "empty" | "not-applicable" }
  | TaskResolutionFailure;

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

const shown = (text: string): string => JSON.stringify(clip(text.replace(new RegExp(CONTROL.source, "g"), "?"), ID_SHOWN_MAX_CHARS));

/**
 * Runs `capability`'s resolver for `argId` (what replaces `{{id}}`) and answers its stdout, or
 * the failure naming the capability, the task (`label`), how the resolver ended and the end of
 * its stderr. The resolver runs in its bundle with the base environment only (`allowListedEnv`),
 * bounded by its `timeoutMs`, only while the bundle is still the one consented to.
 */
async function runResolver(
  capability: LoadedCapability,
  argId: string,
  label: string,
  signal: AbortSignal | undefined,
): Promise<{ readonly stdout: string } | TaskResolutionFailure> {
  const resolver = capability.manifest.taskContentResolver;
  const id = capability.manifest.id;
  const failed = (why: string): TaskResolutionFailure => ({
    kind: "failed",
    capability: id,
    error: `capability ${id} could not resolve task ${shown(label)}: ${why}; the task does not run without its content (fix the resolver in ${capability.dir}, or the task id in the plan)`,
  });
  if (resolver === undefined) return failed("it has no taskContentResolver");
  const refused = taskIdProblem(argId);
  if (refused !== undefined) return failed(refused);
  try {
    await verifyConsented(capability);
  } catch (error) {
    if (!(error instanceof ConsentChangedError)) throw error;
    return { kind: "failed", capability: id, error: error.message, consentChanged: error };
  }

  const { binary, args, timeoutMs } = resolver.invoke;
  // The id replaces an element that is exactly the placeholder, never text inside one.
  const argv = [programOf(capability, binary), ...args.map((arg) => (arg === TASK_ID_PLACEHOLDER ? argId : arg))];
  let result;
  try {
    result = await runBounded({
      argv,
      cwd: capability.dir,
      env: allowListedEnv([]),
      timeoutMs,
      outputCapBytes: TASK_CONTENT_MAX_BYTES,
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    if (error instanceof InvalidCommandError) return failed(`its invocation cannot be run: ${error.message}`);
    throw error;
  }
  const ended = describeOutcome(result, timeoutMs);
  const stderrTail = outputTail(result.stderr, STDERR_TAIL_LINES, STDERR_TAIL_MAX_CHARS);
  const withStderr = (why: string): string => (stderrTail === "" ? why : `${why}; stderr: ${stderrTail}`);
  if (result.error !== undefined || result.exitCode !== 0 || result.timedOut || result.aborted) return failed(withStderr(`the resolver failed (${ended})`));
  if (result.stdoutTruncated)
    return failed(withStderr(`the resolver printed more than ${TASK_CONTENT_MAX_BYTES / 1024} KiB, more than a task's content may be`));
  return { stdout: result.stdout };
}

/**
 * The content of a checklist task (the-loop's grammar), from the resolver that owns `taskId`:
 * exit 0 with output is the content (stdout verbatim, at most `TASK_CONTENT_MAX_BYTES`); exit 0
 * with nothing but whitespace is "empty"; anything else is a failure (`runResolver`). The promise
 * never rejects.
 */
export async function resolveTaskContent(
  capabilities: readonly LoadedCapability[],
  taskId: string,
  options: { readonly signal?: AbortSignal } = {},
): Promise<TaskResolution> {
  const capability = resolverFor(capabilities, taskId);
  if (capability === undefined) return { kind: "unresolved", reason: "no-resolver" };
  const ran = await runResolver(capability, taskId, taskId, options.signal);
  if ("kind" in ran) return ran;
  if (ran.stdout.trim() === "") return { kind: "unresolved", reason: "empty" };
  return { kind: "resolved", content: ran.stdout };
}

/** The capability whose `trackerPrefix` is exactly `prefix` (prefixes are unique once installed). */
function trackerResolverFor(capabilities: readonly LoadedCapability[], prefix: string): LoadedCapability | undefined {
  return capabilities.find((capability) => capability.manifest.taskContentResolver?.trackerPrefix === prefix);
}

const stringOrNull = (value: unknown): string | null => (typeof value === "string" ? value : null);
const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : []);
const SAMPLE_MAX_CHARS = 200;

/**
 * The content of a `<task tracker-id>` task (gsd-core's grammar), answered as gsd-core answers
 * it: the id is split on its first ':' (none, or an empty side, is `not-applicable`); the
 * resolver whose `trackerPrefix` is exactly the part before it is given the part after it; its
 * stdout must be a JSON object, read field by field (`description` → `action`, `verify`,
 * `acceptance_criteria` → `acceptanceCriteria`, `read_first` → `readFirst`, `done`; a field of
 * the wrong type is null or dropped), and a blank `description` is "empty". Output that is not
 * a JSON object is a failure, as a failing resolver is. The promise never rejects.
 */
export async function resolveTrackerTask(
  capabilities: readonly LoadedCapability[],
  trackerId: string,
  options: { readonly signal?: AbortSignal } = {},
): Promise<TrackerTaskResolution> {
  const split = splitTrackerId(trackerId);
  if (split === undefined) return { kind: "unresolved", reason: "not-applicable" };
  const capability = trackerResolverFor(capabilities, split.prefix);
  if (capability === undefined) return { kind: "unresolved", reason: "no-resolver" };
  const ran = await runResolver(capability, split.id, trackerId, options.signal);
  if ("kind" in ran) return ran;
  const malformed = (why: string): TaskResolutionFailure => {
    const sample = clip(stripControlCharacters(ran.stdout).trim(), SAMPLE_MAX_CHARS).replace(/\n/g, " ");
    return {
      kind: "failed",
      capability: capability.manifest.id,
      error: `capability ${capability.manifest.id} could not resolve task ${shown(trackerId)}: the resolver's output ${why}${sample === "" ? "" : ` (it printed ${JSON.stringify(sample)})`}; the task does not run without its content (fix the resolver in ${capability.dir})`,
    };
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(ran.stdout);
  } catch {
    return malformed(ran.stdout.trim() === "" ? "is empty, not the tracker's JSON" : "is not JSON; a tracker-id resolver prints the tracker's JSON object");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return malformed(`is JSON but not an object (it is ${Array.isArray(parsed) ? "an array" : parsed === null ? "null" : `a ${typeof parsed}`})`);
  }
  const body = parsed as Record<string, unknown>;
  const content: TaskContent = {
    action: stringOrNull(body.description),
    verify: stringOrNull(body.verify),
    acceptanceCriteria: strings(body.acceptance_criteria),
    readFirst: strings(body.read_first),
    done: stringOrNull(body.done),
  };
  if ((content.action ?? "").trim() === "") return { kind: "unresolved", reason: "empty" };
  return { kind: "resolved", content };
}
