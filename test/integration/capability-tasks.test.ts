import { cp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { taskContentText } from "../../src/capabilities/tasks.js";
import type { TaskContent } from "../../src/capabilities/tasks.js";
import { ARM } from "../support/builders.js";
import { REPO_ROOT } from "../support/cli.js";
import { graphProject, graphStatus } from "../support/graph.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * execute:task at a running graph's node entry, in gsd-core's plan grammar: the daemon resolves
 * each `<task tracker-id>` of the node's plan with gsd-core's resolver bundle, unchanged, and the
 * agent's boot prompt carries the content gsd-core's own `task resolve-content` answered for it
 * (test/fixtures/gsd-core/resolve-content/expected.json). A task gsd-core would halt on blocks the node.
 */

const REF = "local:demo#1";
const CASES = join(REPO_ROOT, "test", "fixtures", "gsd-core", "resolve-content");

const GRAPH = {
  name: "tasks",
  start: "implementation",
  nodes: [
    { id: "implementation", phase: "implementation", description: "Implement PLAN.md.", taskPlan: "PLAN.md" },
    { id: "done", phase: "done", terminal: true },
  ],
  edges: [{ from: "implementation", to: "done", on: "pass" }],
};

interface GsdAnswer {
  readonly exit: number;
  readonly stdout: { readonly resolved: boolean; readonly content?: TaskContent } | null;
}

/** A graph project with the fixture's beads resolver installed unchanged, and `plan` as the node's plan in the session's directory. */
async function project(plan: string): Promise<TestProject> {
  const p = await graphProject(GRAPH);
  await writeFile(join(p.dir, "work", "PLAN.md"), plan);
  await cp(join(CASES, "bundle"), join(p.dir, "capabilities", "beads"), { recursive: true });
  const added = await p.cli(["capabilities", "add", "capabilities/beads", "--yes"]);
  expect(added.code, added.stderr).toBe(0);
  expect((await p.cli(["start"])).code).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  expect((await p.cli(["item", "new", "Fix the login", "--label", ARM, "--as", "alice"])).code).toBe(0);
  return p;
}

describe("gsd-core's <task tracker-id> plans at a node's entry (a real daemon)", async () => {
  const fullPlan = await readFile(join(CASES, "PLAN.md"), "utf8");
  const expected = JSON.parse(await readFile(join(CASES, "expected.json"), "utf8")) as Record<string, GsdAnswer>;

  it("puts each task's content, as gsd-core resolved it, into the boot prompt; what gsd-core leaves unresolved keeps the plan's text", async () => {
    // The plan up to the first task gsd-core halts on (beads:GSD-9-fail), the checkpoint and the untracked task kept.
    const cut = fullPlan.indexOf('<task type="auto" tracker-id="beads:GSD-9-fail">');
    const tail = fullPlan.slice(fullPlan.indexOf('<task type="checkpoint:decision"'));
    const p = await project(fullPlan.slice(0, cut) + tail.replace(/<task type="auto" tracker-id="beads:GSD-(?:5-text|6-array)">[\s\S]*?<\/task>\s*/g, ""));
    const boot = await waitFor("the boot prompt", async () => (await p.transcript()).find((entry) => entry.type === "boot"));
    const prompt = boot.argv?.join(" ") ?? "";
    const resolved = Object.entries(expected).filter(([, answer]) => answer.exit === 0 && answer.stdout?.resolved === true);
    expect(resolved.map(([id]) => id)).toEqual(["beads:GSD-42", "beads:issue:GSD-1", "beads:GSD-43"]);
    for (const [id, answer] of resolved) {
      const content = answer.stdout?.content;
      if (content === undefined) throw new Error(`${id}: gsd-core resolved it with no content`);
      expect(prompt, id).toContain(`## Task ${id}: `);
      expect(prompt, id).toContain(taskContentText(content));
    }
    expect(prompt).toContain("## Task beads:GSD-42: Task 1: the tracker owns this task's content");
    // Unresolved (empty, no resolver, no colon), a checkpoint, a task without a tracker-id: no section of their own.
    for (const id of ["beads:GSD-7-empty", "beads:GSD-8-nodescription", "linear:ENG-1", "Beads:GSD-2", "standalone", ":GSD-3", "beads:GSD-50"]) {
      expect(prompt, id).not.toContain(`## Task ${id}:`);
    }
    expect((await p.events()).filter((r) => r.event === "capability.resolver_failed")).toEqual([]);
    expect(await graphStatus(p)).toMatchObject({ node: "implementation", status: "running" });
  });

  it("blocks the node at the first task gsd-core halts on, naming it, and hands the agent none of the plan's tasks", async () => {
    const p = await project(fullPlan);
    const failed = await p.waitForEvent("the resolver's failure", (r) => r.event === "capability.resolver_failed");
    expect(failed).toMatchObject({ work_item: REF, node: "implementation", capability: "beads-tasks", task_id: "beads:GSD-9-fail" });
    expect(String(failed.error)).toContain("bd: no issue GSD-9-fail");
    await waitFor("the block", async () => (await graphStatus(p)).status === "blocked");
    const state = await graphStatus(p);
    expect(state).toMatchObject({ node: "implementation", status: "blocked", reason_code: "task-resolver" });
    expect(state.reason).toContain("beads:GSD-9-fail");
    const boot = await waitFor("the boot prompt", async () => (await p.transcript()).find((entry) => entry.type === "boot"));
    expect(boot.argv?.join(" ")).not.toContain("## Task beads:GSD-42");
  });
});
