import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, beforeAll } from "vitest";
import { jsonOf } from "./cli.js";
import type { TestProject } from "./project.js";
import type { RefusingProxy } from "./refusing-proxy.js";
import { waitFor } from "./wait.js";

const run = promisify(execFile);

/**
 * What the real-agent tests share: the pids of the harnesses in a project's live panes, what a
 * pane shows, and an end that waits for them. A real agent CLI writes into its home until it has
 * exited, so a scratch home may only go after it.
 */

/** What the pane of session `target` shows now ("" when it is gone). */
export async function screenOf(project: TestProject, target: string): Promise<string> {
  const { stdout } = await run("tmux", ["-L", project.socketName, "capture-pane", "-p", "-t", `=${target}:`]).catch(() => ({ stdout: "" }));
  return stdout;
}

/** The pid of each live pane's program on the tmux server `socketName` (all panes, or `target`'s). */
export async function livePanePids(socketName: string, target?: string): Promise<number[]> {
  const scope = target === undefined ? ["-a"] : ["-t", `=${target}:`];
  const { stdout } = await run("tmux", ["-L", socketName, "list-panes", ...scope, "-F", "#{pane_dead} #{pane_pid}"]).catch(() => ({ stdout: "" }));
  return stdout
    .split("\n")
    .filter((line) => line.startsWith("0 "))
    .map((line) => Number(line.slice(2)))
    .filter((pid) => Number.isInteger(pid) && pid > 0);
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits, bounded, for a process to end after its tmux server went; then kills what is left of its group. */
export async function untilGone(pid: number, timeoutMs = 10_000): Promise<void> {
  await waitFor(`harness ${pid} to exit`, () => !alive(pid), { timeoutMs }).catch(() => {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
  });
}

export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is gone already.
  }
}

/** SIGTERM to each pane's process group, then SIGKILL to what is left after a bounded wait. */
export async function endHarnesses(pids: readonly number[]): Promise<void> {
  for (const pid of pids) signalGroup(pid, "SIGTERM");
  await Promise.all(pids.map((pid) => waitFor(`harness ${pid} to exit`, () => !alive(pid), { timeoutMs: 10_000 }).catch(() => signalGroup(pid, "SIGKILL"))));
}

/**
 * The project's cleanup, then each harness it ran gone. `terminateFirst`: each harness is ended
 * by its process group before, as the-loop's own close does — for a CLI that outlives the tmux
 * server going away under it (Gemini CLI's wrapper ignores SIGHUP).
 */
export async function endAgentProject(project: TestProject, options: { readonly terminateFirst?: boolean } = {}): Promise<void> {
  const harnesses = await livePanePids(project.socketName);
  if (options.terminateFirst === true) await endHarnesses(harnesses);
  await project.cleanup();
  await Promise.all(harnesses.map((pid) => untilGone(pid)));
}

/** Whether any process of the group `pgid` is still there. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A model request as a timeout's message shows it: the kind, the tools it offers (when given), its last words. */
export function requestLine(request: { readonly agentic: boolean; readonly lastUserText: string }, tools?: readonly string[], tail = 160): string {
  return `${request.agentic ? "agentic" : "side"}${tools === undefined ? "" : ` [${tools.join(" ")}]`}: ${request.lastUserText.slice(-tail)}`;
}

export interface SessionWaitOptions {
  readonly timeoutMs: number;
  /** The model requests so far, a line each (requestLine), for a timeout's message. */
  readonly requests: () => readonly string[];
  /** How many of the last events a timeout's message shows (12). */
  readonly events?: number;
  /** Leave the poller's events out of them. */
  readonly withoutPoll?: boolean;
}

/** Waits as waitFor does; a timeout says what the session's pane, the event log and the model saw. */
export async function waitInSession<T>(p: TestProject, what: string, probe: () => Promise<T | undefined>, options: SessionWaitOptions): Promise<T> {
  try {
    return await waitFor(what, probe, { timeoutMs: options.timeoutMs });
  } catch (error) {
    const [session] = jsonOf<{ sessions: { tmuxTarget: string }[] }>(await p.cli(["sessions", "list", "--json"])).sessions;
    const screen = session === undefined ? "(no session)" : await screenOf(p, session.tmuxTarget);
    const events = (await p.events())
      .filter((record) => options.withoutPoll !== true || !String(record.event).startsWith("poll."))
      .slice(-(options.events ?? 12))
      .map((record) => JSON.stringify(record));
    throw new Error(`${(error as Error).message}\nscreen:\n${screen}\nevents:\n${events.join("\n")}\nmodel requests:\n${options.requests().join("\n")}`, {
      cause: error,
    });
  }
}

/** What a real-agent test file holds: the pinned CLI, and what its current test started. */
export interface AgentSuite<S extends { close(): Promise<void> }> {
  /** The pinned CLI's path, once installed. */
  binary: string;
  project: TestProject | undefined;
  /** The scripted model API. */
  stub: S | undefined;
  proxy: RefusingProxy | undefined;
}

/**
 * The hooks every real-agent test file needs: the pinned CLI installed once (`install`, within
 * `installTimeoutMs`), and after each test its project ended first — the agent writes into its
 * home until it has exited; `terminateFirst` for one that outlives its tmux server — then the
 * model stub and the proxy closed.
 */
export function agentSuite<S extends { close(): Promise<void> }>(
  install: () => Promise<string>,
  options: { readonly installTimeoutMs: number; readonly terminateFirst?: boolean },
): AgentSuite<S> {
  const suite: AgentSuite<S> = { binary: "", project: undefined, stub: undefined, proxy: undefined };
  beforeAll(async () => {
    suite.binary = await install();
  }, options.installTimeoutMs);
  afterEach(async () => {
    if (suite.project !== undefined) await endAgentProject(suite.project, options.terminateFirst === true ? { terminateFirst: true } : {});
    suite.project = undefined;
    await suite.stub?.close();
    suite.stub = undefined;
    await suite.proxy?.close();
    suite.proxy = undefined;
  });
  return suite;
}
