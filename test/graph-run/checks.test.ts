import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { checklistOf, runChecks, type RunChecksOptions } from "../../src/graph-run/checks.js";
import type { GraphCheck } from "../../src/graph/types.js";
import { tempDir } from "../support/temp.js";

const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

/** A working directory inside a scratch folder, so there is an "outside" to escape to. */
async function workspace(files: Readonly<Record<string, string | undefined>> = {}): Promise<{ cwd: string; outside: string }> {
  const scratch = await tempDir();
  const cwd = join(scratch, "work");
  const outside = join(scratch, "outside");
  await mkdir(cwd);
  await mkdir(outside);
  for (const [path, text] of Object.entries(files)) {
    if (text === undefined) continue;
    await mkdir(dirname(join(cwd, path)), { recursive: true });
    await writeFile(join(cwd, path), text);
  }
  return { cwd, outside };
}

async function one(check: GraphCheck, cwd: string, options: Partial<RunChecksOptions> = {}) {
  const [result] = await runChecks([check], { cwd, env, ...options });
  return result;
}

const artifact = (...anyOf: string[]): GraphCheck => ({ kind: "artifact-exists", anyOf });
const checklist = (...anyOf: string[]): GraphCheck => ({ kind: "checklist-complete", anyOf });
const command = (argv: string[], timeoutSeconds = 10): GraphCheck => ({ kind: "command", argv, timeoutSeconds });

describe("artifact-exists", () => {
  it.each([
    { files: { "requirements.md": "# r" }, anyOf: ["requirements.md"], passed: true, message: "requirements.md exists" },
    { files: {}, anyOf: ["requirements.md"], passed: false, message: "requirements.md is missing" },
    { files: { "docs/design.md": "" }, anyOf: ["docs/design.md"], passed: true, message: "docs/design.md exists" },
    { files: { "b.md": "" }, anyOf: ["a.md", "b.md"], passed: true, message: "b.md exists" },
    { files: {}, anyOf: ["a.md", "b.md"], passed: false, message: "none of a.md, b.md exists" },
    { files: { "docs/x": "" }, anyOf: ["docs"], passed: false, message: "docs is not a regular file" },
    { files: {}, anyOf: ["."], passed: false, message: ". is not a regular file" },
    { files: {}, anyOf: ["/etc/passwd"], passed: false, message: '"/etc/passwd" is not a path relative to the working directory' },
    { files: {}, anyOf: ["../outside/x.md"], passed: false, message: "../outside/x.md is outside the working directory" },
    {
      files: {},
      anyOf: ["a.md", "../b.md"],
      passed: false,
      message: "none of a.md, ../b.md exists (../b.md is outside the working directory)",
    },
  ])("$anyOf with $files: $message", async ({ files, anyOf, passed, message }) => {
    const { cwd } = await workspace(files);
    expect(await one(artifact(...anyOf), cwd)).toEqual({ check: "artifact-exists", passed, message });
  });

  it("judges a path by where it leads once `..` is resolved", async () => {
    const { cwd } = await workspace({ "r.md": "" });
    expect((await one(artifact("docs/../r.md"), cwd))?.passed).toBe(true);
    expect((await one(artifact("docs/../../work-other/r.md"), cwd))?.message).toBe("docs/../../work-other/r.md is outside the working directory");
  });

  it("does not count a symlink to a file outside the directory", async () => {
    const { cwd, outside } = await workspace();
    await writeFile(join(outside, "secret.md"), "x");
    await symlink(join(outside, "secret.md"), join(cwd, "requirements.md"));
    expect(await one(artifact("requirements.md"), cwd)).toEqual({
      check: "artifact-exists",
      passed: false,
      message: "requirements.md leads outside the working directory (through a symlink)",
    });
  });

  it("does not count a file reached through a symlinked folder that points outside", async () => {
    const { cwd, outside } = await workspace();
    await writeFile(join(outside, "design.md"), "x");
    await symlink(outside, join(cwd, "docs"));
    expect((await one(artifact("docs/design.md"), cwd))?.message).toBe("docs/design.md leads outside the working directory (through a symlink)");
  });

  it("counts a symlink that stays inside, and a working directory reached through a symlink", async () => {
    const { cwd } = await workspace({ "real.md": "x" });
    await symlink("real.md", join(cwd, "requirements.md"));
    const linked = join(dirname(cwd), "linked");
    await symlink(cwd, linked);
    expect((await one(artifact("requirements.md"), linked))?.passed).toBe(true);
  });

  it("does not count a dangling symlink", async () => {
    const { cwd } = await workspace();
    await symlink("nowhere.md", join(cwd, "requirements.md"));
    expect((await one(artifact("requirements.md"), cwd))?.message).toBe("requirements.md is missing");
  });
});

