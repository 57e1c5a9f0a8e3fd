import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BIN, cliEnv, jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A working directory with a plan, a checklist and a reviewed file; the CLI runs from elsewhere. */
async function session(): Promise<{ home: string; cwd: string }> {
  const home = await tempDir();
  const cwd = join(home, "work");
  await mkdir(cwd);
  await writeFile(join(cwd, "PLAN.md"), "- [x] jira-1 done\n- [ ] jira-2 not yet\n");
  await writeFile(join(cwd, "REVIEW.md"), "---\napproved: false\n---\n");
  return { home, cwd };
}

const predicate = (args: readonly string[], home: string) => runCli(["loop", "predicate", ...args], { cwd: home });

describe("the-loop loop predicate (real CLI)", () => {
  it("prints {block, message} and exits 0 when the predicate holds, and when it does not", async () => {
    const { home, cwd } = await session();
    const holds = await predicate([JSON.stringify({ kind: "artifact-exists", artifact: "PLAN.md" }), "--cwd", cwd], home);
    expect(holds.code, holds.stderr).toBe(0);
    expect(jsonOf(holds)).toEqual({ block: false, message: "PLAN.md exists" });

    const unticked = await predicate([JSON.stringify({ kind: "checklist-complete", artifact: "PLAN.md" }), "--cwd", cwd, "--raw"], home);
    expect(unticked.code, unticked.stderr).toBe(0);
    expect(unticked.stdout).toBe(`${JSON.stringify({ block: true, message: 'PLAN.md has 1 unticked item; first: "- [ ] jira-2 not yet"' })}\n`);

    const strict = await predicate(
      [JSON.stringify({ kind: "artifact-frontmatter-equals", artifact: "REVIEW.md", field: "approved", equals: "false" }), "--cwd", cwd, "--raw"],
      home,
    );
    expect(jsonOf(strict)).toEqual({ block: true, message: 'REVIEW.md: "approved" is the boolean false, not the string "false"' });
  });

  it("evaluates in the current directory without --cwd", async () => {
    const { home, cwd } = await session();
    await writeFile(join(home, "OUTSIDE.md"), "not the session's\n");
    const inside = await runCli(["loop", "predicate", JSON.stringify({ kind: "artifact-exists", artifact: "PLAN.md" }), "--raw"], { cwd });
    expect(inside.code, inside.stderr).toBe(0);
    expect(jsonOf(inside)).toEqual({ block: false, message: "PLAN.md exists" });
    const outside = await runCli(["loop", "predicate", JSON.stringify({ kind: "artifact-exists", artifact: "../OUTSIDE.md" }), "--raw"], { cwd });
    expect(jsonOf(outside)).toEqual({ block: true, message: "../OUTSIDE.md is outside the working directory" });
  });

  it("a failing command is a block, exit 0; its argv never meets a shell", async () => {
    const { home, cwd } = await session();
    const result = await predicate(
      [JSON.stringify({ kind: "command-exit-zero", argv: [process.execPath, "-e", "process.exit(4)", "; touch pwned"] }), "--cwd", cwd, "--raw"],
      home,
    );
    expect(result.code, result.stderr).toBe(0);
    const verdict = jsonOf<{ block: boolean; message: string }>(result);
    expect(verdict.block).toBe(true);
    expect(verdict.message).toContain("failed (exit status 4)");
  });

  it.each([
    { what: "JSON that does not parse", json: "{kind: artifact-exists}", stderr: "the predicate is not JSON" },
    {
      what: "an unknown kind",
      json: JSON.stringify({ kind: "shell", command: "true" }),
      stderr: 'unknown predicate kind "shell"; the known kinds: artifact-exists, checklist-complete, artifact-frontmatter-equals, command-exit-zero',
    },
    {
      what: "a field of the wrong type",
      json: JSON.stringify({ kind: "artifact-frontmatter-equals", artifact: "REVIEW.md", field: "approved", equals: [true] }),
      stderr: "predicate.equals",
    },
    { what: "a missing field", json: JSON.stringify({ kind: "command-exit-zero" }), stderr: "predicate.argv" },
  ])("$what exits 2 naming the problem", async ({ json, stderr }) => {
    const { home, cwd } = await session();
    const result = await predicate([json, "--cwd", cwd, "--raw"], home);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(stderr);
  });

  it("a --cwd that is not there exits 2", async () => {
    const { home } = await session();
    const result = await predicate([JSON.stringify({ kind: "artifact-exists", artifact: "PLAN.md" }), "--cwd", join(home, "gone")], home);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("is not a directory");
  });

  it("SIGTERM stops the command it runs too, and exits 130 without a verdict", async () => {
    const { home, cwd } = await session();
    const script = "require('fs').writeFileSync('command.pid', String(process.pid)); setTimeout(() => {}, 60000)";
    const json = JSON.stringify({ kind: "command-exit-zero", argv: [process.execPath, "-e", script] });
    const child = spawn(process.execPath, [BIN, "loop", "predicate", json, "--cwd", cwd, "--raw"], { cwd: home, env: cliEnv({ cwd: home }) });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    try {
      const pid = await waitFor("the command's pid", async () => Number(await readFile(join(cwd, "command.pid"), "utf8").catch(() => "")) || undefined);
      child.kill("SIGTERM");
      expect(await exited).toBe(130);
      expect(stdout).toBe("");
      await waitFor("the command to be stopped", () => (alive(pid) ? undefined : true));
    } finally {
      child.kill("SIGKILL");
    }
  });
});
