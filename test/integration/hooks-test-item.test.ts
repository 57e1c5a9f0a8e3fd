import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH, graphStatus } from "../support/graph.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { stringify } from "yaml";
import { aghViolations } from "../hooks/support/agh-conformance.js";

/**
 * `the-loop hooks test NAME --point P --work-item REF` against a real daemon's item: the payload is
 * the one the daemon would build for it now, from its graph run and its session, and nothing of
 * the item changes. The hooks are declared off, so the daemon never calls them itself.
 */

const REF = "local:demo#1";

/** Denies a generation past the first, from agh's flat payload; records each payload it was given. */
const BUDGET = `#!/bin/sh
payload=$(cat)
printf '%s\\n' "$payload" >> "$(dirname "$0")/budget-calls.jsonl"
case "$payload" in *'"generation":1,'*) ;; *) echo '{"denied":true,"deny_reason":"over budget"}' ;; esac
`;

interface Report {
  readonly outcome: string;
  readonly duration_ms: number;
  readonly source: string;
  readonly payload: Record<string, unknown>;
  readonly workItem?: { readonly ref: string; readonly fromItem: readonly string[] };
  readonly daemonWould: readonly string[];
}

async function project(): Promise<TestProject> {
  const p = await testProject({
    graph: { enabled: true, default: "spec-review" },
    graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
    routing: { spawnWorkdir: "work" },
    hooks: [
      { name: "budget", command: ["./budget.sh"], on: ["loop.generation.pre"], enabled: false },
      { name: "veto", command: ["sh", "-c", `cat >/dev/null; echo '{"proceed": false, "reason": "not today"}'`], on: ["work_item_start"], enabled: false },
    ],
  });
  await writeFile(join(p.root, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
  await writeFile(join(p.root, "budget.sh"), BUDGET);
  await chmod(join(p.root, "budget.sh"), 0o755);
  await mkdir(join(p.dir, "work"), { recursive: true });
  expect((await p.cli(["start"])).code).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
  await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === REF);
  // The session's socket opens on the daemon's next pass over its sessions: waited for here, so that
  // it is not taken for something `hooks test` wrote.
  await p.waitForEvent("the session's socket", (r) => r.event === "session.socket_opened" && r.work_item === REF);
  return p;
}

const test = async (p: TestProject, hook: string, point: string): Promise<Report> => {
  const result = await p.cli(["hooks", "test", hook, "--point", point, "--work-item", "#1", "--json"]);
  expect(result.code, result.stderr).toBe(0);
  return jsonOf<Report>(result);
};

describe("the-loop hooks test --work-item (a real daemon's item)", () => {
  it("calls the hook on the payload the daemon would build for the item now, reports its verdict and timing, and changes nothing", async () => {
    const p = await project();
    // The daemon's first look at the session's usage writes its budget record (usage.readAt); later
    // looks rewrite it only when a figure moves. Taken after that look, the status stands still.
    await waitFor("the daemon's first look at the session's usage", async () => ((await graphStatus(p)).usage?.readAt !== undefined ? true : undefined));
    const before = await graphStatus(p);
    const run = (before as unknown as { loop_run_id: string }).loop_run_id;
    const [session] = jsonOf<{ sessions: { harness: string; harnessSessionId: string }[] }>(await p.cli(["sessions", "list", "--json"])).sessions;
    const logged = (await p.events()).length;

    // loop.generation.pre for the item's run as it stands: generation 1, so the budget lets it pass.
    const first = await test(p, "budget", "loop.generation.pre");
    expect(first).toMatchObject({ outcome: "applied", source: "work-item", workItem: { ref: REF } });
    expect(first.duration_ms).toBeGreaterThanOrEqual(0);
    expect(first.payload).toMatchObject({
      event: "loop.generation.pre",
      loop_run_id: run,
      workspace_id: "demo",
      loop_name: "spec-review",
      generation: 1,
      node_id: before.node,
      agent_name: session?.harness,
      session_id: session?.harnessSessionId,
      status: "running",
    });
    expect(first.workItem?.fromItem).toEqual(expect.arrayContaining(["loop_run_id", "generation", "node_id", "agent_name"]));
    expect(aghViolations(first.payload)).toEqual([]);
    // The hook was given exactly that payload, agh's flat one.
    const given = (await readFile(join(p.root, "budget-calls.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(given).toHaveLength(1);
    expect(given[0]).toMatchObject({ event: "loop.generation.pre", loop_run_id: run, generation: 1 });

    // A lifecycle point: the item's own entity and its session's harness.
    const veto = await test(p, "veto", "work_item_start");
    expect(veto.outcome).toBe("denied");
    expect(veto.daemonWould[0]).toBe("refuse: not today");
    expect(veto.payload).toMatchObject({ workItem: { ref: REF, tracker: "local", number: 1 }, harness: session?.harness });
    expect(veto.workItem?.fromItem).toEqual(["workItem", "harness"]);

    // Read only: the run, its session and the event log are as they were.
    expect(await graphStatus(p)).toEqual(before);
    const since = (await p.events()).slice(logged);
    // The daemon's poller goes on logging its cycles; nothing else was written.
    expect(since.filter((r) => r.event !== "poll.cycle")).toEqual([]);

    const text = await p.cli(["hooks", "test", "budget", "--point", "loop.generation.pre", "--work-item", "#1"]);
    expect(text.stdout).toContain(`on ${REF}'s payload, as the daemon would build it now`);
    expect(text.stdout).toMatch(/outcome: {3}applied in \d+ ms/);
  });

  it("refuses --work-item beside --payload, and an item with no graph run at a loop event", async () => {
    const p = await project();
    const both = await p.cli(["hooks", "test", "budget", "--point", "loop.generation.pre", "--work-item", "#1", "--payload", "-"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give one of them");
    const none = await p.cli(["hooks", "test", "budget", "--point", "loop.generation.pre", "--work-item", "#9"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("local:demo#9 has no graph run");
  });
});
