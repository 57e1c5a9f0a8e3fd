import { readFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { UsageError, messageOf } from "../../errors.js";
import type { ItemState } from "../../trackers/index.js";
import { LOCAL_LIMITS, LOGIN_PATTERN, checkActor, openLocalTracker } from "../../trackers/local/index.js";
import type { LocalItem, LocalTracker } from "../../trackers/local/index.js";
import type { TrackerComment } from "../../trackers/tracker.js";
import { RefError, formatWorkItemRef, parseRefInput } from "../../workitem/index.js";
import { SELF_COMMENT_ATTRIBUTION, SELF_COMMENT_MARKER, isSelfAuthored } from "../../workitem/marker.js";
import type { LocalRef } from "../../workitem/index.js";
import { openProject } from "../context.js";
import type { GlobalOptions, Project } from "../context.js";
import { formatTable, stderr, stdout } from "../output.js";
import { refuseInsideSession } from "../session-guard.js";

export interface ItemActOptions {
  readonly as?: string;
  readonly json: boolean;
}
export interface ItemNewOptions extends ItemActOptions {
  readonly body?: string;
  readonly label: string[];
  readonly project?: string;
}
export interface ItemCheckOptions extends ItemActOptions {
  readonly name: string;
  readonly failed: boolean;
  readonly passed: boolean;
  readonly log?: string;
  readonly url?: string;
  readonly commit?: string;
}
export interface ItemLabelOptions extends ItemActOptions {
  readonly add: string[];
  readonly remove: string[];
}
export interface ItemListOptions {
  readonly state: ItemState | "all";
  readonly label: string[];
  readonly project?: string;
  readonly json: boolean;
}
export interface ItemShowOptions {
  readonly json: boolean;
}
export interface ItemRepairOptions {
  readonly project?: string;
  readonly json: boolean;
}

interface ItemCommandContext {
  readonly tracker: LocalTracker;
  /** What `#7` and `7` refer to: integrations.local.project. */
  readonly defaultProject: string;
  readonly project: Project;
}

async function openItemTracker(globals: GlobalOptions): Promise<ItemCommandContext> {
  const project = await openProject(globals);
  return {
    tracker: openLocalTracker({ trackerDir: project.paths.trackerDir, events: project.events, database: project.stores?.backend.database }),
    defaultProject: project.config.integrations.local.project,
    project,
  };
}

/**
 * After a change the daemon acts on, one line on stderr saying what happens next: a running
 * daemon reads it at once (it watches the journals), otherwise nothing happens until one runs.
 * Only reads (the config and the poller's lock); says nothing when it cannot tell.
 */
async function sayWhatHappensNext(project: Project, ref: LocalRef): Promise<void> {
  const { polling } = project.config;
  const name = formatWorkItemRef(ref);
  let next: string;
  if (!polling.enabled) {
    next = "the poller is off (polling.enabled: false), so no daemon reads local items; turn it on and run `the-loop start`";
  } else if (!polling.sources.some((source) => source.provider === "local" && (source.projects?.includes(ref.project) ?? true))) {
    next = `no poll source reads the local project "${ref.project}" (polling.sources), so no daemon sees this change`;
  } else {
    try {
      const { readLock } = await import("../../daemon/pidfile.js");
      next =
        (await readLock(project.paths.pollPidfile)) === undefined
          ? "no daemon is running: nothing happens until `the-loop start`"
          : `the daemon picks this up now; follow it with \`the-loop sessions list\` or \`the-loop why ${name}\``;
    } catch {
      return;
    }
  }
  stderr.line(stderr.paint("dim", next));
}

function parseLocalRef(text: string, defaultProject: string): LocalRef {
  let ref;
  try {
    ref = parseRefInput(text, { defaultLocalProject: defaultProject }).ref;
  } catch (error) {
    if (error instanceof RefError) throw new UsageError(error.message);
    throw error;
  }
  if (ref.tracker !== "local") {
    throw new UsageError(
      `${formatWorkItemRef(ref)} is a GitHub work item; the item commands act on the local tracker (local:project#N, or #N in "${defaultProject}")`,
    );
  }
  return ref;
}

function osUserName(): string | undefined {
  try {
    const name = userInfo().username;
    if (name) return name;
  } catch {
    // No passwd entry for this uid (common in containers): fall back to the environment. On the local
    // tracker shell access is the authority (control.md), so $USER gives no one more than `--as` does.
  }
  return process.env.USER || undefined;
}

/** Who acts: `--as` when given (a local-testing aid), otherwise the OS user. */
function actorOf(as: string | undefined): string {
  if (as !== undefined) return checkActor(as);
  const name = osUserName();
  if (name === undefined) throw new UsageError("cannot tell who you are (no OS user name and no $USER); pass --as LOGIN");
  if (!LOGIN_PATTERN.test(name)) {
    throw new UsageError(`your user name "${name}" cannot be used as a login; pass --as LOGIN`);
  }
  return name;
}

const STDIN_BYTE_LIMIT = LOCAL_LIMITS.bodyMax * 4;

async function readStdinText(): Promise<string> {
  if (process.stdin.isTTY) stderr.line("reading the comment from stdin; end it with Ctrl-D");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : (chunk as Buffer);
    size += bytes.length;
    if (size > STDIN_BYTE_LIMIT) {
      throw new UsageError(`the comment on stdin is too long; at most ${LOCAL_LIMITS.bodyMax} characters are allowed`);
    }
    chunks.push(bytes);
  }
  // The newline that `echo` or a heredoc ends the text with is not part of the comment.
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

// ---- output shapes -------------------------------------------------------------------------

function commentJson(comment: TrackerComment): Record<string, unknown> {
  return { id: comment.id, author: comment.author, body: comment.body, createdAt: comment.createdAt, url: comment.url };
}

function itemSummaryJson(item: LocalItem): Record<string, unknown> {
  return {
    ref: item.item.ref,
    project: item.item.repository,
    number: item.item.number,
    kind: item.item.kind,
    id: item.item.id,
    url: item.item.url,
    title: item.title,
    body: item.body,
    author: item.author,
    state: item.state,
    labels: item.labels,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    closedAt: item.closedAt,
    commentCount: item.comments.length,
  };
}

function itemJson(item: LocalItem): Record<string, unknown> {
  return { ...itemSummaryJson(item), comments: item.comments.map(commentJson) };
}

/** `2025-03-01T10:04:05.123Z` → `2025-03-01 10:04` (UTC), for tables. */
function shortTime(iso: string): string {
  return iso.slice(0, 16).replace("T", " ");
}

function wholeSeconds(iso: string): string {
  return iso.replace(/\.\d+Z$/, "Z");
}

function stateText(state: ItemState): string {
  return stdout.paint(state === "open" ? "green" : "red", state);
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => (line ? `    ${line}` : ""))
    .join("\n");
}

