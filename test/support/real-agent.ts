import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { TestProject } from "./project.js";
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
