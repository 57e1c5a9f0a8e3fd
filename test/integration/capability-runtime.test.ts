import { cp, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { REPO_ROOT, jsonOf } from "../support/cli.js";
import { graphStatus as graphStatusOf } from "../support/graph.js";
import type { GraphStatusJson } from "../support/graph.js";
import { FAKE_HARNESS, testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * gsd-core's `runtimeCompat` against the harnesses the-loop runs (docs/capabilities.md,
 * "Runtimes"): gsd-core's tutorial bundle, its runtimeCompat narrowed to `claude`, is refused at
 * install by a config that runs only the fake harness, and, installed beside a declared `claude`,
 * blocks an item whose session runs in the fake one at the first point it has a hook at.
 */

const REF = "local:demo#1";
const GRAPH = {
  name: "plan",
  start: "plan",
  nodes: [
    { id: "plan", phase: "planning", description: "Write PLAN.md.", produces: ["PLAN.md"], points: ["plan:pre"] },
    { id: "done", phase: "done", terminal: true },
  ],
  edges: [{ from: "plan", to: "done", on: "pass" }],
};

/** gsd-core's hello-note bundle, unchanged but for its runtimeCompat: claude only. */
async function claudeOnlyBundle(p: TestProject): Promise<string> {
  const bundle = join(p.dir, "capabilities", "hello-note");
  await cp(join(REPO_ROOT, "test", "fixtures", "gsd-core", "bundles", "hello-note"), bundle, { recursive: true });
  const file = join(bundle, "capability.json");
  const manifest = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  await writeFile(file, JSON.stringify({ ...manifest, runtimeCompat: { supported: ["claude"], unsupported: [] } }, null, 2));
  return "capabilities/hello-note";
}

const LOOP_EVENTS = ["loop.started", "loop.generation.pre", "loop.generation.post", "loop.gate.pre", "loop.gate.post", "loop.node.terminal", "loop.terminal"];

/** A command hook on every loop event that appends each payload it is given, as agh writes it on stdin. */
const RECORDER = `
import { appendFileSync } from "node:fs";
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
appendFileSync("loop-events.jsonl", Buffer.concat(chunks).toString("utf8") + "\\n");
`;

/** `graph status --json`, with the run's id, which the shared helper's type leaves out. */
const graphStatus = async (p: TestProject): Promise<GraphStatusJson & { loop_run_id: string }> =>
  (await graphStatusOf(p)) as GraphStatusJson & { loop_run_id: string };

async function recorded(p: TestProject): Promise<Record<string, unknown>[]> {
  const text = await readFile(join(p.root, "loop-events.jsonl"), "utf8").catch(() => "");
  const payloads = text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return payloads.sort((a, b) => Date.parse(String(a["timestamp"])) - Date.parse(String(b["timestamp"])));
}

async function project(harnesses?: (transcript: string) => Record<string, unknown>): Promise<TestProject> {
  const p = await testProject({
    graph: { enabled: true, default: GRAPH.name },
    graphs: [{ name: GRAPH.name, path: "graph.yaml" }],
    routing: (transcript) => ({ spawnWorkdir: "work", ...(harnesses ? { harnesses: harnesses(transcript) } : {}) }),
    hooks: [{ name: "recorder", command: [process.execPath, "record.mjs"], on: LOOP_EVENTS }],
  });
  await writeFile(join(p.root, "record.mjs"), RECORDER);
  await writeFile(join(p.root, "graph.yaml"), stringify(GRAPH));
  await mkdir(join(p.dir, "work"), { recursive: true });
  return p;
}

describe("runtimeCompat against the-loop's harnesses", () => {
  it("refuses to install a capability that supports none of the config's harnesses, naming them and the fix; the config is unchanged", async () => {
    const p = await project();
    const path = await claudeOnlyBundle(p);
    const config = await readFile(join(p.root, "cli-config.yaml"), "utf8");
    const added = await p.cli(["capabilities", "add", path, "--yes"]);
    expect(added.code).toBe(2);
    expect(added.stderr).toContain("capability hello-note supports claude, and the config runs sessions only in fake");
    expect(added.stderr).toContain("Declare a harness it supports under routing.harnesses");
    expect(await readFile(join(p.root, "cli-config.yaml"), "utf8")).toBe(config);
  });

  it("is read again by config validate and the start after a harness change: none supported fails both with the fix, some excluded warns", async () => {
    const p = await project((transcript) => ({ fake: { command: [process.execPath, FAKE_HARNESS, transcript, "{prompt}"] }, claude: {} }));
    const path = await claudeOnlyBundle(p);
    expect((await p.cli(["capabilities", "add", path, "--yes"])).code).toBe(0);

    // Installed beside claude: valid, with a warning about the fake harness it excludes.
    const valid = await p.cli(["config", "validate"]);
    expect(valid.code, valid.stderr).toBe(0);
    expect(valid.stderr).toContain("capability hello-note: runtimeCompat: it supports claude, not the harness fake");
    expect(valid.stdout).toContain("capabilities OK: hello-note");

    // The claude harness taken out of the config: the capability now supports none it runs.
    const file = join(p.root, "cli-config.yaml");
    const config = parse(await readFile(file, "utf8")) as { routing: { harnesses: Record<string, unknown> } };
    const { claude: _claude, ...others } = config.routing.harnesses;
    await writeFile(file, stringify({ ...config, routing: { ...config.routing, harnesses: others } }));

    const invalid = await p.cli(["config", "validate"]);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain("capability hello-note supports claude, and the config runs sessions only in fake");
    expect(invalid.stderr).toContain("remove its entry from `capabilities:`");
    const start = await p.cli(["start"]);
    expect(start.code).toBe(2);
    expect(start.stderr).toContain("capability hello-note supports claude, and the config runs sessions only in fake");
    // The daemon's own check, as `serve` (systemd's way in) reaches it without `start`'s.
    const served = await p.cli(["serve"]);
    expect(served.code).toBe(2);
    expect(served.stderr).toContain("capability hello-note supports claude, and the config runs sessions only in fake");
  });

  it("is read again at a config reload of the running daemon: none supported is an event and a status problem until a reload mends it", async () => {
    const p = await project((transcript) => ({ fake: { command: [process.execPath, FAKE_HARNESS, transcript, "{prompt}"] }, claude: {} }));
    const path = await claudeOnlyBundle(p);
    expect((await p.cli(["capabilities", "add", path, "--yes"])).code).toBe(0);
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    const problemsOf = async (): Promise<{ code: string; message: string; fix: string }[]> =>
      jsonOf<{ problems: { code: string; message: string; fix: string }[] }>(await p.cli(["status", "--json"])).problems;
    expect((await problemsOf()).map((problem) => problem.code)).not.toContain("capability-runtime");

    // The claude harness taken out of the running daemon's config.
    const file = join(p.root, "cli-config.yaml");
    const text = await readFile(file, "utf8");
    const config = parse(text) as { routing: { harnesses: Record<string, unknown> } };
    const { claude: _claude, ...others } = config.routing.harnesses;
    await writeFile(file, stringify({ ...config, routing: { ...config.routing, harnesses: others } }));
    const event = await p.waitForEvent("the reload's check", (r) => r.event === "capability.runtime_unsupported");
    expect(event).toMatchObject({ id: "hello-note", harnesses: ["fake"] });
    expect(String(event.reason)).toContain("capability hello-note supports claude, and the config runs sessions only in fake");
    const problem = (await problemsOf()).find((one) => one.code === "capability-runtime");
    expect(problem?.message).toMatch(/^capability "hello-note" supports none of the harnesses the config runs sessions in since the reload at .* \(fake\)/);
    expect(problem?.fix).toContain("declare a harness it supports under routing.harnesses");

    // claude declared again: the next reload says nothing, and the problem is gone.
    const reloads = (await p.events()).filter((r) => r.event === "config.reloaded").length;
    await writeFile(file, text);
    await waitFor("the mending reload", async () => (await p.events()).filter((r) => r.event === "config.reloaded").length > reloads);
    expect((await problemsOf()).map((one) => one.code)).not.toContain("capability-runtime");
  });

  it("installed beside a harness it supports, it blocks an item whose session runs in another at its first point, and says why", async () => {
    const p = await project((transcript) => ({ fake: { command: [process.execPath, FAKE_HARNESS, transcript, "{prompt}"] }, claude: {} }));
    const path = await claudeOnlyBundle(p);
    const shown = await p.cli(["capabilities", "add", path]);
    expect(shown.stdout).toContain("runtimeCompat: it supports claude, not the harness fake");
    expect((await p.cli(["capabilities", "add", path, "--yes"])).code).toBe(0);

    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Plan it", "--label", ARM, "--as", "alice"])).code).toBe(0);
    const refused = await p.waitForEvent("the refusal", (r) => r.event === "capability.runtime_refused");
    expect(refused).toMatchObject({ work_item: REF, node: "plan", point: "plan:pre", capability: "hello-note", hook: "contributions[0]", harness: "fake" });
    await waitFor("the block", async () => (await graphStatus(p)).status === "blocked");
    const state = await graphStatus(p);
    expect(state).toMatchObject({ node: "plan", status: "blocked", reason_code: "capability-runtime" });
    expect(state.reason).toContain("capability hello-note does not run in the harness fake");
    const comments = jsonOf<{ comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"])).comments;
    expect(comments.some((c) => c.body.includes("does not run in the harness of its session") && c.body.includes("--agent NAME"))).toBe(true);

    const why = jsonOf<{ events: { says: string }[] }>(await p.cli(["why", "#1", "--json"])).events.map((event) => event.says);
    expect(why).toContainEqual(
      expect.stringMatching(
        /^did not run the capability hello-note's contributions\[0\] at plan:pre \(node plan\), so the node was blocked: capability hello-note does not run in the harness fake/,
      ),
    );

    // The halt ends the loop run, as agh ends a run that cannot go on without a person: loop.terminal, blocked.
    const run = state.loop_run_id;
    const ended = await waitFor("loop.terminal", async () => (await recorded(p)).find((payload) => payload["event"] === "loop.terminal"));
    expect(ended).toMatchObject({ loop_run_id: run, status: "blocked", cause: "contract", reason_code: "capability-runtime" });
    expect((await recorded(p)).map((payload) => payload["event"])).toEqual(["loop.started", "loop.generation.pre", "loop.generation.post", "loop.terminal"]);
    // A force after it begins a new run; nothing more is sent on the ended one's id.
    const forced = await p.cli(["graph", "force", "#1", "--to", "plan", "--reason", "on to another harness"]);
    expect(forced.code, forced.stderr).toBe(0);
    const renewed = await waitFor("the new run's block", async () => {
      const now = await graphStatus(p);
      return now.loop_run_id !== run && now.status === "blocked" ? now : undefined;
    });
    const again = await waitFor("the new run's loop.terminal", async () =>
      (await recorded(p)).find((payload) => payload["event"] === "loop.terminal" && payload["loop_run_id"] === renewed.loop_run_id),
    );
    expect(again).toMatchObject({ status: "blocked", reason_code: "capability-runtime" });
    expect((await recorded(p)).filter((payload) => payload["loop_run_id"] === run).map((payload) => payload["event"])).toEqual([
      "loop.started",
      "loop.generation.pre",
      "loop.generation.post",
      "loop.terminal",
    ]);
  });
});