/** The human view of one item, as `item show` prints it. */
export function printItem(item: LocalItem): void {
  stdout.line(`${stdout.paint("bold", item.item.ref)}  ${item.title}`);
  const rows: [string, string][] = [
    ["state", stateText(item.state)],
    ["author", item.author ?? "(unknown)"],
    ["labels", item.labels.length > 0 ? item.labels.join(", ") : "(none)"],
    ["created", wholeSeconds(item.createdAt)],
    ["updated", wholeSeconds(item.updatedAt)],
  ];
  if (item.closedAt) rows.push(["closed", wholeSeconds(item.closedAt)]);
  rows.push(["url", item.item.url]);
  for (const [name, value] of rows) stdout.line(`  ${`${name}:`.padEnd(9)}${value}`);
  stdout.line();
  stdout.line(item.body.trim() ? indent(item.body.trimEnd()) : stdout.paint("dim", "    (no description)"));
  stdout.line();
  if (item.comments.length === 0) {
    stdout.line(stdout.paint("dim", "no comments"));
    return;
  }
  stdout.line(`${item.comments.length} comment${item.comments.length === 1 ? "" : "s"}:`);
  for (const comment of item.comments) {
    const readable = readableComment(comment.body);
    const own = readable.own ? `  ${stdout.paint("cyan", "the-loop's own")}` : "";
    stdout.line();
    stdout.line(`  ${stdout.paint("bold", comment.author ?? "(unknown)")}  ${wholeSeconds(comment.createdAt)}  ${stdout.paint("dim", comment.id)}${own}`);
    stdout.line(indent(readable.text));
  }
}

