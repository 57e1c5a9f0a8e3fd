import { chmod, cp, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundleHash } from "../../src/capabilities/consent.js";
import { REPO_ROOT, jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

const PLAN = `# Plan

- [ ] jira-1 Fix the login
- [ ] jira-2-empty Nothing to fetch
- [ ] jira-3-fail The tracker refuses
- [x] linear-4 Owned by no capability
`;

/** A project whose config installs a jira resolver (consented at its hash), with a plan. */
async function project(): Promise<string> {
  const dir = await tempDir();
  const bundle = join(dir, "capabilities", "jira");
  await mkdir(join(bundle, "bin"), { recursive: true });
  await writeFile(
    join(bundle, "bin", "resolve.mjs"),
    `#!/usr/bin/env node
const id = process.argv[2];
if (id.endsWith("-fail")) { console.error("tracker said: 403 for " + id); process.exit(1); }
process.stdout.write(id.endsWith("-empty") ? "\\n" : "Content of " + id + "\\n");
`,
  );
  await chmod(join(bundle, "bin", "resolve.mjs"), 0o755);
  await writeFile(
    join(bundle, "capability.yaml"),
    `id: jira-tasks
version: 1.0.0
description: resolves jira tasks
taskContentResolver:
  trackerPrefix: jira
  invoke:
    binary: bin/resolve.mjs
    args: ["{{id}}"]
    timeoutMs: 20000
`,
  );
  await mkdir(join(dir, ".the-loop"));
  await writeFile(
    join(dir, ".the-loop", "cli-config.yaml"),
    `state:\n  root: s\ncapabilities:\n  - path: ../capabilities/jira\n    sha256: ${await bundleHash(bundle)}\n`,
  );
  await mkdir(join(dir, "plans"));
  await writeFile(join(dir, "plans", "PLAN.md"), PLAN);
  return dir;
}

const resolveContent = (cwd: string, taskId: string, plan = "plans/PLAN.md") =>
  runCli(["task", "resolve-content", "--plan", plan, "--task-id", taskId, "--raw"], { cwd });

describe("the-loop task resolve-content (real CLI)", () => {
  it("prints the resolver's content, exit 0", async () => {
    const cwd = await project();
    const result = await resolveContent(cwd, "jira-1");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${JSON.stringify({ resolved: true, content: "Content of jira-1\n" })}\n`);
  });

  it("an empty answer and an unowned prefix are unresolved, exit 0", async () => {
    const cwd = await project();
    const empty = await resolveContent(cwd, "jira-2-empty");
    expect(empty.code, empty.stderr).toBe(0);
    expect(jsonOf(empty)).toEqual({ resolved: false, reason: "empty" });
    const unowned = await resolveContent(cwd, "linear-4");
    expect(unowned.code, unowned.stderr).toBe(0);
    expect(jsonOf(unowned)).toEqual({ resolved: false, reason: "no-resolver" });
  });

  it("a failing resolver exits 1 with its error on stderr and nothing on stdout", async () => {
    const cwd = await project();
    const result = await resolveContent(cwd, "jira-3-fail");
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain('capability jira-tasks could not resolve task "jira-3-fail"');
    expect(result.stderr).toContain("exit status 1");
    expect(result.stderr).toContain("tracker said: 403 for jira-3-fail");
  });

  it("an id that is not a task of the plan exits 1, as gsd-core does, naming it and the plan", async () => {
    const cwd = await project();
    const result = await resolveContent(cwd, "jira-99");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('"jira-99" is not a task of the plan');
    expect(result.stderr).toContain("PLAN.md");
    expect(result.stderr).toContain("its tasks: jira-1, jira-2-empty, jira-3-fail, linear-4");
  });

  it("a plan that is not there exits 1, as gsd-core does", async () => {
    const cwd = await project();
    const result = await resolveContent(cwd, "jira-1", "plans/MISSING.md");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("no plan at");
  });

  it("a bundle changed since consent refuses to run it, exit 2", async () => {
    const cwd = await project();
    await writeFile(join(cwd, "capabilities", "jira", "bin", "resolve.mjs"), "#!/usr/bin/env node\nprocess.stdout.write('changed');\n");
    const result = await resolveContent(cwd, "jira-1");
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("changed since it was consented to");
  });
});

const GSD_CASES = join(REPO_ROOT, "test", "fixtures", "gsd-core", "resolve-content");

interface GsdAnswer {
  readonly exit: number;
  readonly stdout: unknown;
  readonly stderr: string;
}

/** A project with the fixture's beads resolver installed unchanged (consented at its hash) and its gsd-core plan. */
async function gsdProject(): Promise<string> {
  const dir = await tempDir();
  const bundle = join(dir, "capabilities", "beads");
  await cp(join(GSD_CASES, "bundle"), bundle, { recursive: true });
  await mkdir(join(dir, ".the-loop"));
  await writeFile(
    join(dir, ".the-loop", "cli-config.yaml"),
    `state:\n  root: s\ncapabilities:\n  - path: ../capabilities/beads\n    sha256: ${await bundleHash(bundle)}\n`,
  );
  await cp(join(GSD_CASES, "PLAN.md"), join(dir, "PLAN.md"));
  return dir;
}

// What the-loop's message must say of the cause where gsd-core exits 1; the words differ from gsd-core's.
const CAUSES: Readonly<Record<string, readonly string[]>> = {
  "beads:GSD-9-fail": ["exit status 3", "bd: no issue GSD-9-fail"],
  "beads:GSD-5-text": ["is not JSON", "Issue GSD-5-text: not JSON"],
  "beads:GSD-6-array": ["not an object", "an array"],
  "beads:GSD-50": ['"beads:GSD-50" is not a task of the plan', "PLAN.md"],
  "beads:GSD-404": ['"beads:GSD-404" is not a task of the plan', "PLAN.md"],
};

describe("the-loop task resolve-content on gsd-core's plan grammar (against gsd-core's answers)", async () => {
  const expected = JSON.parse(await readFile(join(GSD_CASES, "expected.json"), "utf8")) as Record<string, GsdAnswer>;

  it.each(Object.entries(expected))("%s: gsd-core's answer and exit status", async (taskId, answer) => {
    const cwd = await gsdProject();
    const result = await resolveContent(cwd, taskId, "PLAN.md");
    expect(result.code, result.stderr).toBe(answer.exit);
    if (answer.exit === 0) {
      expect(jsonOf(result)).toEqual(answer.stdout);
      return;
    }
    expect(result.stdout).toBe("");
    for (const words of CAUSES[taskId] ?? []) expect(result.stderr).toContain(words);
  });

  it("every case gsd-core exits 1 on has the cause its message must name", () => {
    const failing = Object.entries(expected)
      .filter(([, answer]) => answer.exit !== 0)
      .map(([taskId]) => taskId);
    expect(failing.sort()).toEqual(Object.keys(CAUSES).sort());
  });
});

describe("the-loop task resolve-content with both grammars in one plan", () => {
  it("a checklist task still answers the resolver's text, a <task> element gsd-core's content", async () => {
    const cwd = await project();
    await writeFile(join(cwd, "plans", "PLAN.md"), `${PLAN}\n<task type="auto" tracker-id="jira:ABC-1">\n</task>\n`);
    const checklist = await resolveContent(cwd, "jira-1");
    expect(jsonOf(checklist)).toEqual({ resolved: true, content: "Content of jira-1\n" });
    // The jira resolver prints text, not the tracker's JSON: in gsd-core's grammar that is a failure.
    const element = await resolveContent(cwd, "jira:ABC-1");
    expect(element.code).toBe(1);
    expect(element.stderr).toContain("is not JSON");
  });
});
