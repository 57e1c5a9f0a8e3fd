import { constants } from "node:fs";
import { open, realpath, stat } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { InvalidCommandError, clip, describeOutcome, outputTail, runBounded, stripControlCharacters } from "../subprocess/index.js";
import type { CheckResult, GraphCheck } from "../graph/types.js";

/**
 * A node's exit checks, run when an agent claims the node done. The agent is not the judge: the
 * daemon runs these in the session's working directory and every answer names what is missing,
 * so the agent (and the operator reading the history) knows what to do next.
 *
 * The working directory is the agent's to write, so nothing in it is trusted: an artifact counts
 * only as a regular file inside the directory, and a path that leaves it — `../x`, or a symlink
 * pointing out — does not count, whatever it points at.
 */

export interface RunChecksOptions {
  /** The session's working directory (absolute); artifacts resolve against it, commands run in it. */
  readonly cwd: string;
  /** Exactly the environment a command check gets (see `allowListedEnv`). */
  readonly env: Readonly<Record<string, string>>;
  /** The longest any one command may run, whatever its check says. */
  readonly timeoutCapMs?: number;
  /** Aborting stops a running command; the checks not yet run are reported as not run. */
  readonly signal?: AbortSignal;
}

/** A checklist larger than this is not read: a task list is a page, not a data file. */
export const CHECKLIST_MAX_BYTES = 4 * 1024 * 1024;
/** A command check's message stays short enough for an event, a comment, a terminal line. */
const COMMAND_MESSAGE_MAX_CHARS = 500;
const COMMAND_NAME_MAX_CHARS = 80;
const OUTPUT_TAIL_LINES = 5;
/** Enough of a command's last output for its tail; the rest is read and dropped. */
const COMMAND_OUTPUT_CAP_BYTES = 16 * 1024;
const QUOTED_ITEM_MAX_CHARS = 120;

/**
 * Runs `checks` and answers one result per check, in the same order.
 *
 * Every file check (artifact-exists, checklist-complete) runs: they are cheap, and the agent
 * learns everything that is missing from one claim. Commands run only when those all passed, one
 * at a time, and stop at the first that fails: a test suite run against a missing artifact would
 * only spend minutes to fail the claim anyway. A check not run says so (and counts as not passed).
 */
export async function runChecks(checks: readonly GraphCheck[], options: RunChecksOptions): Promise<CheckResult[]> {
  if (!isAbsolute(options.cwd)) throw new Error(`checks run in an absolute working directory, not "${options.cwd}"`);
  const root = await rootOf(options.cwd);
  if (typeof root === "string") return checks.map((check) => ({ check: check.kind, passed: false, message: root }));

  const results: (CheckResult | undefined)[] = await Promise.all(
    checks.map((check) => {
      if (check.kind === "artifact-exists") return artifactExists(root, check.anyOf);
      if (check.kind === "checklist-complete") return checklistComplete(root, check.anyOf);
      return undefined;
    }),
  );
  let notRun = results.some((result) => result !== undefined && !result.passed) ? "an artifact check failed first" : undefined;
  for (const [index, check] of checks.entries()) {
    if (check.kind !== "command") continue;
    if (notRun === undefined && options.signal?.aborted) notRun = "the checks were stopped";
    if (notRun !== undefined) {
      results[index] = { check: check.kind, passed: false, message: `${commandName(check.argv)} not run: ${notRun}` };
      continue;
    }
    const result = await commandCheck(root, check, options);
    results[index] = result;
    if (!result.passed) notRun = "an earlier command failed";
  }
  return results as CheckResult[];
}

export interface Root {
  /** As given: commands run here, relative paths resolve against it. */
  readonly cwd: string;
  /** With every symlink resolved: what an artifact's real path must stay inside. */
  readonly real: string;
}

export async function rootOf(cwd: string): Promise<Root | string> {
  try {
    const real = await realpath(cwd);
    if (!(await stat(real)).isDirectory()) return `the working directory ${cwd} is not a directory`;
    return { cwd, real };
  } catch {
    return `the working directory ${cwd} does not exist`;
  }
}

export type Located =
  | { readonly status: "file"; readonly shown: string; readonly real: string }
  | { readonly status: "missing" | "outside" | "escapes" | "not-a-file" | "not-relative" | "unreadable"; readonly shown: string };

