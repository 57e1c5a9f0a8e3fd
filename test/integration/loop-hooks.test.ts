import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { HookServer, LoopHooks } from "../../src/sdk/hooks/index.js";
import type { LoopAnnotateAnswer, LoopDenyAnswer, LoopGatePrePayload, LoopGenerationPrePayload } from "../../src/sdk/hooks/index.js";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH, graphStatus } from "../support/graph.js";
import type { GraphStatusJson } from "../support/graph.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { aghViolations } from "../hooks/support/agh-conformance.js";

/** agh's own subprocess test hook (compozy/compozy 8eeb8a381), byte for byte: see test/fixtures/agh/README.md. */
const AGH_DRIVER = new URL("../fixtures/agh/driver.sh", import.meta.url).pathname;

/**
 * The `loop.*` events in the real daemon, on the local tracker, with this test as the scripted
 * agent and reviewer: a remote hook (the SDK's HookServer in this process) and a command hook
 * record what they see; others deny at a `.pre` event, or take their time at an observe-only one.
 */

const LOOP_EVENTS = ["loop.started", "loop.generation.pre", "loop.generation.post", "loop.gate.pre", "loop.gate.post", "loop.node.terminal", "loop.terminal"];

const GRAPH = SPEC_REVIEW_GRAPH;

const COMMAND_RECORDER = `
import { appendFileSync } from "node:fs";
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
// agh's framing: the payload itself, flat; nothing printed is the empty patch.
const payload = JSON.parse(Buffer.concat(chunks).toString("utf8"));
appendFileSync("loop-events.jsonl", JSON.stringify(payload) + "\\n");
`;

type Payload = Record<string, unknown>;

/** Records every loop event it is sent; a subclass decides. */
class Recorder extends LoopHooks {
  readonly seen: Payload[] = [];
  protected record(payload: object): void {
    this.seen.push({ ...payload });
  }
  override loopStarted(payload: object): undefined {
    this.record(payload);
    return undefined;
  }
  override loopGenerationPre(payload: LoopGenerationPrePayload): LoopDenyAnswer | undefined {
    this.record(payload);
    return undefined;
  }
  override loopGenerationPost(payload: object): undefined {
    this.record(payload);
    return undefined;
  }
  override loopGatePre(payload: LoopGatePrePayload): LoopDenyAnswer | undefined {
    this.record(payload);
    return undefined;
  }
  override loopGatePost(payload: object): undefined {
    this.record(payload);
    return undefined;
  }
  override loopNodeTerminal(payload: object): LoopAnnotateAnswer | undefined | Promise<undefined> {
    this.record(payload);
    return undefined;
  }
  override loopTerminal(payload: object): undefined {
    this.record(payload);
    return undefined;
  }
}

let project: TestProject | undefined;
const servers: HookServer[] = [];
const cleanups: (() => void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  await project?.cleanup();
  project = undefined;
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(hooks: LoopHooks): Promise<string> {
  const server = new HookServer(hooks);
  servers.push(server);
  return server.listen();
}

async function loopProject(hooks: readonly Record<string, unknown>[]): Promise<TestProject> {
  const p = await testProject({
    graph: { enabled: true, default: "spec-review" },
    graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
    hooks,
    routing: { spawnWorkdir: "work" },
  });
  await writeFile(join(p.root, "spec-review.yaml"), stringify(GRAPH));
  await mkdir(join(p.dir, "work"), { recursive: true });
  const started = await p.cli(["start", "--json"]);
  expect(started.code, started.stderr).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  return p;
}

const status = (p: TestProject, ref = "#1"): Promise<GraphStatusJson> => graphStatus(p, ref);

async function claim(p: TestProject, ref = "local:demo#1"): Promise<{ moved: boolean; node: string | null; status: string | null }> {
  return jsonOf(await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: ref }));
}

async function comment(p: TestProject, text: string, ref = "#1"): Promise<void> {
  const result = await p.cli(["item", "comment", ref, text, "--as", "alice"]);
  expect(result.code, result.stderr).toBe(0);
}

async function newItem(p: TestProject, title: string, ref: string): Promise<void> {
  expect((await p.cli(["item", "new", title, "--label", ARM, "--as", "alice"])).code).toBe(0);
  await p.waitForEvent(`the spawn of ${ref}`, (r) => r.event === "session.spawned" && r.work_item === ref);
}

async function itemOf(p: TestProject, ref = "#1"): Promise<{ labels: string[]; comments: { body: string }[] }> {
  return jsonOf(await p.cli(["item", "show", ref, "--json"]));
}

const byTime = (events: readonly Payload[]): Payload[] => [...events].sort((a, b) => Date.parse(String(a["timestamp"])) - Date.parse(String(b["timestamp"])));
const story = (events: readonly Payload[]): string[] =>
  byTime(events).map((e) =>
    [e["event"], e["generation"], e["task_id"], e["status"] ?? e["task_status"]].filter((part) => part !== null && part !== undefined).join(" "),
  );