/**
 * A comment as a person reads it: the-loop's own loses its attribution line and its machine
 * marker (the header says whose it is instead); `--json` keeps the text as written.
 */
export function readableComment(body: string): { readonly text: string; readonly own: boolean } {
  if (!isSelfAuthored(body)) return { text: body.trimEnd(), own: false };
  const lines = body.split("\n").filter((line) => line.trim() !== SELF_COMMENT_ATTRIBUTION);
  const text = lines.join("\n").split(SELF_COMMENT_MARKER).join("").trimEnd();
  return { text, own: true };
}

// ---- commands ------------------------------------------------------------------------------

export async function runItemNew(globals: GlobalOptions, title: string, options: ItemNewOptions): Promise<void> {
  const actor = actorOf(options.as);
  const { tracker, defaultProject, project } = await openItemTracker(globals);
  const item = await tracker.openItem({
    project: options.project ?? defaultProject,
    title,
    body: options.body,
    labels: options.label,
    actor,
  });
  if (options.json) {
    stdout.json(itemJson(item));
    return;
  }
  stdout.line(`created ${item.item.ref}: ${item.title}`);
  await sayWhatHappensNext(project, { tracker: "local", project: item.item.repository, number: item.item.number });
}

export async function runItemComment(globals: GlobalOptions, refText: string, text: string, options: ItemActOptions): Promise<void> {
  refuseInsideSession("item comment");
  const actor = actorOf(options.as);
  const { tracker, defaultProject, project } = await openItemTracker(globals);
  const ref = parseLocalRef(refText, defaultProject);
  const body = text === "-" ? await readStdinText() : text;
  const comment = await tracker.addComment(ref, body, actor);
  if (options.json) {
    stdout.json({ workItem: formatWorkItemRef(ref), ...commentJson(comment) });
    return;
  }
  stdout.line(`commented on ${formatWorkItemRef(ref)} (${comment.id})`);
  await sayWhatHappensNext(project, ref);
}

export async function runItemCheck(globals: GlobalOptions, refText: string, options: ItemCheckOptions): Promise<void> {
  refuseInsideSession("item check");
  if (options.failed === options.passed) throw new UsageError("say how the check ended: --failed or --passed");
  if (options.passed && options.log !== undefined) throw new UsageError("--log goes with --failed: a passing check's log is told to no one");
  const actor = actorOf(options.as);
  const { tracker, defaultProject, project } = await openItemTracker(globals);
  const ref = parseLocalRef(refText, defaultProject);
  let log: string | undefined;
  if (options.log === "-") log = await readStdinText();
  else if (options.log !== undefined) {
    try {
      log = await readFile(options.log, "utf8");
    } catch (error) {
      throw new UsageError(`cannot read the log ${options.log}: ${messageOf(error)}; name a readable file, or '-' for stdin`);
    }
  }
  const conclusion = options.failed ? "failure" : "success";
  const check = {
    name: options.name,
    conclusion,
    ...(options.url !== undefined ? { url: options.url } : {}),
    ...(options.commit !== undefined ? { commit: options.commit } : {}),
    ...(log !== undefined ? { log } : {}),
  } as const;
  await tracker.recordCheck(ref, check, actor);
  const name = formatWorkItemRef(ref);
  if (options.json) {
    stdout.json({ workItem: name, check: options.name.trim(), conclusion, log: log !== undefined });
    return;
  }
  stdout.line(`recorded the check "${options.name.trim()}" on ${name}: ${options.failed ? "failed" : "passed"}`);
  if (options.failed) await sayWhatHappensNext(project, ref);
}