/** Where `path` (relative to the working directory) leads, and whether it counts as an artifact there. */
async function locate(root: Root, path: string): Promise<Located> {
  const shown = clip(stripControlCharacters(path), COMMAND_NAME_MAX_CHARS);
  if (path === "" || path.includes("\0") || isAbsolute(path)) return { status: "not-relative", shown };
  const lexical = relative(root.cwd, resolve(root.cwd, path));
  if (lexical === ".." || lexical.startsWith(`..${sep}`) || isAbsolute(lexical)) return { status: "outside", shown };
  let real: string;
  try {
    real = await realpath(resolve(root.cwd, path));
  } catch (error) {
    const code = error instanceof Error && "code" in error ? error.code : undefined;
    return { status: code === "ENOENT" || code === "ENOTDIR" ? "missing" : "unreadable", shown };
  }
  const inside = root.real.endsWith(sep) ? root.real : root.real + sep;
  if (!real.startsWith(inside)) return { status: real === root.real ? "not-a-file" : "escapes", shown };
  try {
    const info = await stat(real);
    return info.isFile() ? { status: "file", shown, real } : { status: "not-a-file", shown };
  } catch {
    return { status: "unreadable", shown };
  }
}

function whyNot(location: Located): string {
  switch (location.status) {
    case "file":
      return `${location.shown} exists`;
    case "missing":
      return `${location.shown} is missing`;
    case "outside":
      return `${location.shown} is outside the working directory`;
    case "escapes":
      return `${location.shown} leads outside the working directory (through a symlink)`;
    case "not-a-file":
      return `${location.shown} is not a regular file`;
    case "not-relative":
      return `"${location.shown}" is not a path relative to the working directory`;
    case "unreadable":
      return `${location.shown} cannot be read`;
  }
}

/** The first alternative that is a regular file inside the directory, or why none is. */
export async function firstArtifact(root: Root, anyOf: readonly string[]): Promise<Extract<Located, { status: "file" }> | string> {
  if (anyOf.length === 0) return "the check names no artifact";
  const locations = await Promise.all(anyOf.map((path) => locate(root, path)));
  const found = locations.find((location) => location.status === "file");
  if (found?.status === "file") return found;
  const [only] = locations;
  if (only !== undefined && locations.length === 1) return whyNot(only);
  const names = locations.map((location) => location.shown).join(", ");
  const other = locations.filter((location) => location.status !== "missing").map(whyNot);
  return `none of ${names} exists${other.length > 0 ? ` (${other.join("; ")})` : ""}`;
}

async function artifactExists(root: Root, anyOf: readonly string[]): Promise<CheckResult> {
  const found = await firstArtifact(root, anyOf);
  if (typeof found === "string") return { check: "artifact-exists", passed: false, message: found };
  return { check: "artifact-exists", passed: true, message: `${found.shown} exists` };
}

async function checklistComplete(root: Root, anyOf: readonly string[]): Promise<CheckResult> {
  const fail = (message: string): CheckResult => ({ check: "checklist-complete", passed: false, message });
  const found = await firstArtifact(root, anyOf);
  if (typeof found === "string") return fail(found);
  const text = await readChecklist(found.real);
  if (text === "too-large") {
    return fail(`${found.shown} is too large to read as a checklist (at most ${CHECKLIST_MAX_BYTES} bytes)`);
  }
  if (text === undefined) return fail(`${found.shown} cannot be read as a regular file`);
  const list = checklistOf(text);
  if (list.items === 0) return fail(`${found.shown} has no checklist items (lines like "- [ ] a task", ticked "- [x]" when done)`);
  const [first] = list.unticked;
  if (first === undefined) {
    return { check: "checklist-complete", passed: true, message: `${found.shown}: all ${list.items} items ticked` };
  }
  const count = list.unticked.length;
  const quoted = clip(stripControlCharacters(first), QUOTED_ITEM_MAX_CHARS);
  return fail(`${found.shown} has ${count} unticked item${count === 1 ? "" : "s"}; first: "${quoted}"`);
}

/**
 * The file's text, read through one handle opened without following a symlink and without
 * blocking, then checked to be a regular file: the agent may swap the file between the look and
 * the read, and a FIFO put in its place must not hang the claim.
 */
