import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH, graphStatus } from "../support/graph.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { aghViolations } from "../hooks/support/agh-conformance.js";

/**
 * Two policy hooks written from agh's documentation alone (test/fixtures/agh/policies/, each
 * naming the doc page it follows), run unchanged as command hooks on real graph runs: a budget
 * that denies loop.generation.pre past N generations, and a veto on loop.gate.pre. A command hook
 * records every loop event beside them, so the run's story can be read as agh's hooks hear it.
 */

const POLICIES = new URL("../fixtures/agh/policies/", import.meta.url).pathname;
const BUDGET = join(POLICIES, "generation-budget.mjs");
const VETO = join(POLICIES, "gate-veto.sh");

const LOOP_EVENTS = ["loop.started", "loop.generation.pre", "loop.generation.post", "loop.gate.pre", "loop.gate.post", "loop.node.terminal", "loop.terminal"];

const RECORDER = `
import { appendFileSync } from "node:fs";
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
appendFileSync("loop-events.jsonl", Buffer.concat(chunks).toString("utf8") + "\\n");
`;

type Payload = Record<string, unknown>;

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

async function policyProject(policy: Record<string, unknown>): Promise<TestProject> {
  const p = await testProject({
    graph: { enabled: true, default: "spec-review" },
    graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
    hooks: [policy, { name: "recorder", command: [process.execPath, "record.mjs"], on: LOOP_EVENTS }],
    routing: { spawnWorkdir: "work" },
  });
  await writeFile(join(p.root, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
  await writeFile(join(p.root, "record.mjs"), RECORDER);
  await mkdir(join(p.dir, "work"), { recursive: true });
  const started = await p.cli(["start", "--json"]);
  expect(started.code, started.stderr).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  return p;
}

async function recorded(p: TestProject): Promise<Payload[]> {
  const text = await readFile(join(p.root, "loop-events.jsonl"), "utf8").catch(() => "");
  const lines = text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Payload);
  return lines.sort((a, b) => Date.parse(String(a["timestamp"])) - Date.parse(String(b["timestamp"])));
}

async function startItem(p: TestProject): Promise<void> {
  expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
  await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === "local:demo#1");
  await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
  const claimed = jsonOf<{ moved: boolean; node: string | null }>(await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: "local:demo#1" }));
  expect(claimed).toMatchObject({ moved: true, node: "review" });
}

async function comment(p: TestProject, text: string): Promise<void> {
  const result = await p.cli(["item", "comment", "#1", text, "--as", "alice"]);
  expect(result.code, result.stderr).toBe(0);
}

describe("agh policy hooks written from agh's docs, unchanged, on real graph runs", () => {
  it("the budget policy denies generation 2: the run ends failed with hook_denied and the policy's reason", async () => {
    project = await policyProject({ name: "budget", command: [process.execPath, BUDGET], on: ["loop.generation.pre"], env: { MAX_GENERATIONS: "1" } });
    const p = project;
    await startItem(p);
    await comment(p, "the-loop:request-changes");

    await waitFor("the budget's denial", async () => (await graphStatus(p)).status === "failed" || undefined);
    const status = await graphStatus(p);
    expect(status).toMatchObject({ status: "failed", reason_code: "hook_denied" });
    expect(status.reason).toContain('"budget"');
    expect(status.reason).toContain("generation 2 of spec-review is past the budget of 1");

    const events = await waitFor("loop.terminal", async () => {
      const seen = await recorded(p);
      return seen.some((e) => e["event"] === "loop.terminal") ? seen : undefined;
    });
    expect(events.find((e) => e["event"] === "loop.terminal")).toMatchObject({
      status: "failed",
      reason_code: "hook_denied",
      details: { deny_reason: "generation 2 of spec-review is past the budget of 1" },
    });
    // The denied generation never began: no loop.generation.post for it.
    expect(events.filter((e) => e["event"] === "loop.generation.post" && e["generation"] === 2)).toEqual([]);
    expect(events.flatMap((payload) => aghViolations(payload))).toEqual([]);
    expect((await p.events()).filter((r) => r.event === "hooks.failed")).toEqual([]);
  });

  it("the veto blocks the approval, loop.terminal is sent, and a force afterwards begins a new run", async () => {
    project = await policyProject({ name: "veto", command: ["/usr/bin/env", "bash", VETO], on: ["loop.gate.pre"], env: { VETO_REASON: "release freeze" } });
    const p = project;
    await startItem(p);
    await comment(p, "the-loop:approve");

    await waitFor("the veto", async () => (await graphStatus(p)).status === "blocked" || undefined);
    expect(await graphStatus(p)).toMatchObject({ node: "review", status: "blocked", reason_code: "hook_denied" });
    const blockedStory = await waitFor("loop.terminal blocked", async () => {
      const seen = await recorded(p);
      return seen.some((e) => e["event"] === "loop.terminal") ? seen : undefined;
    });
    const ended = blockedStory.find((e) => e["event"] === "loop.terminal");
    expect(ended).toMatchObject({ status: "blocked", cause: "contract", reason_code: "hook_denied", details: { deny_reason: "release freeze" } });
    expect(blockedStory.find((e) => e["event"] === "loop.gate.post")).toMatchObject({ denied: true, deny_reason: "release freeze" });
    const endedRun = ended?.["loop_run_id"];

    // The veto answers approvals only: the operator's force into the terminal node passes it, on a new run.
    const forced = await p.cli(["graph", "force", "#1", "--to", "done", "--reason", "released by hand"]);
    expect(forced.code, forced.stderr).toBe(0);
    await waitFor("the new run's end", async () => (await graphStatus(p)).status === "done" || undefined);
    const all = await waitFor("the new run's loop.terminal", async () => {
      const seen = await recorded(p);
      return seen.filter((e) => e["event"] === "loop.terminal").length === 2 ? seen : undefined;
    });
    const after = all.slice(all.indexOf(all.find((e) => e["event"] === "loop.terminal") ?? {}) + 1);
    expect(after[0]).toMatchObject({ event: "loop.started", origin_kind: "cli", node_id: "review" });
    expect(after.map((e) => e["loop_run_id"]).filter((id) => id === endedRun)).toEqual([]);
    expect(new Set(after.map((e) => e["loop_run_id"])).size).toBe(1);
    expect(after.at(-1)).toMatchObject({ event: "loop.terminal", status: "done" });
    expect(all.flatMap((payload) => aghViolations(payload))).toEqual([]);
  });
});