export async function runItemLabel(globals: GlobalOptions, refText: string, options: ItemLabelOptions): Promise<void> {
  if (options.add.length === 0 && options.remove.length === 0) {
    throw new UsageError("say which labels to change: --add LABEL and/or --remove LABEL");
  }
  const actor = actorOf(options.as);
  const { tracker, defaultProject, project } = await openItemTracker(globals);
  const ref = parseLocalRef(refText, defaultProject);
  const result = await tracker.changeLabels(ref, { add: options.add, remove: options.remove }, actor);
  const name = formatWorkItemRef(ref);
  for (const label of result.alreadyPresent) stderr.line(`${name} already has the label "${label}"; nothing to add`);
  for (const label of result.absent) stderr.line(`${name} does not have the label "${label}"; nothing to remove`);
  if (options.json) {
    stdout.json(itemJson(result.item));
    return;
  }
  for (const label of result.removed) stdout.line(`removed the label "${label}" from ${name}`);
  for (const label of result.added) stdout.line(`added the label "${label}" to ${name}`);
  if (result.added.length + result.removed.length > 0) await sayWhatHappensNext(project, ref);
}

export async function runItemSetState(globals: GlobalOptions, refText: string, state: ItemState, options: ItemActOptions): Promise<void> {
  const actor = actorOf(options.as);
  const { tracker, defaultProject, project } = await openItemTracker(globals);
  const ref = parseLocalRef(refText, defaultProject);
  const result = await tracker.setState(ref, state, actor);
  const name = formatWorkItemRef(ref);
  if (!result.changed) stderr.line(`${name} is already ${state === "closed" ? "closed" : "open"}; nothing changed`);
  if (options.json) {
    stdout.json(itemJson(result.item));
    return;
  }
  if (!result.changed) return;
  stdout.line(`${state === "closed" ? "closed" : "reopened"} ${name}`);
  await sayWhatHappensNext(project, ref);
}

export async function runItemList(globals: GlobalOptions, options: ItemListOptions): Promise<void> {
  const { tracker } = await openItemTracker(globals);
  const items = await tracker.listItems({ project: options.project, state: options.state, labels: options.label });
  if (options.json) {
    stdout.json(items.map(itemSummaryJson));
    return;
  }
  if (items.length === 0) {
    const which = options.state === "all" ? "" : `${options.state} `;
    stdout.line(`no ${which}items${options.label.length > 0 || options.project ? " match" : ""}`);
    return;
  }
  const rows = items.map((item) => [item.item.ref, item.state, item.labels.join(", "), String(item.comments.length), shortTime(item.updatedAt), item.title]);
  stdout.line(formatTable(["REF", "STATE", "LABELS", "COMMENTS", "UPDATED", "TITLE"], rows));
}

export async function runItemShow(globals: GlobalOptions, refText: string, options: ItemShowOptions): Promise<void> {
  const { tracker, defaultProject } = await openItemTracker(globals);
  const item = await tracker.getItemWithComments(parseLocalRef(refText, defaultProject));
  if (options.json) stdout.json(itemJson(item));
  else printItem(item);
}

function lines(count: number): string {
  return `${count} line${count === 1 ? "" : "s"}`;
}

export async function runItemRepair(globals: GlobalOptions, options: ItemRepairOptions): Promise<void> {
  const { tracker, defaultProject } = await openItemTracker(globals);
  const report = await tracker.repair(options.project ?? defaultProject);
  if (options.json) {
    stdout.json({ ...report, aside: report.aside ?? null });
    return;
  }
  if (report.aside === undefined) {
    stdout.line(`${report.journal}: ${report.kept === 1 ? "its 1 line is" : `all ${report.kept} lines are`} readable; nothing to repair`);
    return;
  }
  stdout.line(`kept ${lines(report.kept)} of ${report.journal}; moved ${report.moved.length} aside to ${report.aside}`);
  for (const { reason } of report.moved) stdout.line(`  ${reason}`);
}
