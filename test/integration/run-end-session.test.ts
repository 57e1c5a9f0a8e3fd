import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH, graphStatus, runningItem } from "../support/graph.js";
import type { ClaimJson } from "../support/graph.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * Run endings reach the agent, through the real CLI and daemon, real tmux and the fake harness
 * as the session (this test is the agent that claims): a run's end is pasted into its session in
 * one marked message and the session closes `graph.closeAfterMinutes` later (a fraction of a
 * minute here, which the schema allows; the daemon checks at least once a second), or at once
 * for 0; a capability gate that blocks the item after a claim is pasted with the gate's message.
 */

const REF = "local:demo#1";

async function project(graph: object, settings: Record<string, unknown>): Promise<TestProject> {
  const name = (graph as { name: string }).name;
  const p = await testProject({
    graph: { enabled: true, default: name, ...settings },
    graphs: [{ name, path: "graph.yaml" }],
    routing: { spawnWorkdir: "work" },
  });
  await writeFile(join(p.root, "graph.yaml"), stringify(graph));
  await mkdir(join(p.dir, "work"), { recursive: true });
  return p;
}

async function claim(p: TestProject): Promise<ClaimJson> {
  const result = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
  expect(result.code, result.stderr).toBe(0);
  return jsonOf<ClaimJson>(result);
}

const pasted = (p: TestProject, begins: string) =>
  waitFor(`the session to be told "${begins}"`, async () =>
    (await p.transcript()).find((entry) => entry.type === "input" && (entry.text ?? "").startsWith(begins)),
  );

/** A review gate binding ship:pre, where the notes capability's blocking gate wants RELEASE-NOTES.md. */
const SHIP_GRAPH = {
  name: "ship",
  start: "write",
  nodes: [
    { id: "write", phase: "writing", description: "Write spec.md.", produces: ["spec.md"] },
    { id: "review", phase: "review", actor: "human", description: "Review spec.md.", points: ["ship:pre"] },
    { id: "done", phase: "done", terminal: true },
  ],
  edges: [
    { from: "write", to: "review", on: "pass" },
    { from: "review", to: "done", on: "approved" },
    { from: "review", to: "write", on: "changes-requested" },
  ],
};

async function installNotesGate(p: TestProject): Promise<void> {
  const bundle = join(p.dir, "capabilities", "notes");
  await mkdir(bundle, { recursive: true });
  await writeFile(
    join(bundle, "capability.json"),
    JSON.stringify({
      id: "notes",
      version: "1.0.0",
      description: "Release notes before shipping.",
      gates: [
        {
          point: "ship:pre",
          check: { predicate: { kind: "artifact-exists", artifact: "RELEASE-NOTES.md" } },
          blocking: true,
          onError: "halt",
          message: "Write RELEASE-NOTES.md before shipping.",
        },
      ],
    }),
  );
  const added = await p.cli(["capabilities", "add", "capabilities/notes", "--yes"]);
  expect(added.code, added.stderr).toBe(0);
}

