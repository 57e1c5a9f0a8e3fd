import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH, graphStatus, runningItem as itemStarted } from "../support/graph.js";
import type { GraphStatusJson } from "../support/graph.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * The ends of a run short of its terminal node, end to end on the local tracker through the real
 * CLI and daemon (issue 17, item 7): out of generations (`exhausted`), no progress in the stall
 * window (`stalled`), and stopped or closed mid-run (`canceled`). This test is the scripted
 * agent, as in graph.test.ts.
 */

const REF = "local:demo#1";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

const GRAPH = SPEC_REVIEW_GRAPH;

type StatusJson = GraphStatusJson;

async function outcomesProject(options: { graph?: Record<string, unknown>; settings?: Record<string, unknown> } = {}): Promise<TestProject> {
  const p = await testProject({
    graph: { enabled: true, default: "spec-review", ...options.settings },
    graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
    routing: { spawnWorkdir: "work" },
  });
  await writeFile(join(p.root, "spec-review.yaml"), stringify({ ...GRAPH, ...options.graph }));
  await mkdir(join(p.dir, "work"), { recursive: true });
  return p;
}

const status = (p: TestProject): Promise<GraphStatusJson> => graphStatus(p);

/** The daemon running, and #1 started at the write node. */
async function runningItem(p: TestProject): Promise<void> {
  await itemStarted(p);
  expect(await status(p)).toMatchObject({ node: "write", status: "running", generation: 1 });
}

async function ended(p: TestProject, final: string, timeoutMs?: number): Promise<StatusJson> {
  return waitFor(
    `the run to end ${final}`,
    async () => {
      const now = await status(p);
      return now.status === final ? now : undefined;
    },
    timeoutMs !== undefined ? { timeoutMs } : {},
  );
}

describe("a graph run's ends short of its terminal node, through the daemon", () => {
  it("ends exhausted when a changes-requested answer would pass maxGenerations, and delivers no assignment", async () => {
    project = await outcomesProject({ graph: { maxGenerations: 1 } });
    const p = project;
    await runningItem(p);
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    const claimed = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
    expect(claimed.code, claimed.stderr).toBe(0);
    expect((await p.cli(["item", "comment", "#1", "the-loop:request-changes", "--as", "alice"])).code).toBe(0);

    const end = await ended(p, "exhausted");
    expect(end).toMatchObject({ node: "review", generation: 1, reason_code: "max-generations" });
    expect(end.reason).toContain("maxGenerations");
    expect(end.history.slice(-2).map((entry) => entry.kind)).toEqual(["gate-decided", "exhausted"]);
    const events = await p.events();
    expect(events.find((r) => r.event === "graph.exhausted")).toMatchObject({ work_item: REF, node: "review", generation: 1, actor: "alice" });
    expect(events.some((r) => r.event === "graph.assignment_delivered" && r.how === "pasted")).toBe(false);

    // The run is final: a claim is refused by its status.
    const late = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
    expect(late.code).toBe(1);
    expect(jsonOf<{ reason_code: string }>(late).reason_code).toBe("exhausted");
  });

  it("ends stalled when a run at an agent node makes no progress within graph.stallAfterMinutes", async () => {
    // Three seconds: the daemon checks every poll interval, at least once a second.
    project = await outcomesProject({ settings: { stallAfterMinutes: 0.05 } });
    const p = project;
    await runningItem(p);
    const end = await ended(p, "stalled", 20_000);
    expect(end).toMatchObject({ node: "write", reason_code: "no-progress" });
    expect(end.reason).toContain('no progress at node "write"');
    expect(await p.waitForEvent("graph.stalled", (r) => r.event === "graph.stalled")).toMatchObject({ work_item: REF, actor_kind: "daemon" });
    expect(end.history.at(-1)?.kind).toBe("stalled");
  });

  it("ends canceled when `the-loop sessions stop` stops the item mid-run", async () => {
    project = await outcomesProject();
    const p = project;
    await runningItem(p);
    const stopped = await p.cli(["sessions", "stop", "--work-item", "#1"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    const end = await ended(p, "canceled");
    expect(end).toMatchObject({ node: "write", reason_code: "stopped" });
    expect(end.reason).toContain("(cli)");
    // No work goes on: the item no longer carries its phase's label (issue: a canceled run kept loop:writing).
    await waitFor("the phase label's removal", async () => {
      const item = jsonOf<{ labels: string[] }>(await p.cli(["item", "show", "#1", "--json"]));
      return !item.labels.includes("loop:writing");
    });
    expect(await p.waitForEvent("graph.canceled", (r) => r.event === "graph.canceled")).toMatchObject({
      work_item: REF,
      actor_kind: "operator",
      reason_code: "stopped",
    });
  });

  it("ends canceled when the item is closed mid-run", async () => {
    project = await outcomesProject();
    const p = project;
    await runningItem(p);
    expect((await p.cli(["item", "close", "#1", "--as", "alice"])).code).toBe(0);
    const end = await ended(p, "canceled");
    expect(end).toMatchObject({ node: "write", reason_code: "item-closed" });
    expect(end.reason).toContain("closed by alice");
    expect(await p.waitForEvent("graph.canceled", (r) => r.event === "graph.canceled")).toMatchObject({
      work_item: REF,
      actor: "alice",
      reason_code: "item-closed",
    });
    await p.waitForEvent("the session's close", (r) => r.event === "session.closed" && r.reason === "item-closed");
    await waitFor("the phase label's removal", async () => {
      const item = jsonOf<{ labels: string[] }>(await p.cli(["item", "show", "#1", "--json"]));
      return !item.labels.includes("loop:writing");
    });
  });
});
