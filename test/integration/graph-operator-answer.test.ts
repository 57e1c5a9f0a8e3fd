import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { graphStatus, runningItem, specReviewProject } from "../support/graph.js";
import type { ClaimJson } from "../support/graph.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * `the-loop graph approve | request-changes` through the real CLI and daemon on the local
 * tracker, the fake harness as the session: the operator's answer moves the gate as the keyword
 * in a comment does, and is audited (event, history, marked comment); an item not at a gate
 * refuses it, and a session may not answer.
 */

const REF = "local:demo#1";

interface ItemJson {
  comments: { author: string; body: string }[];
}

async function claimWritten(p: TestProject): Promise<void> {
  await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
  const claimed = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
  expect(claimed.code, claimed.stderr).toBe(0);
  expect(jsonOf<ClaimJson>(claimed)).toMatchObject({ moved: true, node: "review", status: "waiting" });
}

async function comments(p: TestProject): Promise<ItemJson["comments"]> {
  return jsonOf<ItemJson>(await p.cli(["item", "show", "#1", "--json"])).comments;
}

describe("the-loop graph approve and request-changes", () => {
  it("refuses an item not at a gate, then requests changes and approves, each audited", async () => {
    const p = await specReviewProject();
    await runningItem(p);

    // At an agent node, running: nothing waits for an answer.
    const early = await p.cli(["graph", "approve", "#1", "--json"]);
    expect(early.code).toBe(1);
    expect(jsonOf<ClaimJson>(early)).toMatchObject({ moved: false, node: "write", reason_code: "not-waiting" });
    const refusedEvent = await p.waitForEvent("the refusal", (r) => r.event === "graph.gate_refused");
    expect(refusedEvent).toMatchObject({ work_item: REF, reason_code: "not-waiting", actor_kind: "operator" });
    expect((await graphStatus(p)).history.at(-1)).toMatchObject({ kind: "gate-refused" });

    // A request for changes says what to change.
    const bare = await p.cli(["graph", "request-changes", "#1", "--reason", "  "]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("--reason TEXT");

    await claimWritten(p);
    const sentBack = await p.cli(["graph", "request-changes", "#1", "--reason", "name the error codes", "--json"]);
    expect(sentBack.code, sentBack.stderr).toBe(0);
    expect(jsonOf<ClaimJson>(sentBack)).toMatchObject({ moved: true, node: "write", status: "running" });
    const back = await graphStatus(p);
    expect(back).toMatchObject({ node: "write", generation: 2 });
    const decidedBack = await p.waitForEvent("the decision", (r) => r.event === "graph.gate_decided");
    expect(decidedBack).toMatchObject({ work_item: REF, node: "review", decision: "changes-requested", actor_kind: "operator", via: "cli" });
    const askedFor = await waitFor("the audit comment", async () => (await comments(p)).find((c) => c.body.includes("requested changes at the gate `review`")));
    expect(askedFor.body).toContain("with `the-loop graph request-changes`");
    expect(askedFor.body).toContain("Reason given: name the error codes");
    expect(askedFor.body).toContain("<!-- the-loop");

    await claimWritten(p);
    const approved = await p.cli(["graph", "approve", "#1", "--json"]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(jsonOf<ClaimJson>(approved)).toMatchObject({ moved: true, node: "done", status: "done" });
    const done = await graphStatus(p);
    const entry = done.history.find((h) => h.kind === "gate-decided" && (h as { outcome?: string }).outcome === "approved") as
      { actor: { kind: string; id: string } } | undefined;
    expect(entry?.actor.kind).toBe("operator");
    const approval = await waitFor("the approval comment", async () => (await comments(p)).find((c) => c.body.includes("was approved by")));
    expect(approval.body).toContain("with `the-loop graph approve`");

    // The run is done: nothing waits any more.
    const late = await p.cli(["graph", "approve", "#1", "--json"]);
    expect(late.code).toBe(1);
    expect(jsonOf<ClaimJson>(late).moved).toBe(false);
  });

  it("refuses a session's answer: an agent does not answer its own gate", async () => {
    const p = await specReviewProject();
    await runningItem(p);
    await claimWritten(p);
    const inSession = await p.cli(["graph", "approve", REF], { THE_LOOP_SESSION_TOKEN: "a-session-token", THE_LOOP_WORK_ITEM: REF });
    expect(inSession.code).toBe(2);
    expect(inSession.stderr).toContain("is an operator command");
    expect((await graphStatus(p)).node).toBe("review");
  });
});
