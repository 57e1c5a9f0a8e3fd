import { execFile } from "node:child_process";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

/**
 * A test's own tmux server, ended: free of the test runner, so the bench's drivers share it with
 * the tests' projects (project.ts, fleet-chaos.ts).
 */

const run = promisify(execFile);

/** Where tmux keeps this user's server sockets. */
export function tmuxSocketDir(): string {
  return join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid?.() ?? 0}`);
}

/** Kills the server on `socketName` (its sessions and their processes with it) and removes the socket file tmux leaves behind. */
export async function endTmuxServer(socketName: string): Promise<void> {
  // No server left (its last session ended, or it never started): nothing to end.
  await run("tmux", ["-L", socketName, "kill-server"]).catch(() => undefined);
  await rm(join(tmuxSocketDir(), socketName), { force: true });
}