const EXPECTED_STORY = [
  "loop.started 1 running",
  "loop.generation.pre 1 running",
  "loop.node.terminal 1 write#1 completed",
  "loop.gate.pre 1 review#1 running",
  "loop.node.terminal 1 review#1 failed",
  "loop.gate.post 1 review#1 running",
  "loop.generation.post 1 running",
  "loop.generation.pre 2 running",
  "loop.node.terminal 2 write#2 completed",
  "loop.gate.pre 2 review#2 done",
  "loop.node.terminal 2 review#2 completed",
  "loop.gate.post 2 review#2 done",
  "loop.generation.post 2 done",
  "loop.terminal 2 done",
];

describe("the loop.* events in the daemon", () => {
  it("a remote and a command hook see a run through a gate and a request-changes round, in order", async () => {
    const remote = new Recorder();
    const url = await serve(remote);
    project = await loopProject([
      { name: "remote-recorder", url, on: LOOP_EVENTS, timeoutSeconds: 30 },
      { name: "command-recorder", command: [process.execPath, "record.mjs"], on: LOOP_EVENTS },
      // agh's own test hook, unchanged: it prints HOOK_TEST_OUTPUT (nothing: the empty patch) at every event.
      { name: "agh-driver", command: [AGH_DRIVER], on: LOOP_EVENTS, env: { HOOK_TEST_OUTPUT_MODE: "value", HOOK_TEST_OUTPUT: "" } },
    ]);
    const p = project;
    await writeFile(join(p.root, "record.mjs"), COMMAND_RECORDER);
    await newItem(p, "Write a spec", "local:demo#1");

    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    expect(await claim(p)).toMatchObject({ moved: true, node: "review" });
    await comment(p, "the-loop:request-changes");
    await waitFor("generation 2", async () => (await status(p)).generation === 2);
    expect(await claim(p)).toMatchObject({ moved: true, node: "review" });
    await comment(p, "the-loop:approve");
    await waitFor("the run's end", async () => (await status(p)).status === "done");

    await waitFor("the remote recorder's loop.terminal", () => remote.seen.some((e) => e["event"] === "loop.terminal") || undefined);
    expect(story(remote.seen)).toEqual(EXPECTED_STORY);
    const commandSeen = await waitFor("the command recorder's loop.terminal", async () => {
      const text = await readFile(join(p.root, "loop-events.jsonl"), "utf8").catch(() => "");
      const lines = text
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as Payload);
      return lines.some((line) => line["event"] === "loop.terminal") ? lines : undefined;
    });
    expect(story(commandSeen)).toEqual(EXPECTED_STORY);

    const first = remote.seen[0] ?? {};
    expect(first).toMatchObject({
      workspace_id: "demo",
      loop_name: "spec-review",
      resolved_network_participation: { version: "network-participation/v1", mode: "local", source: "built_in_local" },
    });
    expect(first).not.toHaveProperty("parent_loop_run_id");
    expect(new Set(remote.seen.map((e) => e["loop_run_id"])).size).toBe(1);
    const terminal = remote.seen.find((e) => e["event"] === "loop.terminal");
    expect(terminal).toMatchObject({ status: "done", cause: "contract", details: { the_loop: { cause: "node" } } });
    expect(terminal).not.toHaveProperty("reason_code");
    // Every event that names the item's session carries its usage so far (the fake harness records no tokens: null, never 0).
    const named = remote.seen.filter((e) => e["session_id"] !== undefined);
    expect(named.length).toBeGreaterThan(0);
    for (const payload of remote.seen) {
      const usage = (payload["details"] as { the_loop?: { usage?: unknown } } | undefined)?.the_loop?.usage;
      if (payload["session_id"] === undefined) expect(usage, String(payload["event"])).toBeUndefined();
      else expect(usage, String(payload["event"])).toMatchObject({ tokens: null, unreadable: expect.any(String), minutes: expect.any(Number), limits: {} });
    }
    // Every payload of the run — generation 1, changes requested, generation 2, approval, done — is agh's.
    expect(remote.seen.flatMap((payload) => aghViolations(payload))).toEqual([]);
    expect(commandSeen.flatMap((payload) => aghViolations(payload))).toEqual([]);
    // agh's driver ran at every event, and its empty answer passed: no failure recorded.
    expect((await p.events()).filter((r) => r.event === "hooks.failed")).toEqual([]);
    // Timestamps never decrease in the order the run made them.
    const stamps = byTime(remote.seen).map((e) => String(e["timestamp"]));
    expect(stamps.every((stamp) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(stamp))).toBe(true);
  });

  it("a loop.generation.pre denial fails the run (hook_denied); a loop.gate.pre denial blocks it where it stands", async () => {
    class Denies extends Recorder {
      private generations = 0;
      override loopGenerationPre(payload: LoopGenerationPrePayload): LoopDenyAnswer | undefined {
        this.record(payload);
        this.generations += 1;
        return this.generations === 1 ? { denied: true, deny_reason: "over the budget" } : undefined;
      }
      override loopGatePre(payload: LoopGatePrePayload): LoopDenyAnswer | undefined {
        this.record(payload);
        return { deny: true, deny_reason: "the release is frozen" };
      }
    }
    const hooks = new Denies();
    project = await loopProject([{ name: "policy", url: await serve(hooks), on: LOOP_EVENTS, timeoutSeconds: 30 }]);
    const p = project;

    await newItem(p, "Denied at its first generation", "local:demo#1");
    expect(await status(p)).toMatchObject({ status: "failed", reason_code: "hook_denied" });
    expect((await status(p)).reason).toContain("over the budget");
    expect((await status(p)).reason).toContain("policy");
    const boot = (await p.transcript()).find((entry) => entry.type === "boot");
    expect(boot?.argv?.join(" ")).not.toContain("the-loop graph complete --node write");
    await waitFor(
      "the denial comment",
      async () => (await itemOf(p)).comments.some((c) => c.body.includes("`policy` denied `loop.generation.pre`")) || undefined,
    );
    await p.waitForEvent("graph.failed", (r) => r.event === "graph.failed" && r.reason_code === "hook_denied");

    await newItem(p, "Denied at its gate", "local:demo#2");
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    expect(await claim(p, "local:demo#2")).toMatchObject({ moved: true, node: "review" });
    await comment(p, "the-loop:approve", "#2");
    await waitFor("the blocked gate", async () => (await status(p, "#2")).status === "blocked");
    expect(await status(p, "#2")).toMatchObject({ node: "review", phase: "review", status: "blocked", reason_code: "hook_denied" });
    const item = await itemOf(p, "#2");
    expect(item.labels.filter((label) => label.startsWith("loop:"))).toEqual(["loop:review"]);
    await waitFor(
      "the gate denial comment",
      async () => (await itemOf(p, "#2")).comments.some((c) => c.body.includes("`policy` denied `loop.gate.pre`")) || undefined,
    );
    await waitFor("loop.gate.post blocked", () => hooks.seen.some((e) => e["event"] === "loop.gate.post" && e["status"] === "blocked") || undefined);
    expect(hooks.seen.find((e) => e["event"] === "loop.gate.post" && e["status"] === "blocked")).toMatchObject({
      denied: true,
      deny_reason: "the release is frozen",
      reason_code: "hook_denied",
    });
    // blocked ends the run: loop.terminal says so, with the reason in details and cause contract.
    const ended = await waitFor("loop.terminal blocked", () => hooks.seen.find((e) => e["event"] === "loop.terminal" && e["status"] === "blocked"));
    expect(ended).toMatchObject({ cause: "contract", reason_code: "hook_denied", details: { deny_reason: "the release is frozen" } });
    // A denied loop.generation.pre sends no loop.generation.post.
    const firstRun = hooks.seen.find((e) => e["event"] === "loop.generation.pre")?.["loop_run_id"];
    expect(hooks.seen.filter((e) => e["loop_run_id"] === firstRun && e["event"] === "loop.generation.post")).toEqual([]);
  });

  it("an observe-only hook sleeping 30 s does not hold up the next advance, and its denial changes nothing", async () => {
    let finished = false;
    let wake: () => void = () => undefined;
    class Slow extends Recorder {
      override loopStarted(payload: object): never {
        this.record(payload);
        // A denial at an observe-only event: no decision there (the SDK does not even send it back).
        return { denied: true, deny_reason: "ignored" } as never;
      }
      override async loopNodeTerminal(payload: object): Promise<undefined> {
        this.record(payload);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 30_000);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        finished = true;
        return undefined;
      }
    }
    const hooks = new Slow();
    cleanups.push(() => wake());
    project = await loopProject([{ name: "slow", url: await serve(hooks), on: LOOP_EVENTS, timeoutSeconds: 60 }]);
    const p = project;
    await newItem(p, "Write a spec", "local:demo#1");
    expect(await status(p)).toMatchObject({ status: "running", node: "write" });

    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    expect(await claim(p)).toMatchObject({ moved: true, node: "review", status: "waiting" });
    // The claim answered, and the item moved on, while the hook at loop.node.terminal still sleeps.
    await waitFor("the slow hook called", () => hooks.seen.some((e) => e["event"] === "loop.node.terminal") || undefined);
    expect(finished).toBe(false);
    expect(await status(p)).toMatchObject({ node: "review", status: "waiting" });
    expect(hooks.seen.some((e) => e["event"] === "loop.started")).toBe(true);
    expect((await p.events()).filter((r) => r.event === "graph.failed" || r.event === "graph.blocked")).toEqual([]);
    wake();
    await waitFor("the slow hook finished", () => finished || undefined);
  });
});
