import { chmod, cp, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, jsonOf } from "../support/cli.js";
import { graphProject, graphStatus } from "../support/graph.js";
import type { ClaimJson } from "../support/graph.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

/**
 * Capabilities dispatched at the loop points of a running graph (issue "How we will check"): the
 * real CLI and daemon, real tmux, the fake harness as the session, and this test as the agent.
 * A fixture capability binds a command step, a contribution and two gates to the start node's
 * points; another resolves a task's content and fails.
 */

const REF = "local:demo#1";
const CONTRIBUTION = "Keep every answer short. <<verbatim: $HOME `x` \\n stays as written>>";

const GRAPH = {
  name: "discuss",
  start: "write",
  nodes: [
    { id: "write", phase: "writing", description: "Write spec.md.", produces: ["spec.md"], points: ["discuss:pre", "discuss:post"] },
    { id: "review", phase: "review", actor: "human", description: "Review spec.md.", points: ["ship:pre"] },
    { id: "done", phase: "done", terminal: true, points: ["ship:post"] },
  ],
  edges: [
    { from: "write", to: "review", on: "pass" },
    { from: "review", to: "done", on: "approved" },
    { from: "review", to: "write", on: "changes-requested" },
  ],
};

/** A step's command: appends its arguments to marks.log beside the bundle (never inside it: that would change its hash). */
const MARK_SCRIPT = '#!/bin/sh\nprintf "%s\\n" "$*" >> "$(dirname "$0")/../../../marks.log"\n';

const CHECKS_MANIFEST = {
  id: "checks",
  version: "1.0.0",
  description: "A step, a contribution and two gates around the discussion.",
  commands: [{ name: "mark step", argv: ["bin/mark.sh"] }],
  steps: [{ point: "discuss:pre", ref: { command: "mark step" } }],
  contributions: [{ point: "discuss:pre", into: "orchestrator", fragment: { inline: CONTRIBUTION } }],
  gates: [
    {
      point: "discuss:post",
      check: { predicate: { kind: "checklist-complete", artifact: "spec.md" } },
      blocking: false,
      onError: "skip",
      message: "spec.md still has open items",
    },
    {
      point: "discuss:post",
      check: { predicate: { kind: "artifact-exists", artifact: "approved.md" } },
      blocking: true,
      onError: "halt",
      message: "approved.md is missing: the discussion is not signed off",
    },
  ],
};

async function installBundle(p: TestProject, name: string, manifest: object, files: Record<string, string>): Promise<void> {
  const bundle = join(p.dir, "capabilities", name);
  await mkdir(join(bundle, "bin"), { recursive: true });
  await writeFile(join(bundle, "capability.json"), JSON.stringify(manifest, null, 2));
  for (const [path, text] of Object.entries(files)) {
    await writeFile(join(bundle, path), text);
    await chmod(join(bundle, path), 0o755);
  }
  const added = await p.cli(["capabilities", "add", `capabilities/${name}`, "--yes"]);
  expect(added.code, added.stderr).toBe(0);
}

async function claim(p: TestProject): Promise<{ code: number; answer: ClaimJson }> {
  const result = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
  return { code: result.code ?? -1, answer: jsonOf<ClaimJson>(result) };
}

const marks = async (p: TestProject): Promise<string[]> =>
  (await readFile(join(p.dir, "marks.log"), "utf8").catch(() => "")).split("\n").filter((line) => line !== "");

