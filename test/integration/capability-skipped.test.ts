import { cp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { REPO_ROOT, jsonOf } from "../support/cli.js";
import type { ClaimJson } from "../support/graph.js";
import { graphProject } from "../support/graph.js";
import type { TestProject } from "../support/project.js";

/**
 * Every hook the daemon skips says so, by name, in an event and in `the-loop why` (issue 27, "Done
 * when"). gsd-core's `intel` and `tdd` bundles, installed unchanged with their off-by-default keys
 * turned on: intel's plan:pre step names a command no bundle declares (it fails and, onError
 * skip, is skipped), and tdd's execute:post gate queries `tdd.review-checkpoint`, a dotted query
 * the contract's pattern refuses (never run, its check counts as failed, onError skip: skipped).
 * Neither stops the item.
 */

const REF = "local:demo#1";
const BUNDLES = join(REPO_ROOT, "test", "fixtures", "gsd-core", "bundles");

const GRAPH = {
  name: "build",
  start: "implement",
  nodes: [
    { id: "implement", phase: "implementation", description: "Write out.md.", produces: ["out.md"], points: ["plan:pre", "execute:post"] },
    { id: "done", phase: "done", terminal: true },
  ],
  edges: [{ from: "implement", to: "done", on: "pass" }],
};

interface WhyJson {
  readonly events: readonly { readonly event: string; readonly says: string }[];
}

/** Installs gsd-core's bundle `id` unchanged, then sets the operator's values on its config entry. */
async function install(p: TestProject, id: string, values: Record<string, unknown>): Promise<void> {
  await cp(join(BUNDLES, id), join(p.dir, "capabilities", id), { recursive: true });
  const added = await p.cli(["capabilities", "add", `capabilities/${id}`, "--yes"]);
  expect(added.code, added.stderr).toBe(0);
  const file = join(p.root, "cli-config.yaml");
  const doc = parseDocument(await readFile(file, "utf8"));
  const entries = doc.get("capabilities") as { items: { get(key: string): unknown; set(key: string, value: unknown): void }[] };
  const entry = entries.items.find((item) => String(item.get("path")).endsWith(`capabilities/${id}`));
  entry?.set("config", doc.createNode(values));
  await writeFile(file, doc.toString());
}

async function project(): Promise<TestProject> {
  const p = await graphProject(GRAPH);
  await install(p, "intel", { "intel.enabled": true });
  await install(p, "tdd", { "workflow.tdd_mode": true });
  const valid = await p.cli(["config", "validate"]);
  expect(valid.code, valid.stderr + valid.stdout).toBe(0);
  return p;
}

describe("hooks the daemon skips (gsd-core's bundles, unchanged)", () => {
  it("records each skipped hook by name, and `why` says it was skipped and why; the item goes on", async () => {
    const p = await project();
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Build it", "--label", ARM, "--as", "alice"])).code).toBe(0);

    // plan:pre at the node's entry: intel's step ran its command, which no bundle declares, and was skipped.
    const step = await p.waitForEvent("intel's step", (r) => r.event === "capability.step_failed");
    expect(step).toMatchObject({
      work_item: REF,
      node: "implement",
      point: "plan:pre",
      capability: "intel",
      hook: "steps[0]",
      ref: "intel api-surface",
      on_error: "skip",
    });
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");

    // execute:post at the passing claim: tdd's dotted query is never run; the gate is skipped, the claim moves.
    await writeFile(join(p.dir, "work", "out.md"), "done\n");
    const claimed = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
    expect(jsonOf<ClaimJson>(claimed)).toMatchObject({ moved: true, node: "done", status: "done" });
    const gate = await p.waitForEvent("tdd's gate", (r) => r.event === "capability.gate_decided");
    expect(gate).toMatchObject({ work_item: REF, node: "implement", point: "execute:post", capability: "tdd", hook: "gates[0]", decision: "error-skipped" });
    expect(String(gate.error)).toContain("tdd.review-checkpoint");

    const why = await p.cli(["why", "#1", "--json"]);
    expect(why.code, why.stderr).toBe(0);
    const says = jsonOf<WhyJson>(why).events.map((event) => event.says);
    const stepLine = says.find((line) => line.includes("the capability intel's steps[0]"));
    expect(stepLine).toMatch(/failed at plan:pre \(node implement\): .*; skipped/);
    const gateLine = says.find((line) => line.includes("the capability tdd's gates[0]"));
    expect(gateLine).toMatch(
      /at execute:post \(node implement\) was skipped, its check having failed \(onError skip\): .*"tdd\.review-checkpoint" is not a command/,
    );
    const text = await p.cli(["why", "#1"]);
    expect(text.stdout).toContain("the capability intel's steps[0]");
    expect(text.stdout).toContain("the capability tdd's gates[0]");
  });
});