describe("checklistOf", () => {
  it.each([
    { text: "", items: 0, unticked: [] },
    { text: "# Tasks\nsome prose\n- not a task", items: 0, unticked: [] },
    { text: "- [x] one\n- [X] two", items: 2, unticked: [] },
    { text: "- [ ] one\n* [x] two\n  * [ ] nested\n\t+ [ ] tabbed", items: 4, unticked: ["- [ ] one", "* [ ] nested", "+ [ ] tabbed"] },
    { text: "1. [ ] first\n2) [x] second", items: 2, unticked: ["1. [ ] first"] },
    { text: "- [ ]\n- [x]", items: 2, unticked: ["- [ ]"] },
    { text: "-[ ] no space\n- [] empty\n- [y] other\n- [ ]x glued", items: 0, unticked: [] },
    { text: "- [x] done\n```md\n- [ ] an example\n```\n~~~\n- [ ] another\n~~~", items: 1, unticked: [] },
    { text: "````\n```\n- [ ] still inside\n````\n- [ ] after", items: 1, unticked: ["- [ ] after"] },
    { text: "- [ ] crlf\r\n- [x] done\r\n", items: 2, unticked: ["- [ ] crlf"] },
  ])("$text → $items items", ({ text, items, unticked }) => {
    expect(checklistOf(text)).toEqual({ items, unticked });
  });
});

describe("checklist-complete", () => {
  it.each([
    { files: { "tasks.md": "- [x] a\n- [x] b\n" }, passed: true, message: "tasks.md: all 2 items ticked" },
    {
      files: { "tasks.md": "- [x] design\n- [ ] write tests\n  - [ ] ship\n" },
      passed: false,
      message: 'tasks.md has 2 unticked items; first: "- [ ] write tests"',
    },
    { files: { "tasks.md": "* [ ] only\n" }, passed: false, message: 'tasks.md has 1 unticked item; first: "* [ ] only"' },
    {
      files: { "tasks.md": "# Tasks\n\nnothing yet\n" },
      passed: false,
      message: 'tasks.md has no checklist items (lines like "- [ ] a task", ticked "- [x]" when done)',
    },
    { files: {}, passed: false, message: "tasks.md is missing" },
  ])("$message", async ({ files, passed, message }) => {
    const { cwd } = await workspace(files);
    expect(await one(checklist("tasks.md"), cwd)).toEqual({ check: "checklist-complete", passed, message });
  });

  it("reads the first alternative that exists", async () => {
    const { cwd } = await workspace({ "TASKS.md": "- [ ] from the second\n" });
    expect((await one(checklist("tasks.md", "TASKS.md"), cwd))?.message).toBe('TASKS.md has 1 unticked item; first: "- [ ] from the second"');
  });

  it("quotes the first unticked item cleaned and bounded", async () => {
    const { cwd } = await workspace({ "tasks.md": `- [ ] \u001b[31m${"x".repeat(500)}\n` });
    const message = (await one(checklist("tasks.md"), cwd))?.message ?? "";
    expect(message).not.toContain("\u001b");
    expect(message.length).toBeLessThan(200);
  });

  it("does not read a FIFO in the checklist's place", async () => {
    const { cwd } = await workspace();
    expect(spawnSync("mkfifo", [join(cwd, "tasks.md")]).status).toBe(0);
    expect((await one(checklist("tasks.md"), cwd))?.message).toBe("tasks.md is not a regular file");
  });

  it("does not read a checklist through a symlink leading outside", async () => {
    const { cwd, outside } = await workspace();
    await writeFile(join(outside, "tasks.md"), "- [x] done\n");
    await symlink(join(outside, "tasks.md"), join(cwd, "tasks.md"));
    expect((await one(checklist("tasks.md"), cwd))?.passed).toBe(false);
  });
});

