import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { ExitError, NotFoundError, UsageError, messageOf } from "../../errors.js";
import type { Runtime } from "../../daemon/runtime.js";
import { isLive } from "../../sessions/record.js";
import type { SessionRecord, SessionStatus } from "../../sessions/record.js";
import { listSessionRecords, listSessionSummaries } from "../../sessions/listing.js";
import { WorkItemNotFoundError } from "../../trackers/tracker.js";
import type { WorkItemState } from "../../trackers/tracker.js";
import { RefError, formatWorkItemRef, parseRefInput, parseWorkItemRef } from "../../workitem/index.js";
import { openProject } from "../context.js";
import type { GlobalOptions, Project } from "../context.js";
import { formatTable, stderr, stdout } from "../output.js";

export interface SessionsListOptions {
  readonly status?: SessionStatus | "live";
  readonly json: boolean;
}
export interface SessionsAttachOptions {
  readonly workItem: string;
  readonly readOnly: boolean;
}
export interface SessionsCloseOptions {
  readonly workItem: string;
  readonly json: boolean;
}

/** Loaded only by the commands that act on sessions: listing must not pay for the dispatcher. */
async function runtimeOf(project: Project): Promise<Runtime> {
  const { composeRuntime } = await import("../../daemon/runtime.js");
  return composeRuntime({
    config: project.config,
    paths: project.paths,
    baseDir: project.loaded.baseDir,
    configFile: project.loaded.source.path ?? undefined,
    events: project.events,
  });
}

/** A work item ref as the user typed it (`#7`, `owner/repo#7`, a URL), in canonical form. */
export function canonicalRef(text: string, project: Project): string {
  try {
    return formatWorkItemRef(parseRefInput(text, { defaultLocalProject: project.config.integrations.local.project }).ref);
  } catch (error) {
    if (error instanceof RefError) throw new UsageError(error.message);
    throw error;
  }
}

export async function runSessionsList(globals: GlobalOptions, options: SessionsListOptions): Promise<void> {
  const project = await openProject(globals, "sessions");
  const listing = { status: options.status, cache: join(project.paths.root, "cache", "sessions-list.json") };
  if (options.json) {
    const { records, problems } = listSessionRecords(project.paths.registryDir, listing);
    for (const problem of problems) stderr.warn(`${problem.file}: ${problem.message}`);
    stdout.json({ sessions: records, problems });
    return;
  }
  const { summaries, problems } = listSessionSummaries(project.paths.registryDir, listing);
  for (const problem of problems) stderr.warn(`${problem.file}: ${problem.message}`);
  if (summaries.length === 0) {
    stdout.line(options.status ? `no ${options.status} sessions` : "no sessions yet");
    return;
  }
  stdout.line(
    formatTable(
      ["work item", "status", "harness", "tmux", "last event"],
      summaries.map((summary) => [summary.ref, summary.status, summary.harness, summary.tmuxTarget, summary.lastEventAt]),
    ),
  );
}

function recordOrFail(runtime: Runtime, ref: string): SessionRecord {
  const record = runtime.registry.get(ref);
  if (!record) throw new NotFoundError(`no session for ${ref}; see \`the-loop sessions list\``);
  return record;
}

export async function runSessionsAttach(globals: GlobalOptions, options: SessionsAttachOptions): Promise<void> {
  const project = await openProject(globals, "sessions");
  const runtime = await runtimeOf(project);
  const ref = canonicalRef(options.workItem, project);
  const record = recordOrFail(runtime, ref);
  if ((await runtime.runner.probe(record.tmuxTarget)) === "absent") {
    throw new NotFoundError(`the tmux session ${record.tmuxTarget} of ${ref} no longer exists (status ${record.status})`);
  }
  if (!process.stdin.isTTY) throw new UsageError("sessions attach needs a terminal (stdin is not a TTY)");
  const [binary, ...args] = runtime.runner.attachArgv(record.tmuxTarget, options.readOnly);
  const result = spawnSync(binary ?? "tmux", args, { stdio: "inherit" });
  if (result.error) throw new ExitError(`cannot run tmux: ${result.error.message}`);
  if (result.status !== 0) throw new ExitError(`tmux attach exited with ${result.status ?? result.signal}`);
}

export async function runSessionsClose(globals: GlobalOptions, options: SessionsCloseOptions): Promise<void> {
  const project = await openProject(globals, "sessions");
  const runtime = await runtimeOf(project);
  const ref = canonicalRef(options.workItem, project);
  const { closeSession } = await import("../../sessions/close.js");
  const closed = await closeSession(runtime.closeOptions, ref, "cli");
  if (!closed) throw new NotFoundError(`${ref} has no live session; see \`the-loop sessions list\``);
  if (options.json) {
    stdout.json({ closed: ref, tmuxTarget: closed.tmuxTarget });
    return;
  }
  stdout.line(`closed the session of ${ref} (${closed.tmuxTarget})`);
}

export interface SessionsLinkPrOptions {
  /** Defaults to THE_LOOP_WORK_ITEM, which every session has. */
  readonly workItem?: string;
  readonly pullRequest: string;
  readonly json: boolean;
}

