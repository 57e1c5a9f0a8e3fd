import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { SPEC_REVIEW_GRAPH, graphStatus } from "../support/graph.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * `the-loop hooks runs` over one full graph run through a real daemon (issue 28, "Done when"):
 * generation 1, changes requested, generation 2, approval and done, on the fake harness. Three
 * command hooks: one that records every loop event it is given, one that fails at every attempt's
 * end, and a lifecycle hook at the spawn. Every call the daemon made is in `hooks runs`, by hook
 * and event, with agh's outcome and its duration, each failure with its error.
 */

const REF = "local:demo#1";
const LOOP_EVENTS = ["loop.started", "loop.generation.pre", "loop.generation.post", "loop.gate.pre", "loop.gate.post", "loop.node.terminal", "loop.terminal"];

const RECORDER = `
import { appendFileSync } from "node:fs";
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
appendFileSync("loop-events.jsonl", Buffer.concat(chunks).toString("utf8") + "\\n");
`;

interface Run {
  readonly hook?: string;
  readonly event: string;
  readonly outcome: string;
  readonly duration_ms: number;
  readonly work_item?: string;
  readonly error?: string;
  readonly count?: number;
}

async function recorded(p: TestProject): Promise<string[]> {
  const text = await readFile(join(p.root, "loop-events.jsonl"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => String((JSON.parse(line) as Record<string, unknown>)["event"]));
}

async function claim(p: TestProject): Promise<void> {
  const result = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
  expect(jsonOf<{ moved: boolean; node: string | null }>(result)).toMatchObject({ moved: true, node: "review" });
}

async function comment(p: TestProject, text: string): Promise<void> {
  const result = await p.cli(["item", "comment", "#1", text, "--as", "alice"]);
  expect(result.code, result.stderr).toBe(0);
}

describe("the-loop hooks runs over a full graph run (a real daemon)", () => {
  it("lists every call of each hook with its outcome and duration: generation 1, changes requested, generation 2, approval, done", async () => {
    const p = await testProject({
      graph: { enabled: true, default: "spec-review" },
      graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
      routing: { spawnWorkdir: "work" },
      hooks: [
        { name: "recorder", command: [process.execPath, "record.mjs"], on: LOOP_EVENTS },
        { name: "broken", command: ["sh", "-c", "cat >/dev/null; echo 'no tracker to report to' >&2; exit 3"], on: ["loop.node.terminal"] },
        { name: "spawn-note", command: ["sh", "-c", "cat >/dev/null"], on: ["session_spawned"] },
      ],
    });
    await writeFile(join(p.root, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
    await writeFile(join(p.root, "record.mjs"), RECORDER);
    await mkdir(join(p.dir, "work"), { recursive: true });
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");

    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === REF);
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    await claim(p);
    await comment(p, "the-loop:request-changes");
    await waitFor("generation 2", async () => {
      const status = await graphStatus(p);
      return status.generation === 2 && status.node === "write" ? status : undefined;
    });
    await claim(p);
    await comment(p, "the-loop:approve");
    await waitFor("done", async () => (await graphStatus(p)).status === "done" || undefined);
    await waitFor("loop.terminal", async () => (await recorded(p)).includes("loop.terminal") || undefined);
    // The daemon's stop writes what its minute's aggregates still hold.
    expect((await p.cli(["stop", "--timeout", "20"])).code).toBe(0);

    const runs = jsonOf<Run[]>(await p.cli(["hooks", "runs", "--json", "--limit", "0"]));
    const seen = await recorded(p);
    expect(seen).toEqual(expect.arrayContaining(["loop.started", "loop.gate.pre", "loop.generation.post", "loop.terminal"]));
    const calls = (hook: string): number => runs.filter((run) => run.hook === hook).reduce((sum, run) => sum + (run.count ?? 1), 0);
    for (const run of runs) {
      expect(run.duration_ms, JSON.stringify(run)).toEqual(expect.any(Number));
      expect(run.work_item, JSON.stringify(run)).toBe(REF);
    }

    // The recorder: every loop event it was given, applied, at the events it was given.
    const recorder = runs.filter((run) => run.hook === "recorder");
    expect(calls("recorder")).toBe(seen.length);
    expect(new Set(recorder.map((run) => run.outcome))).toEqual(new Set(["applied"]));
    // At each event as often as it was given it (at most 5 applied calls per hook, point and minute are logged alone, then counted).
    for (const event of new Set(seen)) {
      const at = recorder.filter((run) => run.event === event).reduce((sum, run) => sum + (run.count ?? 1), 0);
      expect(at, event).toBe(seen.filter((name) => name === event).length);
    }

    // The broken hook: failed at each attempt's end (write, review, write, review), each with its error; the run went on.
    const broken = runs.filter((run) => run.hook === "broken");
    const ends = seen.filter((event) => event === "loop.node.terminal").length;
    expect(ends).toBe(4);
    expect(broken).toHaveLength(ends);
    for (const run of broken)
      expect(run).toMatchObject({ event: "loop.node.terminal", outcome: "failed", error: expect.stringMatching(/3|no tracker to report to/) });

    // The lifecycle hook: one call at the spawn, its empty answer the empty patch.
    expect(runs.filter((run) => run.hook === "spawn-note")).toEqual([expect.objectContaining({ event: "session_spawned", outcome: "applied" })]);

    const table = await p.cli(["hooks", "runs", "--hook", "broken"]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.split("\n").filter((line) => /broken\s+loop\.node\.terminal\s+local:demo#1\s+failed\s+\d+ ms/.test(line))).toHaveLength(ends);
    const info = jsonOf<{ lastRuns: Run[] }>(await p.cli(["hooks", "info", "broken", "--json"]));
    expect(info.lastRuns.map((run) => run.outcome)).toEqual(["failed", "failed", "failed", "failed"]);
  });
});
