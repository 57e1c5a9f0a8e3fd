import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH, graphProject, graphStatus } from "../support/graph.js";
import type { ClaimJson, GraphStatusJson } from "../support/graph.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

/**
 * The process graph end to end on the local tracker (issue "How we will check"): the real CLI
 * and daemon, real tmux, the fake harness as the session, and this test as the scripted agent —
 * it writes the artifact into the session's working directory and claims with
 * `the-loop graph complete`, as an agent in the session would. A local hook records the
 * lifecycle points the graph fires.
 */

const REF = "local:demo#1";
const PACKAGE_ROOT = fileURLToPath(new URL("../..", import.meta.url));

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

const GRAPH = {
  ...SPEC_REVIEW_GRAPH,
  nodes: SPEC_REVIEW_GRAPH.nodes.map((node) => (node.id === "write" ? { ...node, maxAttempts: 5 } : node)),
};

const RECORDER = [
  'import { appendFileSync } from "node:fs";',
  'import { LifecycleHooks } from "the-loop/sdk/hooks";',
  "",
  "const record = (point: string, context: unknown): void => appendFileSync(process.env.GRAPH_HOOK_LOG ?? '', JSON.stringify({ point, context }) + '\\n');",
  "",
  "export default class Recorder extends LifecycleHooks {",
  "  override phaseChanged(context: any): any {",
  "    record('phase_changed', context);",
  // The review phase is announced by its review request alone: no phase comment for it.
  "    return context.toPhase === 'review' ? { ...context, notify: false } : context;",
  "  }",
  "  override waitingForInput(context: any): any {",
  "    record('waiting_for_input', context);",
  "    return context;",
  "  }",
  "  override inputReceived(context: any): any {",
  "    record('input_received', context);",
  "    return context;",
  "  }",
  "}",
  "",
].join("\n");

type StatusJson = GraphStatusJson;

interface ItemJson {
  labels: string[];
  comments: { author: string; body: string }[];
}

/** A spec-review project whose hook `recorder` logs every point's context to hooks.jsonl; `routing` is merged over its own. */
async function recordedGraphProject(routing: Record<string, unknown> = {}): Promise<TestProject> {
  const p = await graphProject(GRAPH, { routing, hooks: [{ name: "recorder", path: "recorder.ts" }] });
  await writeFile(join(p.root, "recorder.ts"), RECORDER);
  await mkdir(join(p.dir, "node_modules"), { recursive: true });
  await symlink(PACKAGE_ROOT, join(p.dir, "node_modules", "the-loop"), "dir");
  return p;
}

const status = (p: TestProject, ref = "#1"): Promise<StatusJson> => graphStatus(p, ref);

async function claim(p: TestProject, ...args: string[]): Promise<{ code: number; answer: ClaimJson; stderr: string }> {
  const result = await p.cli(["graph", "complete", "--json", ...args], { THE_LOOP_WORK_ITEM: REF });
  return { code: result.code ?? -1, answer: jsonOf<ClaimJson>(result), stderr: result.stderr };
}

async function item(p: TestProject): Promise<ItemJson> {
  return jsonOf<ItemJson>(await p.cli(["item", "show", "#1", "--json"]));
}

async function comment(p: TestProject, text: string, as = "alice", ref = "#1"): Promise<void> {
  const result = await p.cli(["item", "comment", ref, text, "--as", as]);
  expect(result.code, result.stderr).toBe(0);
}

