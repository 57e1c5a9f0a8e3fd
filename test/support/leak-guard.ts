import { execFile } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, inject } from "vitest";
import { RUN_KEY, RUN_MARKER, WORKER_MARKER, describeProcesses, endProcesses, markedProcesses } from "./processes.js";
import { tmuxSocketDir } from "./tmux-server.js";

/**
 * Every test stops what it starts. Loaded into every test file (vitest.config.ts `setupFiles`),
 * so its hooks run after the file's own: a process a test started through the CLI that is still
 * running once the test's teardown is done — a daemon whose `stop` never came, or which outlived
 * it — fails that test, and is killed so it cannot call a closed fake GitHub or write into a
 * removed temporary folder while later tests run. A tmux server still running on one of this
 * file's test sockets when the file is done fails it likewise.
 */

/** `the-loop stop` returns once the daemon's locks are free; its process ends a moment after. */
const EXIT_GRACE_MS = 1_000;

const run = promisify(execFile);

afterEach(async () => {
  const running = markedProcesses({ [RUN_MARKER]: inject(RUN_KEY), [WORKER_MARKER]: String(process.pid) });
  const killed = await endProcesses(running, EXIT_GRACE_MS);
  if (killed.length === 0) return;
  throw new Error(
    `this test left ${killed.length} process(es) it started running after its teardown (killed now):\n${describeProcesses(killed)}\n` +
      "Stop what the test starts in its afterEach: a TestProject's cleanup() stops its daemon and its tmux server.",
  );
});

afterAll(async () => {
  const live: string[] = [];
  for (const socketName of ownSockets()) {
    const path = join(tmuxSocketDir(), socketName);
    if (await listening(path)) {
      live.push(socketName);
      await run("tmux", ["-L", socketName, "kill-server"]).catch(() => undefined);
    }
    // A server's socket file outlives it; a dead one's is litter, nothing more.
    rmSync(path, { force: true });
  }
  if (live.length > 0) {
    throw new Error(`this file left tmux server(s) running on ${live.join(", ")} (killed now): kill the server of every test socket in the teardown`);
  }
});

/** This worker's test sockets: `loop-test-[kind-]<pid>[-suffix]`, as the tests name them. */
function ownSockets(): string[] {
  const own = new RegExp(`^loop-test-(?:[a-z]+-)*${process.pid}(?:-|$)`);
  try {
    return readdirSync(tmuxSocketDir()).filter((name) => own.test(name));
  } catch {
    return [];
  }
}

/** Whether a server accepts connections on the unix socket at `path`. */
function listening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
