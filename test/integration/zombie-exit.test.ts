import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { zombieExit } from "../../src/harness/zombie-exit.js";
import { waitFor } from "../support/wait.js";

/** zombieExit against the kernel's own /proc: a process ended and not yet reaped, as a dead pane's is while tmux lags. */
describe("zombieExit on a real process", () => {
  it.runIf(process.platform === "linux")("reads an unreaped process's status, and nothing for another parent", async () => {
    // A shell whose child exits while the shell sleeps, never reaping it: the child stays a zombie.
    // The child exits only once its parent is `sleep` (or gone): a shell not yet replaced may reap it first.
    const orphan = `sh -c 'while [ "$(cat /proc/$PPID/comm 2>/dev/null || echo sleep)" != sleep ]; do :; done; exit 7'`;
    const child = spawn("sh", ["-c", `${orphan} & echo $!; exec sleep 30`], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      const grandchild = await new Promise<number>((resolve) => child.stdout.once("data", (data: Buffer) => resolve(Number(String(data).trim()))));
      const exit = await waitFor("the child's exit in its unreaped record", () => zombieExit(grandchild, child.pid ?? 0));
      expect(exit).toEqual({ status: 7 });
      expect(await zombieExit(grandchild, process.pid)).toBeUndefined();
    } finally {
      child.kill("SIGKILL");
    }
  });
});