describe("command", () => {
  it("passes on exit 0, run in the working directory with exactly the given environment", async () => {
    const { cwd } = await workspace();
    process.env.THE_LOOP_TEST_SECRET = "leaked";
    try {
      const check = command(["sh", "-c", `test "$(pwd)" = "${cwd}" && test "$ONLY" = 1 && test -z "$THE_LOOP_TEST_SECRET"`]);
      expect(await one(check, cwd, { env: { ...env, ONLY: "1" } })).toEqual({
        check: "command",
        passed: true,
        message: expect.stringMatching(/^sh -c ".*… passed$/),
      });
    } finally {
      delete process.env.THE_LOOP_TEST_SECRET;
    }
  });

  it("names the command and its exit status, with the end of its output", async () => {
    const { cwd } = await workspace();
    const result = await one(command(["sh", "-c", "echo one; echo two; echo boom >&2; exit 3"]), cwd);
    expect(result).toEqual({
      check: "command",
      passed: false,
      message: 'sh -c "echo one; echo two; echo boom >&2; exit 3" failed (exit status 3); stdout: one | two; stderr: boom',
    });
  });

  it("keeps the message bounded and free of control characters however much the command prints", async () => {
    const { cwd } = await workspace();
    const result = await one(command(["sh", "-c", "seq 1 100000; printf '\\033[31mFAIL\\033[0m at the end\\n'; exit 1"]), cwd);
    expect(result?.message.length).toBeLessThanOrEqual(500);
    // eslint-disable-next-line no-control-regex
    expect(result?.message).not.toMatch(/[\u0000-\u001f]/);
    expect(result?.message).toMatch(/FAIL at the end$/);
  });

  it("stops a command at its timeout", async () => {
    const { cwd } = await workspace();
    const result = await one(command(["sleep", "100"], 0.2), cwd);
    expect(result).toEqual({ check: "command", passed: false, message: "sleep 100 failed (timed out after 200 ms and was stopped)" });
  });

  it("holds every command to the cap, whatever its check allows", async () => {
    const { cwd } = await workspace();
    const result = await one(command(["sleep", "100"], 3600), cwd, { timeoutCapMs: 200 });
    expect(result?.message).toBe("sleep 100 failed (timed out after 200 ms and was stopped)");
  });

  it("says when the program is not there", async () => {
    const { cwd } = await workspace();
    expect((await one(command(["the-loop-no-such-check"]), cwd))?.message).toMatch(
      /^the-loop-no-such-check could not start: command not found: the-loop-no-such-check/,
    );
  });

  it("says when the command cannot be run as written", async () => {
    const { cwd } = await workspace();
    expect((await one(command([]), cwd))?.message).toMatch(/^a command check with an empty argv cannot be run: .*argv is empty/);
  });
});

describe("runChecks", () => {
  it("answers one result per check, in order, running every file check", async () => {
    const { cwd } = await workspace({ "design.md": "" });
    const results = await runChecks([artifact("requirements.md"), artifact("design.md"), checklist("tasks.md")], { cwd, env });
    expect(results.map((result) => [result.check, result.passed, result.message])).toEqual([
      ["artifact-exists", false, "requirements.md is missing"],
      ["artifact-exists", true, "design.md exists"],
      ["checklist-complete", false, "tasks.md is missing"],
    ]);
  });

  it("runs no command once a file check failed", async () => {
    const { cwd } = await workspace();
    const results = await runChecks([command(["touch", "ran"]), artifact("requirements.md")], { cwd, env });
    expect(results).toEqual([
      { check: "command", passed: false, message: "touch ran not run: an artifact check failed first" },
      { check: "artifact-exists", passed: false, message: "requirements.md is missing" },
    ]);
    expect(existsSync(join(cwd, "ran"))).toBe(false);
  });

  it("runs commands in order and stops at the first that fails", async () => {
    const { cwd } = await workspace({ "requirements.md": "" });
    const results = await runChecks([artifact("requirements.md"), command(["touch", "first"]), command(["false"]), command(["touch", "third"])], { cwd, env });
    expect(results.map((result) => result.message)).toEqual([
      "requirements.md exists",
      "touch first passed",
      "false failed (exit status 1)",
      "touch third not run: an earlier command failed",
    ]);
    expect(existsSync(join(cwd, "first"))).toBe(true);
    expect(existsSync(join(cwd, "third"))).toBe(false);
  });

  it("reports commands as not run when the caller has stopped the checks", async () => {
    const { cwd } = await workspace();
    const results = await runChecks([command(["touch", "ran"])], { cwd, env, signal: AbortSignal.abort() });
    expect(results).toEqual([{ check: "command", passed: false, message: "touch ran not run: the checks were stopped" }]);
  });

  it("fails every check when the working directory is gone", async () => {
    const { cwd } = await workspace();
    const gone = join(cwd, "gone");
    const results = await runChecks([artifact("a.md"), command(["true"])], { cwd: gone, env });
    expect(results.map((result) => result.message)).toEqual([`the working directory ${gone} does not exist`, `the working directory ${gone} does not exist`]);
  });

  it("passes with no checks at all", async () => {
    const { cwd } = await workspace();
    expect(await runChecks([], { cwd, env })).toEqual([]);
  });
});