/**
 * `--pull-request` as typed: a bare number (or `#N`) names an item of the work item's own
 * repository — or, for a local work item, of its local project — anything else is a full ref.
 */
export function pullRequestRef(text: string, workItemRef: string, project: Project): string {
  const bare = /^#?([0-9]+)$/.exec(text.trim());
  if (bare === null) return canonicalRef(text, project);
  // The canonical ref up to its `#`: the tracker, host and repository (or local project).
  const repository = formatWorkItemRef(parseWorkItemRef(workItemRef)).replace(/#[0-9]+$/, "");
  try {
    // Parsed, not assembled, so `0` or a number past the tracker's range is a malformed ref (exit 2), not an item to look up.
    return formatWorkItemRef(parseWorkItemRef(`${repository}#${bare[1] ?? ""}`));
  } catch (error) {
    if (error instanceof RefError) throw new UsageError(error.message);
    throw error;
  }
}

/** The host of a GitHub ref; undefined for any other tracker's. */
function hostOfGitHub(ref: string): string | undefined {
  const parsed = parseWorkItemRef(ref);
  return parsed.tracker === "github" ? parsed.host : undefined;
}

/** The item as its tracker knows it; a failure to ask is an error of its own, never a silent bind. */
async function trackedItem(runtime: Runtime, ref: string): Promise<WorkItemState> {
  try {
    return await runtime.trackers.forRef(ref).getItem(parseWorkItemRef(ref));
  } catch (error) {
    if (error instanceof WorkItemNotFoundError) throw new NotFoundError(`${error.message}; nothing was bound`);
    throw new ExitError(`could not check ${ref} on its tracker: ${messageOf(error)}; nothing was bound`);
  }
}

/**
 * Binds a pull request to a work item explicitly, so the PR's events reach the work item's
 * session whatever they name (an explicit binding wins over every inference). The local tracker
 * has no pull requests, so there any existing item may stand for one.
 */
export async function runSessionsLinkPr(globals: GlobalOptions, options: SessionsLinkPrOptions): Promise<void> {
  const project = await openProject(globals, "sessions");
  const given = options.workItem ?? process.env.THE_LOOP_WORK_ITEM;
  if (!given) {
    throw new UsageError("which work item? pass --work-item REF (inside a session, THE_LOOP_WORK_ITEM names it)");
  }
  const ref = canonicalRef(given, project);
  const pullRequest = pullRequestRef(options.pullRequest, ref, project);
  if (pullRequest === ref) throw new UsageError(`${ref} cannot be bound to itself`);
  const [itemHost, pullRequestHost] = [hostOfGitHub(ref), hostOfGitHub(pullRequest)];
  // One the-loop serves one GitHub host, so a PR on another would never bring an event here.
  if (itemHost !== undefined && pullRequestHost !== undefined && itemHost !== pullRequestHost) {
    throw new UsageError(
      `${pullRequest} is on ${pullRequestHost}, but ${ref} is on ${itemHost}: a pull request can only be bound to a work item of its own host`,
    );
  }

  const runtime = await runtimeOf(project);
  const workItem = (await trackedItem(runtime, ref)).item;
  const target = await trackedItem(runtime, pullRequest);
  if (target.item.tracker !== "local" && target.item.kind !== "pull_request") {
    throw new UsageError(`${pullRequest} is an issue, not a pull request`);
  }

  const now = new Date();
  const previous = runtime.links.get(pullRequest);
  const changed = await runtime.links.bind(pullRequest, workItem, "explicit", now);
  const linkedAt = now.toISOString();
  const record = await runtime.registry.update(ref, (current) => {
    if (!isLive(current)) return undefined;
    const listed = current.pullRequests ?? [];
    if (listed.some((link) => link.ref === pullRequest && link.source === "explicit")) return undefined;
    return {
      ...current,
      pullRequests: [...listed.filter((link) => link.ref !== pullRequest), { ref: pullRequest, source: "explicit", linkedAt }],
    };
  });
  // The PR's events no longer reach the item it was bound to before.
  if (previous !== undefined && previous.workItem.ref !== ref) {
    await runtime.registry.update(previous.workItem.ref, (current) =>
      current.pullRequests?.some((link) => link.ref === pullRequest)
        ? { ...current, pullRequests: current.pullRequests.filter((link) => link.ref !== pullRequest) }
        : undefined,
    );
  }
  if (changed) project.events.emit("session.pr_linked", { work_item: ref, pull_request: pullRequest, linked_by: "explicit" });

  const session = record !== undefined && isLive(record) ? record.tmuxTarget : undefined;
  if (options.json) {
    stdout.json({ workItem: ref, pullRequest, source: "explicit", ...(session ? { session } : {}) });
    return;
  }
  const bound = changed ? `bound ${pullRequest} to ${ref}` : `${pullRequest} was already bound to ${ref}`;
  stdout.line(
    session
      ? `${bound}: its events reach the session ${session}`
      : `${bound}: its events go to the session of ${ref} once it has one`,
  );
}