export async function readChecklist(real: string): Promise<string | "too-large" | undefined> {
  let handle;
  try {
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return undefined;
    if (info.size > CHECKLIST_MAX_BYTES) return "too-large";
    const buffer = Buffer.alloc(Math.min(info.size, CHECKLIST_MAX_BYTES) + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > CHECKLIST_MAX_BYTES) return "too-large";
    return buffer.toString("utf8", 0, bytesRead);
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

export interface Checklist {
  /** Task items, ticked or not. */
  readonly items: number;
  /** The unticked items' lines, trimmed, in file order. */
  readonly unticked: readonly string[];
}

// A list item (`-`, `*`, `+`, `1.`, `1)`) at any indentation whose text starts with a task box.
const TASK_ITEM = /^\s*(?:[-*+]|\d{1,9}[.)])\s+\[([ xX])\](?:\s|$)/;
const FENCE = /^\s*(`{3,}|~{3,})/;

/** One checklist item of a Markdown text: its line (1-based), the box's character, and what follows the box. */
export interface ChecklistItem {
  readonly line: number;
  readonly text: string;
  readonly box: string;
  readonly rest: string;
}

/** The checklist items of `text`, in order; those inside a fenced code block are examples, not items. */
export function checklistItems(text: string): ChecklistItem[] {
  const items: ChecklistItem[] = [];
  let fence: string | undefined;
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    const marker = FENCE.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === undefined) fence = marker;
      else if (marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const item = TASK_ITEM.exec(line);
    if (item === null) continue;
    items.push({ line: index + 1, text: line, box: item[1] ?? " ", rest: line.slice(item[0].length).trim() });
  }
  return items;
}

/** The markdown task items of `text`; those inside a fenced code block are examples, not tasks. */
export function checklistOf(text: string): Checklist {
  const items = checklistItems(text);
  return { items: items.length, unticked: items.filter((item) => item.box === " ").map((item) => item.text.trim()) };
}

async function commandCheck(root: Root, check: Extract<GraphCheck, { kind: "command" }>, options: RunChecksOptions): Promise<CheckResult> {
  const name = commandName(check.argv);
  const fail = (message: string): CheckResult => ({ check: "command", passed: false, message: clip(message, COMMAND_MESSAGE_MAX_CHARS) });
  const timeoutMs = Math.min(check.timeoutSeconds * 1000, options.timeoutCapMs ?? Number.POSITIVE_INFINITY);
  let result;
  try {
    result = await runBounded({
      argv: check.argv,
      cwd: root.cwd,
      env: options.env,
      timeoutMs,
      outputCapBytes: COMMAND_OUTPUT_CAP_BYTES,
      keep: "tail",
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  } catch (error) {
    if (error instanceof InvalidCommandError) return fail(`${name} cannot be run: ${error.message}`);
    throw error;
  }
  if (result.error !== undefined) return fail(`${name} could not start: ${result.error}`);
  if (result.exitCode === 0 && !result.timedOut && !result.aborted) {
    return { check: "command", passed: true, message: `${name} passed` };
  }
  const head = `${name} failed (${describeOutcome(result, timeoutMs)})`;
  const streams = (
    [
      ["stdout", result.stdout],
      ["stderr", result.stderr],
    ] as const
  ).filter(([, text]) => outputTail(text, 1, 1) !== "");
  if (streams.length === 0) return fail(head);
  // The message's room after the head, shared by the streams that said something.
  const budget = Math.floor((COMMAND_MESSAGE_MAX_CHARS - head.length - 2) / streams.length) - 10;
  const tails = streams.map(([stream, text]) => `${stream}: ${outputTail(text, OUTPUT_TAIL_LINES, Math.max(budget, 20))}`);
  return fail(`${head}; ${tails.join("; ")}`);
}

/** The command as a person would type it, cleaned and short: `npm run lint`. */
function commandName(argv: readonly string[]): string {
  if (argv.length === 0) return "a command check with an empty argv";
  const words = argv.map((arg) => (arg === "" || /[\s"'\\]/.test(arg) ? JSON.stringify(arg) : arg));
  return clip(stripControlCharacters(words.join(" ")), COMMAND_NAME_MAX_CHARS);
}