async function hookLog(p: TestProject): Promise<{ point: string; context: Record<string, unknown> }[]> {
  const text = await readFile(join(p.dir, "hooks.jsonl"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { point: string; context: Record<string, unknown> });
}

const loopLabels = (labels: readonly string[]): string[] => labels.filter((label) => label.startsWith("loop:"));

describe("the process graph on the local tracker, through the daemon", () => {
  it("starts at the start node, checks claims, takes only structured gate answers, and reaches its terminal node", async () => {
    project = await recordedGraphProject();
    const p = project;
    const env = { GRAPH_HOOK_LOG: join(p.dir, "hooks.jsonl") };
    const started = await p.cli(["start", "--json"], env);
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");

    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");

    // The start node, one loop:* label beside the arming label, and the assignment in the boot prompt.
    const first = await status(p);
    expect(first).toMatchObject({ ref: REF, graph: "spec-review", node: "write", phase: "writing", status: "running", generation: 1 });
    const labelled = await item(p);
    expect(loopLabels(labelled.labels)).toEqual(["loop:writing"]);
    expect(labelled.labels).toContain(ARM);
    const boot = (await p.transcript()).find((entry) => entry.type === "boot");
    expect(boot?.argv?.join(" ")).toContain('you are now at node "write"');
    expect(boot?.argv?.join(" ")).toContain("the-loop graph complete --node write");

    // A claim of the wrong node, and one with the artifact missing, move nothing and say why.
    const wrong = await claim(p, "--node", "review");
    expect(wrong.code).toBe(1);
    expect(wrong.answer).toMatchObject({ moved: false, node: "write", reason_code: "not-current" });
    const missing = await claim(p, "--node", "write");
    expect(missing.code).toBe(1);
    expect(missing.answer.moved).toBe(false);
    expect(missing.answer.reason).toContain("spec.md");

    // A claim made under another config is refused.
    const otherConfig = join(p.dir, "other.yaml");
    await writeFile(otherConfig, await readFile(join(p.root, "cli-config.yaml"), "utf8"));
    const foreign = await p.cli(["--config", otherConfig, "graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
    expect(foreign.code).toBe(1);
    expect(jsonOf<ClaimJson>(foreign).reason_code).toBe("other-config");

    // The agent writes the artifact and claims: the item moves to the gate and a review is requested.
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    const passed = await claim(p);
    expect(passed.code, passed.stderr).toBe(0);
    expect(passed.answer).toMatchObject({ moved: true, node: "review", status: "waiting" });
    const waiting = await item(p);
    expect(loopLabels(waiting.labels)).toEqual(["loop:review"]);
    expect(waiting.comments.some((c) => c.body.includes("waits for a review at `review`"))).toBe(true);
    // notify: false for the review phase: its phase comment is not posted, the label changed anyway.
    expect(waiting.comments.some((c) => c.body.includes("entered phase `review`"))).toBe(false);
    expect(waiting.comments.some((c) => c.body.includes("entered phase `writing`"))).toBe(true);

    // Prose, an unauthorized approval, a quoted one, and both keywords move nothing.
    await comment(p, "LGTM, not approved yet though");
    await comment(p, "the-loop:approve", "mallory");
    await comment(p, "> the-loop:approve\n\nquoting the instructions");
    await comment(p, "the-loop:approve\nthe-loop:request-changes");
    await p.waitForEvent("the ambiguous answer", (r) => r.event === "graph.gate_ambiguous");
    await p.waitForEvent("mallory dropped", (r) => r.event === "routing.dropped" && r.actor === "mallory");
    expect(await status(p)).toMatchObject({ node: "review", status: "waiting", generation: 1 });

    // Changes requested: back to the writing node, the next generation, the assignment pasted.
    await comment(p, "the-loop:request-changes");
    await waitFor("the changes-requested move", async () => (await status(p)).generation === 2);
    expect(await status(p)).toMatchObject({ node: "write", status: "running", generation: 2 });
    await p.waitForEvent("the pasted assignment", (r) => r.event === "graph.assignment_delivered" && r.how === "pasted");

    // Claimed again, and approved: the terminal node, done.
    expect((await claim(p)).answer).toMatchObject({ moved: true, node: "review" });
    await comment(p, "the-loop:approve");
    await waitFor("the run's end", async () => (await status(p)).status === "done");
    const done = await status(p);
    expect(done).toMatchObject({ node: "done", phase: "done", status: "done" });
    const finished = await item(p);
    expect(loopLabels(finished.labels)).toEqual(["loop:done"]);
    expect(finished.labels).toContain(ARM);

    // The hooks saw every phase (the terminal one flagged), the gate, and each answer before it was read.
    const log = await hookLog(p);
    const phases = log.filter((entry) => entry.point === "phase_changed").map((entry) => [entry.context.toPhase, entry.context.terminal]);
    expect(phases).toEqual([
      ["writing", false],
      ["review", false],
      ["writing", false],
      ["review", false],
      ["done", true],
    ]);
    const gates = log.filter((entry) => entry.point === "waiting_for_input");
    expect(gates.length).toBe(2);
    expect(gates[0]?.context).toMatchObject({ asker: "gate", node: "review" });
    expect(log.filter((entry) => entry.point === "input_received").length).toBeGreaterThanOrEqual(2);
  });

  it("applies a gate answer given while the session is paused, and delivers the next assignment on resume", async () => {
    project = await recordedGraphProject();
    const p = project;
    const started = await p.cli(["start", "--json"], { GRAPH_HOOK_LOG: join(p.dir, "hooks.jsonl") });
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    expect((await claim(p)).answer).toMatchObject({ moved: true, node: "review" });

    expect((await p.cli(["sessions", "pause", "--work-item", "#1"])).code).toBe(0);
    await comment(p, "the-loop:request-changes");
    await p.waitForEvent("the held assignment", (r) => r.event === "graph.assignment_failed" && r.will_retry === true);
    expect(await status(p)).toMatchObject({ node: "write", status: "running", generation: 2 });
    const beforeResume = (await p.transcript()).filter((entry) => entry.type === "input" && entry.text?.includes("you are now at node"));
    expect(beforeResume).toEqual([]);

    expect((await p.cli(["sessions", "resume", "--work-item", "#1"])).code).toBe(0);
    await p.waitForEvent("the assignment on resume", (r) => r.event === "graph.assignment_delivered" && r.how === "pasted");
    await waitFor("the pasted assignment", async () =>
      (await p.transcript()).some((entry) => entry.type === "input" && (entry.text ?? "").includes('you are now at node "write"')),
    );
  });

  it("runs the graph an authorized start chose with graph=NAME, and the default, with a warning, for a name it does not have", async () => {
    project = await recordedGraphProject({ control: { requireStartCommand: true } });
    const p = project;
    const started = await p.cli(["start", "--json"], { GRAPH_HOOK_LOG: join(p.dir, "hooks.jsonl") });
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "A small fix", "--label", ARM, "--as", "alice"])).code).toBe(0);
    expect((await p.cli(["item", "new", "Another small fix", "--label", ARM, "--as", "alice"])).code).toBe(0);

    // alice's start chooses adhoc: the item enters adhoc's start node, not the default's.
    await comment(p, "the-loop:start-execution graph=adhoc");
    await p.waitForEvent("the spawn of #1", (r) => r.event === "session.spawned" && r.work_item === REF);
    expect(await status(p)).toMatchObject({ ref: REF, graph: "adhoc", node: "work", phase: "work", status: "running", generation: 1 });
    expect(loopLabels((await item(p)).labels)).toEqual(["loop:work"]);
    const boot = (await p.transcript()).find((entry) => entry.type === "boot");
    expect(boot?.argv?.join(" ")).toContain('you are now at node "work"');

    // A start naming another graph while the run is under way changes nothing: the run keeps its graph.
    await comment(p, "the-loop:start-execution graph=spec-review");
    await p.waitForEvent("the second start", (r) => r.event === "control.command" && r.work_item === REF && r.effect === "noop");
    expect(await status(p)).toMatchObject({ graph: "adhoc", node: "work", generation: 1 });

    // A name the config does not have: the start still happens, on the default graph, and says so.
    await comment(p, "the-loop:start-execution graph=no-such-graph", "alice", "#2");
    const refused = await p.waitForEvent("the refused choice", (r) => r.event === "graph.choice_refused");
    expect(refused).toMatchObject({ work_item: "local:demo#2", chosen: "no-such-graph", graph: "spec-review", actor: "alice", command_source: "comment" });
    expect(refused.known).toEqual(["work-item", "adhoc", "spec-review"]);
    await p.waitForEvent("the spawn of #2", (r) => r.event === "session.spawned" && r.work_item === "local:demo#2");
    expect(await status(p, "#2")).toMatchObject({ graph: "spec-review", node: "write", status: "running" });
    expect((await p.events()).filter((r) => r.event === "graph.choice_refused").length).toBe(1);
  });

  it("refuses to start on a graph file with a dangling edge, naming the file and the node", async () => {
    project = await recordedGraphProject();
    const p = project;
    await writeFile(join(p.root, "graph.yaml"), stringify({ ...GRAPH, edges: [...GRAPH.edges, { from: "write", to: "nowhere", on: "fail" }] }));
    const validated = await p.cli(["config", "validate"]);
    expect(validated.code).toBe(2);
    expect(validated.stderr + validated.stdout).toMatch(/graph\.yaml.*nowhere/s);
    const started = await p.cli(["start"]);
    expect(started.code).not.toBe(0);
    expect(started.stderr).toContain("nowhere");
  });
});
