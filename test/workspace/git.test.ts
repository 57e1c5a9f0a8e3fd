import { chmod, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Git, GitError, gitEnvironment, redactUrl } from "../../src/workspace/git.js";
import { tempDir } from "../support/temp.js";

async function script(body: string): Promise<string> {
  const dir = await tempDir();
  const path = join(dir, "fake-git");
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

describe("gitEnvironment", () => {
  it("never lets git prompt and never points it at another repository", () => {
    const env = gitEnvironment({ PATH: "/usr/bin", GIT_DIR: "/elsewhere/.git", GIT_WORK_TREE: "/elsewhere", GIT_ASKPASS: "" });
    expect(env.GIT_TERMINAL_PROMPT).toBe("0");
    expect(env.PATH).toBe("/usr/bin");
    expect(env).not.toHaveProperty("GIT_DIR");
    expect(env).not.toHaveProperty("GIT_WORK_TREE");
    expect(env).not.toHaveProperty("GIT_ASKPASS");
  });

  it("keeps an askpass program the user set up", () => {
    expect(gitEnvironment({ GIT_ASKPASS: "/usr/local/bin/helper" }).GIT_ASKPASS).toBe("/usr/local/bin/helper");
  });
});

describe("Git.run", () => {
  it("passes arguments as they are, with no shell in between", async () => {
    const fake = await script('for a in "$@"; do printf "%s\\n" "$a"; done');
    const git = new Git({ binary: fake, timeoutMs: 5_000 });
    const out = await git.run(["log", "$(touch pwned)", "a b;c"], { cwd: await tempDir() });
    expect(out).toBe("log\n$(touch pwned)\na b;c\n");
  });

  it("runs with prompts off whatever the caller's environment says", async () => {
    const fake = await script('printf "%s|%s" "$GIT_TERMINAL_PROMPT" "${GIT_DIR-unset}"');
    const git = new Git({ binary: fake, timeoutMs: 5_000, env: { PATH: process.env.PATH, GIT_TERMINAL_PROMPT: "1", GIT_DIR: "/x" } });
    expect(await git.run(["status"], { cwd: await tempDir() })).toBe("0|unset");
  });

  it("names the command, its exit status and the end of its stderr when it fails", async () => {
    const fake = await script('for i in 1 2 3 4 5 6 7 8 9; do echo "noise $i" >&2; done; echo "fatal: https://user:tok@host/x.git went away" >&2; exit 128');
    const git = new Git({ binary: fake, timeoutMs: 5_000 });
    const error = (await git.run(["fetch", "--prune", "origin"], { cwd: await tempDir() }).catch((e: unknown) => e)) as GitError;
    expect(error).toBeInstanceOf(GitError);
    expect(error.status).toBe(128);
    expect(error.message).toMatch(/^git fetch failed \(exit status 128\): /);
    expect(error.message).toContain("fatal: https://***@host/x.git went away");
    expect(error.message).not.toContain("noise 1");
    expect(error.stderrTail.split("\n")).toHaveLength(6);
  });

  it("stops the whole process group at the timeout", async () => {
    const fake = await script("sleep 30 & sleep 30");
    const git = new Git({ binary: fake, timeoutMs: 200 });
    const started = Date.now();
    const error = (await git.run(["clone", "--", "x", "y"], { cwd: await tempDir() }).catch((e: unknown) => e)) as GitError;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error.timedOut).toBe(true);
    expect(error.message).toBe("git clone timed out after 200 ms and was stopped");
  });

  it("says so when git is not installed", async () => {
    const git = new Git({ binary: "/nonexistent/the-loop/git", timeoutMs: 5_000 });
    const error = (await git.run(["worktree", "add"], { cwd: await tempDir() }).catch((e: unknown) => e)) as GitError;
    expect(error.message).toContain("git worktree add could not start");
    expect(error.message).toContain("/nonexistent/the-loop/git");
  });
});

describe("redactUrl", () => {
  it("hides the credentials of a URL and leaves the rest", () => {
    expect(redactUrl("cloning https://x-access-token:abc@github.com/o/r.git")).toBe("cloning https://***@github.com/o/r.git");
    expect(redactUrl("file:///tmp/r.git and git@github.com:o/r.git")).toBe("file:///tmp/r.git and git@github.com:o/r.git");
  });
});
