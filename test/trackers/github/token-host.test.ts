import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { githubIntegrationSchema } from "../../../src/config/schema.js";
import { ghRunner, githubTokenSource } from "../../../src/trackers/github/token.js";
import type { GhRunner } from "../../../src/trackers/github/token.js";
import { tempDir } from "../../support/temp.js";
import { waitFor } from "../../support/wait.js";

const defaults = githubIntegrationSchema.parse({});

async function script(body: string): Promise<string> {
  const dir = await tempDir();
  const path = join(dir, "fake-gh");
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("githubTokenSource asks gh for the right host", () => {
  it("names github.com explicitly, so that GH_HOST cannot hand over another host's token", async () => {
    const calls: Array<readonly string[]> = [];
    const runGh: GhRunner = (_binary, args) => {
      calls.push(args);
      return Promise.resolve("gh-token");
    };
    await githubTokenSource(defaults, { GH_HOST: "ghe.example.com" }, { runGh, host: "github.com" }).token();
    await githubTokenSource(defaults, { GH_HOST: "ghe.example.com" }, { runGh }).token();
    expect(calls).toEqual([
      ["auth", "token", "--hostname", "github.com"],
      ["auth", "token", "--hostname", "github.com"],
    ]);
  });

  it("the real runner passes the host on the command line, with no shell", async () => {
    const dir = await tempDir();
    const log = join(dir, "args");
    const gh = await script(`printf '%s\\n' "$@" > "${log}"; echo "  tok-from-gh  "`);
    expect(await ghRunner(5_000)(gh, ["auth", "token", "--hostname", "github.com; touch pwned"])).toBe("tok-from-gh");
    expect((await readFile(log, "utf8")).split("\n")).toEqual(["auth", "token", "--hostname", "github.com; touch pwned", ""]);
  });
});

describe("the gh runner cannot hang the-loop", () => {
  it("gives up at its timeout even when gh leaves a child holding its output, and stops that child", async () => {
    const dir = await tempDir();
    const pidFile = join(dir, "child.pid");
    // A wrapper script (a version manager's shim, say) that ignores SIGTERM and whose gh never
    // answers: a timeout that only sends SIGTERM to the wrapper would wait as long as gh does.
    const gh = await script(`trap "" TERM\nsleep 60 &\necho $! > "${pidFile}"\nwait`);
    const started = Date.now();
    const answer = await ghRunner(300)(gh, ["auth", "token"]);
    expect(answer).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(5_000);
    const child = Number((await readFile(pidFile, "utf8")).trim());
    await waitFor("the child gh left behind to stop", () => (alive(child) ? undefined : true), { timeoutMs: 5_000 });
  });

  it("does not wait on a gh that reads its standard input", async () => {
    const gh = await script("read line; echo tok");
    const started = Date.now();
    // With no input to read, `read` sees the end at once and the answer comes.
    expect(await ghRunner(5_000)(gh, [])).toBe("tok");
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it("answers nothing for a gh that fails", async () => {
    const gh = await script("echo 'not logged in' >&2; exit 1");
    expect(await ghRunner(5_000)(gh, ["auth", "token"])).toBeUndefined();
  });
});
