import { spawn } from "node:child_process";
import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { zombieExit } from "../../src/harness/zombie-exit.js";

/** zombieExit against the kernel's own /proc: a process ended and not yet reaped, as a dead pane's is while tmux lags. */
describe("zombieExit on a real process", () => {
  it.runIf(process.platform === "linux")("reads an unreaped process's status, and nothing for another parent", async () => {
    // A shell whose child exits while the shell sleeps, never reaping it: the child stays a zombie.
    const child = spawn("sh", ["-c", "sh -c 'exit 7' & echo $!; exec sleep 30"], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      const grandchild = await new Promise<number>((resolve) => child.stdout.once("data", (data: Buffer) => resolve(Number(String(data).trim()))));
      let exit;
      for (let look = 0; look < 250 && exit === undefined; look += 1) {
        exit = await zombieExit(grandchild, child.pid ?? 0);
        if (exit === undefined) await delay(20);
      }
      expect(exit).toEqual({ status: 7 });
      expect(await zombieExit(grandchild, process.pid)).toBeUndefined();
    } finally {
      child.kill("SIGKILL");
    }
  });
});
