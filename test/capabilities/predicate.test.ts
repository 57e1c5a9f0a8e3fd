import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PREDICATE_KINDS, evaluatePredicate, frontMatterOf } from "../../src/capabilities/predicate.js";
import type { PredicateVerdict } from "../../src/capabilities/predicate.js";
import { tempDir } from "../support/temp.js";

const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
const NODE = process.execPath;

/** A working directory holding `files` (path → content), and a file outside it. */
async function workdir(files: Record<string, string> = {}): Promise<{ cwd: string; outside: string }> {
  const parent = await tempDir();
  const cwd = join(parent, "work");
  await mkdir(cwd);
  const outside = join(parent, "outside.md");
  await writeFile(outside, "---\nstatus: done\n---\n- [x] all done\n");
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(cwd, path, ".."), { recursive: true });
    await writeFile(join(cwd, path), content);
  }
  return { cwd, outside };
}

const evaluate = (predicate: unknown, cwd: string, extra: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<PredicateVerdict> =>
  evaluatePredicate(predicate, { cwd, env: ENV, ...extra });

function blocked(verdict: PredicateVerdict): { block: boolean; message: string } {
  if (!verdict.ok) throw new Error(`expected a verdict, got the error: ${verdict.error}`);
  return { block: verdict.block, message: verdict.message };
}

describe("evaluatePredicate: predicates that cannot be evaluated", () => {
  const cases: { what: string; predicate: unknown; error: RegExp }[] = [
    { what: "not an object", predicate: "artifact-exists", error: /a predicate is a JSON object/ },
    { what: "a list", predicate: [{ kind: "artifact-exists" }], error: /a predicate is a JSON object/ },
    { what: "no kind", predicate: { artifact: "PLAN.md" }, error: /has no "kind"/ },
    {
      what: "an unknown kind",
      predicate: { kind: "file-exists", artifact: "PLAN.md" },
      error: /unknown predicate kind "file-exists"; the known kinds: artifact-exists, checklist-complete, artifact-frontmatter-equals, command-exit-zero/,
    },
    { what: "a kind that is not a string", predicate: { kind: 3 }, error: /unknown predicate kind 3/ },
    { what: "a missing artifact", predicate: { kind: "artifact-exists" }, error: /artifact-exists predicate is malformed: predicate\.artifact: / },
    { what: "an empty artifact", predicate: { kind: "checklist-complete", artifact: "" }, error: /predicate\.artifact: artifact is empty/ },
    { what: "an unknown key", predicate: { kind: "artifact-exists", artifact: "a", anyOf: ["b"] }, error: /artifact-exists predicate is malformed/ },
    { what: "equals null", predicate: { kind: "artifact-frontmatter-equals", artifact: "a", field: "f", equals: null }, error: /predicate\.equals/ },
    { what: "no field", predicate: { kind: "artifact-frontmatter-equals", artifact: "a", equals: true }, error: /predicate\.field/ },
    { what: "an empty argv", predicate: { kind: "command-exit-zero", argv: [] }, error: /predicate\.argv: argv is empty/ },
    { what: "argv as a string", predicate: { kind: "command-exit-zero", argv: "npm test" }, error: /predicate\.argv/ },
    { what: "a NUL byte in argv", predicate: { kind: "command-exit-zero", argv: ["node", "a\0b"] }, error: /NUL byte/ },
    { what: "a NUL byte in an artifact", predicate: { kind: "artifact-exists", artifact: "a\0b" }, error: /NUL byte/ },
  ];
  it.each(cases)("$what is an error naming the problem", async ({ predicate, error }) => {
    const { cwd } = await workdir();
    const verdict = await evaluate(predicate, cwd);
    expect(verdict.ok).toBe(false);
    expect(verdict.ok ? "" : verdict.error).toMatch(error);
  });

  it("knows the manifest's four kinds", () => {
    expect(PREDICATE_KINDS).toEqual(["artifact-exists", "checklist-complete", "artifact-frontmatter-equals", "command-exit-zero"]);
  });

  it("a working directory that is missing or relative is an error, not a block", async () => {
    const { cwd } = await workdir();
    const missing = await evaluate({ kind: "artifact-exists", artifact: "PLAN.md" }, join(cwd, "nope"));
    expect(missing).toEqual({ ok: false, error: expect.stringMatching(/does not exist: the predicate cannot be evaluated there/) });
    const relative = await evaluate({ kind: "artifact-exists", artifact: "PLAN.md" }, "work");
    expect(relative).toEqual({ ok: false, error: expect.stringMatching(/absolute working directory/) });
  });
});

describe("evaluatePredicate: artifact-exists and checklist-complete", () => {
  it.each([
    { what: "a regular file", artifact: "PLAN.md", block: false, message: "PLAN.md exists" },
    { what: "a nested file", artifact: "docs/NOTES.md", block: false, message: "docs/NOTES.md exists" },
    { what: "a missing file", artifact: "MISSING.md", block: true, message: "MISSING.md is missing" },
    { what: "a path climbing out with ..", artifact: "../outside.md", block: true, message: "../outside.md is outside the working directory" },
    { what: "an absolute path", artifact: "/etc/passwd", block: true, message: '"/etc/passwd" is not a path relative to the working directory' },
    { what: "a symlink leading out", artifact: "link.md", block: true, message: "link.md leads outside the working directory (through a symlink)" },
    { what: "a directory", artifact: "docs", block: true, message: "docs is not a regular file" },
  ])("artifact-exists: $what", async ({ artifact, block, message }) => {
    const { cwd, outside } = await workdir({ "PLAN.md": "plan", "docs/NOTES.md": "notes" });
    await symlink(outside, join(cwd, "link.md"));
    expect(blocked(await evaluate({ kind: "artifact-exists", artifact }, cwd))).toEqual({ block, message });
  });

  it.each([
    { what: "every item ticked", text: "- [x] one\n- [X] two\n", block: false, message: "TASKS.md: all 2 items ticked" },
    { what: "an unticked item", text: "- [x] one\n- [ ] two\n- [ ] three\n", block: true, message: 'TASKS.md has 2 unticked items; first: "- [ ] two"' },
    {
      what: "no items",
      text: "# nothing to do\n",
      block: true,
      message: 'TASKS.md has no checklist items (lines like "- [ ] a task", ticked "- [x]" when done)',
    },
    { what: "an unticked item inside a code fence only", text: "- [x] one\n```\n- [ ] example\n```\n", block: false, message: "TASKS.md: all 1 items ticked" },
  ])("checklist-complete: $what", async ({ text, block, message }) => {
    const { cwd } = await workdir({ "TASKS.md": text });
    expect(blocked(await evaluate({ kind: "checklist-complete", artifact: "TASKS.md" }, cwd))).toEqual({ block, message });
  });

  it("checklist-complete: a ticked checklist behind a symlink leading out does not count", async () => {
    const { cwd, outside } = await workdir();
    await symlink(outside, join(cwd, "TASKS.md"));
    expect(blocked(await evaluate({ kind: "checklist-complete", artifact: "TASKS.md" }, cwd))).toEqual({
      block: true,
      message: "TASKS.md leads outside the working directory (through a symlink)",
    });
  });
});

describe("evaluatePredicate: artifact-frontmatter-equals", () => {
  const cases: { what: string; text: string; field: string; equals: string | number | boolean; block: boolean; message: string }[] = [
    {
      what: "an equal string",
      text: "---\nstatus: done\n---\nbody\n",
      field: "status",
      equals: "done",
      block: false,
      message: 'R.md: "status" is the string "done"',
    },
    {
      what: "a different string",
      text: "---\nstatus: draft\n---\n",
      field: "status",
      equals: "done",
      block: true,
      message: 'R.md: "status" is the string "draft", not the string "done"',
    },
    {
      what: "the boolean false for false",
      text: "---\napproved: false\n---\n",
      field: "approved",
      equals: false,
      block: false,
      message: 'R.md: "approved" is the boolean false',
    },
    {
      what: 'the string "false" for false',
      text: '---\napproved: "false"\n---\n',
      field: "approved",
      equals: false,
      block: true,
      message: 'R.md: "approved" is the string "false", not the boolean false',
    },
    {
      what: 'the boolean false for "false"',
      text: "---\napproved: false\n---\n",
      field: "approved",
      equals: "false",
      block: true,
      message: 'R.md: "approved" is the boolean false, not the string "false"',
    },
    { what: "the number 1 for 1", text: "---\nrevision: 1\n---\n", field: "revision", equals: 1, block: false, message: 'R.md: "revision" is the number 1' },
    {
      what: 'the string "1" for 1',
      text: "---\nrevision: '1'\n---\n",
      field: "revision",
      equals: 1,
      block: true,
      message: 'R.md: "revision" is the string "1", not the number 1',
    },
    {
      what: "the number 0 for false (no truthiness)",
      text: "---\napproved: 0\n---\n",
      field: "approved",
      equals: false,
      block: true,
      message: 'R.md: "approved" is the number 0, not the boolean false',
    },
    {
      what: "yes, a string in YAML 1.2, for true",
      text: "---\napproved: yes\n---\n",
      field: "approved",
      equals: true,
      block: true,
      message: 'R.md: "approved" is the string "yes", not the boolean true',
    },
    {
      what: "a missing field",
      text: "---\nstatus: done\n---\n",
      field: "approved",
      equals: true,
      block: true,
      message: 'R.md has no field "approved" in its front matter (wanted the boolean true)',
    },
    {
      what: "a nested field by a dotted path",
      text: "---\nreview:\n  status: passed\n---\n",
      field: "review.status",
      equals: "passed",
      block: false,
      message: 'R.md: "review.status" is the string "passed"',
    },
    {
      what: "a top-level dotted key before the path",
      text: '---\n"review.status": top\nreview:\n  status: nested\n---\n',
      field: "review.status",
      equals: "top",
      block: false,
      message: 'R.md: "review.status" is the string "top"',
    },
    {
      what: "a dotted path through a non-mapping",
      text: "---\nreview: passed\n---\n",
      field: "review.status",
      equals: "passed",
      block: true,
      message: 'R.md has no field "review.status" in its front matter (wanted the string "passed")',
    },
    {
      what: "an inherited key",
      text: "---\nstatus: done\n---\n",
      field: "constructor",
      equals: "x",
      block: true,
      message: 'R.md has no field "constructor" in its front matter (wanted the string "x")',
    },
    { what: "a list value", text: "---\ntags: [a]\n---\n", field: "tags", equals: "a", block: true, message: 'R.md: "tags" is a list, not the string "a"' },
    {
      what: "no front matter",
      text: "status: done\n",
      field: "status",
      equals: "done",
      block: true,
      message: 'R.md has no front matter (YAML between a first line "---" and a closing "---")',
    },
    {
      what: "a rule further down is not front matter",
      text: "# Title\n---\nstatus: done\n---\n",
      field: "status",
      equals: "done",
      block: true,
      message: 'R.md has no front matter (YAML between a first line "---" and a closing "---")',
    },
    {
      what: "unclosed front matter",
      text: "---\nstatus: done\n",
      field: "status",
      equals: "done",
      block: true,
      message: 'R.md\'s front matter is not closed (no "---" line after the first)',
    },
    {
      what: "front matter that is a list",
      text: "---\n- a\n---\n",
      field: "status",
      equals: "done",
      block: true,
      message: 'R.md\'s front matter is not a mapping of fields, so it has no field "status"',
    },
    {
      what: "empty front matter",
      text: "---\n---\n",
      field: "status",
      equals: "done",
      block: true,
      message: 'R.md\'s front matter is not a mapping of fields, so it has no field "status"',
    },
    {
      what: "CRLF line ends and a BOM",
      text: "\uFEFF---\r\nstatus: done\r\n---\r\n",
      field: "status",
      equals: "done",
      block: false,
      message: 'R.md: "status" is the string "done"',
    },
  ];
  it.each(cases)("$what", async ({ text, field, equals, block, message }) => {
    const { cwd } = await workdir({ "R.md": text });
    expect(blocked(await evaluate({ kind: "artifact-frontmatter-equals", artifact: "R.md", field, equals }, cwd))).toEqual({ block, message });
  });

  it("front matter that is not YAML blocks, naming the problem", async () => {
    const { cwd } = await workdir({ "R.md": "---\nstatus: [unclosed\n---\n" });
    const verdict = blocked(await evaluate({ kind: "artifact-frontmatter-equals", artifact: "R.md", field: "status", equals: "done" }, cwd));
    expect(verdict.block).toBe(true);
    expect(verdict.message).toMatch(/^R\.md's front matter is not YAML: /);
  });

  it("a duplicate key blocks rather than picking one", async () => {
    const { cwd } = await workdir({ "R.md": "---\nstatus: draft\nstatus: done\n---\n" });
    const verdict = blocked(await evaluate({ kind: "artifact-frontmatter-equals", artifact: "R.md", field: "status", equals: "done" }, cwd));
    expect(verdict.block).toBe(true);
    expect(verdict.message).toMatch(/not YAML/);
  });

  it.each([
    { what: "a missing file", artifact: "MISSING.md", message: "MISSING.md is missing" },
    { what: "a path climbing out", artifact: "../outside.md", message: "../outside.md is outside the working directory" },
    { what: "a symlink leading out", artifact: "link.md", message: "link.md leads outside the working directory (through a symlink)" },
  ])("$what blocks, whatever the file outside says", async ({ artifact, message }) => {
    const { cwd, outside } = await workdir();
    await symlink(outside, join(cwd, "link.md"));
    expect(blocked(await evaluate({ kind: "artifact-frontmatter-equals", artifact, field: "status", equals: "done" }, cwd))).toEqual({ block: true, message });
  });

  it("frontMatterOf reads only a block opened on the first line", () => {
    expect(frontMatterOf("---\na: 1\n...\nrest")).toEqual({ yaml: "a: 1" });
    expect(frontMatterOf("--- \na: 1\n---")).toEqual({ yaml: "a: 1" });
    expect(frontMatterOf("\n---\na: 1\n---")).toEqual({ problem: "none" });
  });
});

describe("evaluatePredicate: command-exit-zero (real processes)", () => {
  it("holds on exit 0, run in the working directory", async () => {
    const { cwd } = await workdir({ marker: "x" });
    const verdict = await evaluate({ kind: "command-exit-zero", argv: [NODE, "-e", "require('fs').statSync('marker')"] }, cwd);
    expect(blocked(verdict).block).toBe(false);
    expect(blocked(verdict).message).toMatch(/ passed$/);
  });

  it("blocks on a non-zero exit, with the status and the end of the output", async () => {
    const { cwd } = await workdir();
    const verdict = blocked(await evaluate({ kind: "command-exit-zero", argv: [NODE, "-e", "console.error('lint: 3 problems'); process.exit(3)"] }, cwd));
    expect(verdict.block).toBe(true);
    expect(verdict.message).toContain("failed (exit status 3)");
    expect(verdict.message).toContain("stderr: lint: 3 problems");
  });

  it("gets exactly the environment given", async () => {
    const { cwd } = await workdir();
    process.env.THE_LOOP_TEST_SECRET = "s3cret";
    try {
      const verdict = await evaluate(
        { kind: "command-exit-zero", argv: [NODE, "-e", "process.exit(process.env.THE_LOOP_TEST_SECRET === undefined ? 0 : 1)"] },
        cwd,
      );
      expect(blocked(verdict).block).toBe(false);
    } finally {
      delete process.env.THE_LOOP_TEST_SECRET;
    }
  });

  it("runs argv without a shell: a ; is an argument", async () => {
    const { cwd } = await workdir();
    const verdict = await evaluate(
      { kind: "command-exit-zero", argv: [NODE, "-e", "process.exit(process.argv[1] === 'a; touch pwned' ? 0 : 1)", "a; touch pwned"] },
      cwd,
    );
    expect(blocked(verdict).block).toBe(false);
  });

  it("a program that is not found blocks with the reason (it is not an error)", async () => {
    const { cwd } = await workdir();
    const verdict = blocked(await evaluate({ kind: "command-exit-zero", argv: ["the-loop-no-such-program-x"] }, cwd));
    expect(verdict.block).toBe(true);
    expect(verdict.message).toContain("command not found: the-loop-no-such-program-x");
  });

  it("a command past its timeout is stopped and blocks", async () => {
    const { cwd } = await workdir();
    const verdict = blocked(await evaluate({ kind: "command-exit-zero", argv: [NODE, "-e", "setTimeout(() => {}, 30000)"] }, cwd, { timeoutMs: 300 }));
    expect(verdict.block).toBe(true);
    expect(verdict.message).toMatch(/timed out after .* and was stopped/);
  });

  it("an evaluation its caller stops is an error, not a verdict", async () => {
    const { cwd } = await workdir();
    const controller = new AbortController();
    const pending = evaluate({ kind: "command-exit-zero", argv: [NODE, "-e", "setTimeout(() => {}, 30000)"] }, cwd, { signal: controller.signal });
    controller.abort();
    expect(await pending).toEqual({ ok: false, error: expect.stringMatching(/stopped/) });
  });
});