describe("a run's end and a block reach the session", () => {
  it("tells the session a done run ended, then closes it graph.closeAfterMinutes later, its tmux session kept", async () => {
    const p = await project(SPEC_REVIEW_GRAPH, { closeAfterMinutes: 0.02 });
    await runningItem(p);
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    expect(await claim(p)).toMatchObject({ moved: true, status: "waiting" });
    expect((await p.cli(["item", "comment", "#1", "the-loop:approve", "--as", "alice"])).code).toBe(0);

    const told = await pasted(p, `the-loop run ended for ${REF}`);
    expect(told.text).toContain('the spec-review run is done: its terminal node was reached, at node "done"');
    expect(told.text).toContain("closed in 1 second (graph.closeAfterMinutes)");
    const event = await p.waitForEvent("graph.session_told", (r) => r.event === "graph.session_told");
    expect(event).toMatchObject({ work_item: REF, about: "run-ended", status: "done", outcome: "pasted", close_after: "0.02" });

    const closed = await p.waitForEvent("the close", (r) => r.event === "session.closed");
    expect(closed).toMatchObject({ work_item: REF, reason: "run-ended", kept_tmux_session: true });
    const events = await p.events();
    const toldAt = events.findIndex((r) => r.event === "graph.session_told");
    expect(events.findIndex((r) => r.event === "session.closed")).toBeGreaterThan(toldAt);
    // Closed, not restarted: the item's start was cleared with the close.
    const list = jsonOf<{ sessions: { status: string; closeReason?: string }[] }>(await p.cli(["sessions", "list", "--json"]));
    expect(list.sessions).toEqual([expect.objectContaining({ status: "closed" })]);
    expect(events.filter((r) => r.event === "session.spawned")).toHaveLength(1);
  });

  it("with graph.closeAfterMinutes 0, closes the session right after telling it", async () => {
    const p = await project(SPEC_REVIEW_GRAPH, { closeAfterMinutes: 0 });
    await runningItem(p);
    const forced = await p.cli(["graph", "force", "#1", "--to", "done", "--reason", "finished elsewhere"]);
    expect(forced.code, forced.stderr).toBe(0);
    const told = await pasted(p, `the-loop run ended for ${REF}`);
    expect(told.text).toContain("closed now (graph.closeAfterMinutes: 0)");
    expect(await p.waitForEvent("the close", (r) => r.event === "session.closed")).toMatchObject({ reason: "run-ended" });
  });

  it("closes a paused session too, on the same delay, untold, and the close clears the pause", async () => {
    const p = await project(SPEC_REVIEW_GRAPH, { closeAfterMinutes: 0.02 });
    await runningItem(p);
    const paused = await p.cli(["sessions", "pause", "--work-item", "#1", "--no-comment"]);
    expect(paused.code, paused.stderr).toBe(0);
    const forced = await p.cli(["graph", "force", "#1", "--to", "done", "--reason", "finished elsewhere"]);
    expect(forced.code, forced.stderr).toBe(0);

    expect(await p.waitForEvent("graph.session_told", (r) => r.event === "graph.session_told")).toMatchObject({
      work_item: REF,
      about: "run-ended",
      outcome: "paused",
    });
    const closed = await p.waitForEvent("the close", (r) => r.event === "session.closed");
    expect(closed).toMatchObject({ work_item: REF, reason: "run-ended", kept_tmux_session: true });
    expect(await p.waitForEvent("the pause cleared", (r) => r.event === "control.cleared")).toMatchObject({
      work_item: REF,
      command: "pause",
      cleared_by: "run-ended",
    });
    // Nothing was typed into the paused session: the run's end is not in its transcript.
    expect((await p.transcript()).some((entry) => (entry.text ?? "").startsWith("the-loop run ended"))).toBe(false);
    const list = jsonOf<{ sessions: { status: string }[] }>(await p.cli(["sessions", "list", "--json"]));
    expect(list.sessions).toEqual([expect.objectContaining({ status: "closed" })]);
  });

  it("pastes a capability gate's block after a claim into the session, and the claim's answer says blocked", async () => {
    const p = await project(SHIP_GRAPH, {});
    await installNotesGate(p);
    await runningItem(p);
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");

    const answer = await claim(p);
    expect(answer).toMatchObject({ moved: true, node: "review", status: "blocked", reason_code: "capability-gate" });
    expect(answer.reason).toContain("Write RELEASE-NOTES.md before shipping.");
    const told = await pasted(p, `the-loop block for ${REF}`);
    expect(told.text).toContain("The gate's message: Write RELEASE-NOTES.md before shipping.");
    expect(await p.waitForEvent("graph.session_told", (r) => r.event === "graph.session_told")).toMatchObject({
      about: "blocked",
      node: "review",
      outcome: "pasted",
    });
    expect((await graphStatus(p)).status).toBe("blocked");

    // An approval re-runs the blocking gate, which still blocks: the item stays blocked with its message.
    expect((await p.cli(["item", "comment", "#1", "the-loop:approve", "--as", "alice"])).code).toBe(0);
    const refused = await p.waitForEvent("the approval's refusal", (r) => r.event === "graph.gate_refused");
    expect(refused).toMatchObject({ work_item: REF, reason_code: "capability-gate" });
    expect(String(refused.reason)).toContain("Write RELEASE-NOTES.md before shipping.");
    const status = await graphStatus(p);
    expect(status).toMatchObject({ node: "review", status: "blocked", reason_code: "capability-gate" });
    const comments = jsonOf<{ comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"])).comments;
    expect(comments.some((c) => c.body.includes("the approval of @alice did not move"))).toBe(true);
    expect((await p.events()).filter((r) => r.event === "capability.gate_decided" && r.decision === "block")).toHaveLength(2);

    // The operator's force goes past it.
    const forced = await p.cli(["graph", "force", "#1", "--to", "done", "--reason", "shipping without notes"]);
    expect(forced.code, forced.stderr).toBe(0);
    expect((await graphStatus(p)).status).toBe("done");
  });

  it("re-runs a human gate's blocking gate on approval: what passed on entry and fails now blocks the item instead of completing it", async () => {
    const p = await project(SHIP_GRAPH, {});
    await installNotesGate(p);
    await runningItem(p);
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    await writeFile(join(p.dir, "work", "RELEASE-NOTES.md"), "Notes.\n");
    expect(await claim(p)).toMatchObject({ moved: true, node: "review", status: "waiting" });
    await rm(join(p.dir, "work", "RELEASE-NOTES.md"));
    expect((await p.cli(["item", "comment", "#1", "the-loop:approve", "--as", "alice"])).code).toBe(0);
    await waitFor("the block", async () => (await graphStatus(p)).status === "blocked");
    expect(await graphStatus(p)).toMatchObject({ node: "review", reason_code: "capability-gate" });
    expect((await pasted(p, `the-loop block for ${REF}`)).text).toContain("Write RELEASE-NOTES.md before shipping.");

    // With the note written again, the next approval passes the gate and completes the run.
    await writeFile(join(p.dir, "work", "RELEASE-NOTES.md"), "Notes.\n");
    expect((await p.cli(["item", "comment", "#1", "the-loop:approve", "--as", "alice"])).code).toBe(0);
    await waitFor("the run's end", async () => (await graphStatus(p)).status === "done");
  });
});
