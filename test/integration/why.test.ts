import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH } from "../support/graph.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { ARM } from "../support/builders.js";

/**
 * `the-loop why` on the local tracker with the start gate on (issue 19, "How we will check"): the
 * real CLI and daemon, real tmux on a private socket, the fake harness. A start before the item is
 * armed, an unauthorized start and a healthy running session, each explained from the records and
 * the event log alone.
 */

const START = "the-loop:start-execution";
const REF = "local:demo#1";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface WhyJson {
  ref: string;
  state: string;
  summary: string;
  next: string | null;
  lastRefusal: string | null;
  daemonRunning: boolean | null;
  events: { event: string; says: string; delivery_id?: string }[];
}

async function why(p: TestProject): Promise<WhyJson> {
  const result = await p.cli(["why", "#1", "--json"]);
  expect(result.code, result.stderr + result.stdout).toBe(0);
  return jsonOf<WhyJson>(result);
}

async function comment(p: TestProject, text: string, as: string): Promise<string> {
  const result = await p.cli(["item", "comment", "#1", text, "--as", as, "--json"]);
  expect(result.code, result.stderr + result.stdout).toBe(0);
  // The poller's delivery id of a local comment (see control.test.ts).
  return `poll-${jsonOf<{ id: string }>(result).id.replace(/:c(\d+)$/, ":$1")}`;
}

describe("the-loop why, through the daemon (real tmux, the fake harness)", () => {
  it("explains a start before arming, an unauthorized start and a healthy session, each with what would move it", async () => {
    project = await testProject({ routing: { control: { requireStartCommand: true } } });
    const p = project;
    expect((await p.cli(["start", "--json"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");

    // 1. A start before the item is armed: the refusal, and that arming and starting again is needed.
    expect((await p.cli(["item", "new", "Add a health check", "--as", "alice"])).code).toBe(0);
    const early = await comment(p, START, "alice");
    await p.waitForEvent("the early start refused", (r) => r.event === "control.rejected" && r.delivery_id === early);
    const unarmed = await why(p);
    expect(unarmed).toMatchObject({ ref: REF, state: "not-armed", daemonRunning: true });
    expect(unarmed.summary).toContain("alice's start was refused because the item is not armed");
    expect(unarmed.next).toBe(`label it "${ARM}", then comment \`${START}\` as one of: alice`);
    expect(unarmed.events[0]).toMatchObject({ event: "control.rejected" });
    expect(unarmed.events[0]?.says).toContain("a refused start is not remembered, so arm it and start again");

    const text = await p.cli(["why", "#1"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`${REF}: not-armed`);
    expect(text.stdout).toContain(`next: label it "${ARM}", then comment \`${START}\` as one of: alice`);
    expect(text.stdout).toMatch(/what the-loop saw, newest first:\n {2}\S+ {2}refused alice's start \(comment\): the item is not armed/);

    // 2. Armed, then an unauthorized start: the drop, and who is authorized.
    expect((await p.cli(["item", "label", "#1", "--add", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the armed item held", (r) => r.event === "routing.dropped" && r.reason === "awaiting-start");
    const mallory = await comment(p, START, "mallory");
    await p.waitForEvent("mallory's start dropped", (r) => r.event === "routing.dropped" && r.delivery_id === mallory);
    const unauthorized = await why(p);
    expect(unauthorized.state).toBe("awaiting-start");
    const drop = "dropped mallory's comment: mallory is not authorized (authorized: alice)";
    expect(unauthorized.lastRefusal).toBe(drop);
    expect(unauthorized.events.find((e) => e.delivery_id === mallory)?.says).toBe(drop);
    expect(unauthorized.next).toMatch(new RegExp(`^comment \`${START}\` as one of: alice,`));

    // 3. The authorized start: a healthy running session, and nothing is needed.
    await comment(p, START, "alice");
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === REF);
    await p.waitForEvent("the announcement", (r) => r.event === "session.announced");
    const running = await why(p);
    expect(running.state).toBe("running");
    expect(running.summary).toMatch(/^running and healthy: a fake session runs in tmux \S+ since /);
    expect(running.next).toBeNull();
    expect(running.lastRefusal).toBeNull();
    expect(running.events.map((e) => e.event)).toEqual(expect.arrayContaining(["session.spawned", "control.command", "routing.dropped"]));
    const healthy = await p.cli(["why", "#1"]);
    expect(healthy.stdout).toContain("next: nothing is needed");
  }, 60_000);

  it("leads a graph item's headline with its run — running, at the gate, done while the agent runs — and never with the-loop's own echo", async () => {
    project = await testProject({
      graph: { enabled: true, default: "spec-review" },
      graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
      routing: { spawnWorkdir: "work" },
    });
    const p = project;
    await writeFile(join(p.root, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
    await mkdir(join(p.dir, "work"), { recursive: true });
    expect((await p.cli(["start", "--json"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === REF);

    // the-loop's own loop:writing label comes back through the poller: a self-echo at debug level.
    const echo = await p.waitForEvent("the label's echo", (r) => r.event === "routing.dropped" && r.kind === "labeled" && r.actor === "the-loop");
    expect(echo).toMatchObject({ reason: "self-echo", level: "debug", work_item: REF });
    const running = await why(p);
    expect(running.state).toBe("running");
    expect(running.summary).toContain("at node write of the spec-review graph (running)");
    expect(running.lastRefusal).toBeNull();
    expect(running.events.map((e) => e.says).join("\n")).not.toContain("the-loop is not authorized");

    // The agent's claim moves it to the gate: the headline is the gate, and the answer that moves it.
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    const claimed = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
    expect(claimed.code, claimed.stderr).toBe(0);
    await p.waitForEvent(
      "the review label's echo",
      (r) => r.event === "routing.dropped" && r.reason === "self-echo" && r.kind === "labeled" && r.delivery_id !== echo.delivery_id,
    );
    const gate = await why(p);
    expect(gate.state).toBe("at-gate");
    expect(gate.summary).toMatch(/^the spec-review graph run waits at the gate review/);
    expect(gate.next).toBe("comment `the-loop:approve` or `the-loop:request-changes` as one of: alice");
    expect(gate.lastRefusal).toBeNull();

    // Approved: the run is done while its agent still runs, and closing the session is the step.
    expect((await p.cli(["item", "comment", "#1", "the-loop:approve", "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the run's end", (r) => r.event === "graph.completed" && r.work_item === REF);
    const done = await why(p);
    expect(done.state).toBe("graph-done");
    expect(done.summary).toMatch(/^the spec-review graph run is done at node done; its fake agent still runs in tmux \S+$/);
    expect(done.next).toBe("close the session when you no longer need it: `the-loop sessions close --work-item local:demo#1`");
    expect(done.lastRefusal).toBeNull();
    const text = await p.cli(["why", "#1"]);
    expect(text.stdout).toContain(`${REF}: graph-done`);
    expect(text.stdout).not.toContain("last refusal");
  }, 90_000);

  it("explains an item from the records alone when the daemon is not running, and says to start it", async () => {
    project = await testProject({ routing: { control: { requireStartCommand: true } } });
    const p = project;
    expect((await p.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"])).code).toBe(0);
    const idle = await why(p);
    // The CLI recorded the opening with its label: armed, waiting for a start nothing would read.
    expect(idle).toMatchObject({ state: "awaiting-start", daemonRunning: false });
    expect(idle.next).toMatch(new RegExp(`^start the daemon \\(\`the-loop start\`\\), then comment \`${START}\` as one of: alice`));

    const bad = await p.cli(["why", "local:"]);
    expect(bad.code).toBe(2);
  }, 30_000);
});
