import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EventRecord } from "../../src/events/index.js";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { graphStatus, specReviewProject } from "../support/graph.js";
import type { ClaimJson, GraphStatusJson } from "../support/graph.js";
import type { TestProject } from "../support/project.js";

/**
 * routing.limits.perNode through a real daemon, the local tracker and the fake harness in tmux
 * (docs/fleet.md, "Caps on graph nodes"): with a cap of 1 at the spec-review graph's `review`
 * gate, the second item's claim waits at its edge with the reason `why` and `graph status` give,
 * the daemon moves it once the first leaves the gate, and a force moves a third past the cap.
 */

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

const is = (event: string, ref: string) => (record: EventRecord) => record.event === event && record.work_item === ref;

type HeldStatus = GraphStatusJson & { held_edge: { to: string; outcome: string; cap: string; limit: number | null; ahead: number } | null };

async function claim(p: TestProject, ref: string): Promise<ClaimJson> {
  return jsonOf<ClaimJson>(await p.cli(["graph", "complete", "--json", "--node", "write"], { THE_LOOP_WORK_ITEM: ref }));
}

async function newItem(p: TestProject, title: string, ref: string): Promise<void> {
  expect((await p.cli(["item", "new", title, "--label", ARM, "--as", "alice"])).code).toBe(0);
  await p.waitForEvent(`${ref} spawned`, is("session.spawned", ref));
}

describe("perNode: a graph run whose next node is full waits at its edge (real daemon, fake harness)", () => {
  it("holds the second claim at the edge, says why, releases it when the first leaves, and lets a force past", { timeout: 180_000 }, async () => {
    project = await specReviewProject({ limits: { perNode: { review: 1 } } });
    const p = project;
    expect((await p.cli(["start", "--json"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    await newItem(p, "one", "local:demo#1");
    await newItem(p, "two", "local:demo#2");
    // Both sessions work in `work/`: one spec.md passes both claims.
    await writeFile(join(p.dir, "work", "spec.md"), "# spec\n");

    expect(await claim(p, "local:demo#1")).toMatchObject({ moved: true, node: "review", status: "waiting" });
    const held = await claim(p, "local:demo#2");
    expect(held).toMatchObject({ moved: false, node: "write", status: "waiting", reason_code: "node-full" });
    const edge = await p.waitForEvent("#2 held", is("graph.edge_held", "local:demo#2"));
    expect(edge).toMatchObject({ from: "write", node: "review", outcome: "pass", cap: "review", limit: 1, count: 1 });

    const words = "waiting at edge write → review: node review full, cap routing.limits.perNode.review = 1, 0 ahead";
    const status = (await graphStatus(p, "#2")) as HeldStatus;
    expect(status).toMatchObject({ node: "write", status: "waiting", reason_code: "node-full", reason: words });
    expect(status.held_edge).toMatchObject({ to: "review", outcome: "pass", cap: "review", limit: 1, ahead: 0 });
    const why = await p.cli(["why", "#2"]);
    expect(why.stdout).toContain(`the spec-review graph run is ${words}`);
    const limits = jsonOf<{ limits?: { caps: unknown[] } }>(await p.cli(["status", "--json"])).limits;
    expect(limits?.caps).toContainEqual({ cap: "perNode.review", live: 1, limit: 1 });

    // While it waits, another claim is refused saying what it waits for.
    const again = await claim(p, "local:demo#2");
    expect(again).toMatchObject({ moved: false, reason_code: "node-full" });
    expect(again.reason).toContain("node review full");

    // #1 leaves the gate: #2 takes its place, by the daemon's release, and is asked for its review.
    const approved = await p.cli(["item", "comment", "#1", "the-loop:approve", "--as", "alice"]);
    expect(approved.code, approved.stderr).toBe(0);
    await p.waitForEvent("#1 done", is("graph.completed", "local:demo#1"));
    const released = await p.waitForEvent("#2 released", is("graph.edge_released", "local:demo#2"), 5_000);
    expect(released).toMatchObject({ from: "write", node: "review", outcome: "pass", actor_kind: "daemon" });
    await p.waitForEvent("#2 at the gate", is("graph.waiting", "local:demo#2"));
    const moved = (await graphStatus(p, "#2")) as HeldStatus;
    expect(moved).toMatchObject({ node: "review", status: "waiting", reason_code: "awaiting-review", held_edge: null });

    // A third waits behind #2 at the gate; a force moves it past the cap, audited as always.
    await newItem(p, "three", "local:demo#3");
    expect(await claim(p, "local:demo#3")).toMatchObject({ moved: false, reason_code: "node-full" });
    const forced = await p.cli(["graph", "force", "#3", "--to", "review", "--reason", "urgent fix", "--json"]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(jsonOf<ClaimJson>(forced)).toMatchObject({ moved: true, node: "review", status: "waiting" });
    await p.waitForEvent("#3 forced", is("graph.forced", "local:demo#3"));
    expect(((await graphStatus(p, "#3")) as HeldStatus).held_edge).toBeNull();
    expect(jsonOf<{ limits?: { caps: unknown[] } }>(await p.cli(["status", "--json"])).limits?.caps).toContainEqual({
      cap: "perNode.review",
      live: 2,
      limit: 1,
    });
  });
});