describe("capabilities at the loop points of a running graph", () => {
  it("renders the envelope, runs the step, puts the contribution verbatim into the assignment, and a blocking gate blocks the claim while an advisory one does not", async () => {
    const p = await graphProject(GRAPH);
    await installBundle(p, "checks", CHECKS_MANIFEST, { "bin/mark.sh": MARK_SCRIPT });

    const envelope = jsonOf<{ point: string; activeHooks: { kind: string; capId: string }[]; rendered: string }>(
      await p.cli(["loop", "render-hooks", "discuss:pre", "--raw"]),
    );
    expect(Object.keys(envelope)).toEqual(["point", "activeHooks", "rendered"]);
    expect(envelope.point).toBe("discuss:pre");
    expect(envelope.activeHooks.map((hook) => hook.kind)).toEqual(["step", "contribution"]);
    const empty = jsonOf<{ activeHooks: unknown[] }>(await p.cli(["loop", "render-hooks", "verify:pre", "--raw"]));
    expect(empty.activeHooks).toEqual([]);

    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");

    // discuss:pre passed before the boot prompt: the step ran (with its phase and work item), the fragment is in the assignment verbatim.
    expect(await marks(p), JSON.stringify((await p.events()).filter((r) => String(r.event).startsWith("capability.")))).toEqual([
      `--phase writing --work-item ${REF} --raw`,
    ]);
    const boot = await waitFor("the boot prompt", async () => (await p.transcript()).find((entry) => entry.type === "boot"));
    const prompt = boot.argv?.join(" ") ?? "";
    expect(prompt).toContain("## For the orchestrator");
    expect(prompt).toContain(CONTRIBUTION);
    const stepRun = (await p.events()).find((r) => r.event === "capability.step_run");
    expect(stepRun).toMatchObject({ work_item: REF, node: "write", point: "discuss:pre", capability: "checks", how: "command", ref: "mark step" });

    // A claim: the advisory gate's message is surfaced, the blocking gate blocks with its message.
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n\n- [ ] an open question\n");
    const blocked = await claim(p);
    expect(blocked.code).toBe(1);
    expect(blocked.answer).toMatchObject({ moved: false, node: "write", status: "blocked", reason_code: "blocked" });
    expect(blocked.answer.reason).toContain("approved.md is missing: the discussion is not signed off");
    expect(blocked.answer.notes.join("\n")).toContain("spec.md still has open items");
    const state = await graphStatus(p);
    expect(state).toMatchObject({ node: "write", status: "blocked", reason_code: "capability-gate" });
    const decisions = (await p.events()).filter((r) => r.event === "capability.gate_decided").map((r) => [r.decision, r.blocking]);
    expect(decisions).toEqual([
      ["advisory", false],
      ["block", true],
    ]);
    const comments = jsonOf<{ comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"])).comments;
    expect(comments.some((c) => c.body.includes("is blocked at node `write`") && c.body.includes("approved.md is missing"))).toBe(true);

    // Put back on the node by the operator: discuss:pre passes again (the step runs again), and the signed-off claim moves.
    const forced = await p.cli(["graph", "force", "#1", "--to", "write", "--reason", "signed off in person"]);
    expect(forced.code, forced.stderr).toBe(0);
    await waitFor("the step again", async () => (await marks(p)).length === 2);
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n\n- [x] the question, answered\n");
    await writeFile(join(p.dir, "work", "approved.md"), "yes\n");
    const moved = await claim(p);
    expect(moved.answer).toMatchObject({ moved: true, node: "review", status: "waiting" });
    expect(moved.answer.notes).toEqual([]);
  });

  it("blocks the node whose task's resolver fails, and `task resolve-content` exits non-zero", async () => {
    const graph = {
      name: "tasks",
      start: "implementation",
      nodes: [
        { id: "implementation", phase: "implementation", description: "Implement tasks.md.", taskPlan: "tasks.md", points: ["execute:pre"] },
        { id: "done", phase: "done", terminal: true },
      ],
      edges: [{ from: "implementation", to: "done", on: "pass" }],
    };
    const p = await graphProject(graph);
    const manifest = {
      id: "tracker",
      version: "1.0.0",
      description: "Resolves jira tasks, and fails.",
      taskContentResolver: { trackerPrefix: "jira", invoke: { binary: "bin/resolve.sh", args: ["{{id}}"], timeoutMs: 10_000 } },
    };
    await installBundle(p, "tracker", manifest, { "bin/resolve.sh": '#!/bin/sh\necho "no such issue: $1" >&2\nexit 1\n' });
    await writeFile(join(p.dir, "work", "tasks.md"), "# Tasks\n\n- [ ] jira-7 Wire the thing\n");

    const resolved = await p.cli(["task", "resolve-content", "--plan", join(p.dir, "work", "tasks.md"), "--task-id", "jira-7", "--raw"]);
    expect(resolved.code).not.toBe(0);
    expect(resolved.stderr).toContain("jira-7");

    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Build it", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the resolver's failure", (r) => r.event === "capability.resolver_failed" && r.task_id === "jira-7");
    await waitFor("the block", async () => (await graphStatus(p)).status === "blocked");
    const state = await graphStatus(p);
    expect(state).toMatchObject({ node: "implementation", status: "blocked", reason_code: "task-resolver" });
    expect(state.reason).toContain("jira-7");
    const boot = await waitFor("the boot prompt", async () => (await p.transcript()).find((entry) => entry.type === "boot"));
    expect(boot.argv?.join(" ")).not.toContain("the-loop graph complete --node implementation");
  });

  it("runs the example bundle on the shipped work-item graph: its fragment in the plan's assignment, its ship:pre gates at the final review", async () => {
    const p = await testProject({ graph: { enabled: true }, routing: { spawnWorkdir: "work" } });
    await mkdir(join(p.dir, "work"), { recursive: true });
    await cp(join(REPO_ROOT, "examples/capabilities/release-notes"), join(p.dir, "capabilities", "release-notes"), { recursive: true });
    expect((await p.cli(["capabilities", "add", "capabilities/release-notes", "--yes"])).code).toBe(0);
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Ship it", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    const force = async (to: string): Promise<void> => {
      const forced = await p.cli(["graph", "force", "#1", "--to", to, "--reason", "testing the example"]);
      expect(forced.code, forced.stderr).toBe(0);
    };

    // design binds plan:pre: the planner's fragment, read from the bundle's file, verbatim in the pasted assignment.
    const fragment = (await readFile(join(REPO_ROOT, "examples/capabilities/release-notes/fragments/planner.md"), "utf8")).trim();
    await force("design");
    const pasted = await waitFor("the design assignment", async () =>
      (await p.transcript()).find((entry) => entry.type === "input" && (entry.text ?? "").includes('node "design"')),
    );
    expect(pasted.text).toContain("## For the planner");
    expect(pasted.text).toContain(fragment);

    // final-review binds ship:pre: without RELEASE-NOTES.md the blocking predicate blocks the review.
    await force("final-review");
    await waitFor("the block", async () => (await graphStatus(p)).status === "blocked");
    expect((await graphStatus(p)).reason).toContain("Write RELEASE-NOTES.md before shipping.");

    // A thin note passes the predicate; the advisory query (run in the session's directory) surfaces in the review request.
    await writeFile(join(p.dir, "work", "RELEASE-NOTES.md"), "Fixed it.\n");
    await force("final-review");
    await waitFor("the review", async () => (await graphStatus(p)).status === "waiting");
    const comments = jsonOf<{ comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"])).comments;
    const request = comments.find((c) => c.body.includes("waits for a review at `final-review`"));
    expect(request?.body).toContain("The release note reads thin.");
    expect(request?.body).toContain("RELEASE-NOTES.md has fewer than 20 words");
  });

  it("brackets each attempt with execute:wave:pre and execute:wave:post, the next attempt's text in the failed claim's answer", async () => {
    const graph = {
      name: "waves",
      start: "implementation",
      nodes: [
        {
          id: "implementation",
          phase: "implementation",
          description: "Write out.md.",
          produces: ["out.md"],
          points: ["execute:pre", "execute:wave:pre", "execute:wave:post", "execute:post"],
        },
        { id: "done", phase: "done", terminal: true },
      ],
      edges: [{ from: "implementation", to: "done", on: "pass" }],
    };
    const p = await graphProject(graph);
    const manifest = {
      id: "waves",
      version: "1.0.0",
      description: "Marks every attempt.",
      commands: [{ name: "mark step", argv: ["bin/mark.sh"] }],
      steps: [
        { point: "execute:wave:pre", ref: { command: "mark step" } },
        { point: "execute:wave:post", ref: { command: "mark step" } },
        { point: "execute:post", ref: { command: "mark step" } },
        { point: "execute:post", ref: { skill: "code-review" } },
      ],
      contributions: [{ point: "execute:wave:pre", into: "executor", fragment: { inline: "Attempt text." } }],
    };
    await installBundle(p, "waves", manifest, { "bin/mark.sh": MARK_SCRIPT.replace('"$*"', '"$THE_LOOP_PHASE $(date +%s%N)"') });
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Build it", "--label", ARM, "--as", "alice"])).code).toBe(0);
    const boot = await waitFor("the boot prompt", async () => (await p.transcript()).find((entry) => entry.type === "boot"));
    expect(boot.argv?.join(" ")).toContain("Attempt text.");
    expect(await marks(p)).toHaveLength(1);

    const failed = await claim(p);
    expect(failed.answer).toMatchObject({ moved: false, node: "implementation", status: "running" });
    expect(failed.answer.notes.join("\n")).toContain("## For the executor\n\nAttempt text.");
    // The first attempt's wave:pre, its wave:post, and the second attempt's wave:pre.
    expect(await marks(p)).toHaveLength(3);
    const points = (await p.events()).filter((r) => r.event === "capability.step_run").map((r) => r.point);
    expect(points).toEqual(["execute:wave:pre", "execute:wave:post", "execute:wave:pre"]);

    await writeFile(join(p.dir, "work", "out.md"), "done\n");
    const passed = await claim(p);
    expect(passed.answer).toMatchObject({ moved: true, node: "done", status: "done" });
    // A claim has no assignment to put execute:post's instruction into: its answer carries it.
    expect(passed.answer.notes.join("\n")).toContain("Use the skill `gsd-code-review` now (waves, execute:post).");
    const after = (await p.events()).filter((r) => r.event === "capability.step_run").map((r) => [r.point, r.how]);
    expect(after.slice(3)).toEqual([
      ["execute:wave:post", "command"],
      ["execute:post", "command"],
      ["execute:post", "skill"],
    ]);
  });
});
