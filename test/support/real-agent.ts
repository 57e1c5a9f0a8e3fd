import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { TestProject } from "./project.js";
import { waitFor } from "./wait.js";

const run = promisify(execFile);

/**
 * What the real-agent tests share: the pids of the harnesses in a project's live panes, and an
 * end that waits for them. A real agent CLI writes into its home until it has exited, so a
 * scratch home may only go after it.
 */

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

/** The project's cleanup, then each harness it ran gone. */
export async function endAgentProject(project: TestProject): Promise<void> {
  const harnesses = await livePanePids(project.socketName);
  await project.cleanup();
  await Promise.all(harnesses.map((pid) => untilGone(pid)));
}
