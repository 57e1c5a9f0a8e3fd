import { existsSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RUN_ID_ENV, runBounded } from "../../src/subprocess/index.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

/**
 * What a command started is gone when the command times out or finishes, also when it left the
 * command's process group (`setsid`, which Node's `detached` calls) or lost its parent: real
 * processes, Linux (/proc) only.
 */

const linux = existsSync("/proc/self/stat");
const started: number[] = [];

afterEach(() => {
  // A process that survived (the failure this file tests for) is not left behind.
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone, as it should be.
    }
  }
});

function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** A node script that starts `sleep 300` in a session of its own, writes its pid, then `then`. */
function script(then: "wait" | "exit", via: "direct" | "orphan" = "direct"): string {
  const sleeper = `spawn("sleep", ["300"], { detached: true, stdio: "ignore" })`;
  const start =
    via === "direct"
      ? `const child = ${sleeper}; writeFileSync("grandchild", String(child.pid)); child.unref();`
      : // A middle process that starts the sleeper and exits at once: the sleeper is re-parented to init.
        `const middle = spawn(process.execPath, ["-e", ${JSON.stringify(`const { spawn } = require("node:child_process"); const { writeFileSync } = require("node:fs"); const child = ${sleeper}; writeFileSync("grandchild", String(child.pid)); child.unref();`)}], { detached: true, stdio: "ignore" });
         await new Promise((resolve) => middle.on("exit", resolve));`;
  const end = then === "wait" ? "setInterval(() => undefined, 1000);" : "";
  return `import { spawn } from "node:child_process";\nimport { writeFileSync } from "node:fs";\n${start}\n${end}\n`;
}

async function runScript(then: "wait" | "exit", via: "direct" | "orphan" = "direct") {
  const cwd = await tempDir();
  await writeFile(join(cwd, "hook.mjs"), script(then, via));
  const result = await runBounded({
    argv: [process.execPath, "hook.mjs"],
    cwd,
    timeoutMs: then === "wait" ? 1_500 : 10_000,
    killGraceMs: 200,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  });
  const pid = Number(await readFile(join(cwd, "grandchild"), "utf8"));
  expect(pid).toBeGreaterThan(1);
  started.push(pid);
  return { result, pid };
}

async function expectGoneWithin2s(pid: number): Promise<void> {
  await waitFor(`the setsid grandchild ${pid} to be gone`, () => !isRunning(pid), { timeoutMs: 2_000 });
}

describe.runIf(linux)("runBounded stops what a command started, in its group or not", () => {
  it("a setsid grandchild is gone within 2 s of the command's timeout", async () => {
    const { result, pid } = await runScript("wait");
    expect(result).toMatchObject({ timedOut: true });
    await expectGoneWithin2s(pid);
  });

  it("a setsid grandchild is gone within 2 s of the command's normal finish", async () => {
    const { result, pid } = await runScript("exit");
    expect(result).toMatchObject({ exitCode: 0, timedOut: false });
    await expectGoneWithin2s(pid);
  });

  it("a setsid grandchild whose parent exited at once (re-parented to init) is gone too", async () => {
    const { result, pid } = await runScript("exit", "orphan");
    expect(result).toMatchObject({ exitCode: 0, timedOut: false });
    await expectGoneWithin2s(pid);
  });

  it("marks the run in the command's environment, with an id of its own each time", async () => {
    const cwd = await tempDir();
    const print = [process.execPath, "-e", `process.stdout.write(process.env.${RUN_ID_ENV} ?? "")`];
    const [first, second] = await Promise.all([1, 2].map(() => runBounded({ argv: print, cwd, timeoutMs: 10_000, env: {} })));
    expect(first?.stdout).toMatch(/^[0-9a-f]{24}$/);
    expect(second?.stdout).toMatch(/^[0-9a-f]{24}$/);
    expect(first?.stdout).not.toBe(second?.stdout);
  });
});
