import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { ExitError, NotFoundError, UsageError } from "../../errors.js";
import type { Runtime } from "../../daemon/runtime.js";
import type { SessionRecord, SessionStatus } from "../../sessions/record.js";
import { listSessionRecords, listSessionSummaries } from "../../sessions/listing.js";
import { RefError, formatWorkItemRef, parseRefInput } from "../../workitem/index.js";
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
