import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LOOP_POINTS } from "../../src/capabilities/manifest.js";
import { REPO_ROOT, jsonOf, runCli } from "../support/cli.js";
import { capabilityProject } from "../support/capability-fixture.js";
import { tempDir } from "../support/temp.js";

const FIXTURE = {
  manifest: {
    id: "fixture",
    version: "1.0.0",
    description: "A step, a contribution and a gate at plan:pre.",
    config: { "fixture.review": false },
    commands: [{ name: "fixture check", argv: ["node", "bin/check.mjs"] }],
    steps: [
      { point: "plan:pre", ref: { command: "fixture check" } },
      { point: "plan:pre", ref: { agent: "reviewer" }, onError: "halt", when: "fixture.review" },
    ],
    contributions: [{ point: "plan:pre", into: "planner", fragment: { inline: "Plan the tests first." } }],
    gates: [
      {
        point: "plan:pre",
        check: { predicate: { kind: "artifact-exists", artifact: "PLAN.md" } },
        blocking: true,
        onError: "halt",
        message: "Write PLAN.md first.",
      },
    ],
  },
  files: { "bin/check.mjs": "process.stdout.write(JSON.stringify({ block: false }));\n" },
};

interface Envelope {
  point: string;
  activeHooks: { source: string }[];
  rendered: string;
}

const STEP = { capId: "fixture", kind: "step", ref: { command: "fixture check" }, onError: "skip", source: "steps[0]" };
const CONTRIBUTION = { capId: "fixture", kind: "contribution", into: "planner", fragment: { inline: "Plan the tests first." }, source: "contributions[0]" };
const GATE = {
  capId: "fixture",
  kind: "gate",
  check: { predicate: { kind: "artifact-exists", artifact: "PLAN.md" } },
  blocking: true,
  onError: "halt",
  message: "Write PLAN.md first.",
  source: "gates[0]",
};

describe("the-loop loop render-hooks", () => {
  it("prints exactly the envelope of a point with a step, a contribution and a gate", async () => {
    const p = await capabilityProject({ fixture: FIXTURE });
    const result = await runCli(["loop", "render-hooks", "plan:pre", "--raw"], { cwd: p.cwd });
    expect(result.code, result.stderr).toBe(0);
    const rendered = [
      '### Step 1: {"command":"fixture check"} (fixture)',
      "- onError: skip",
      "",
      '<contribution from="fixture" into="planner">',
      "Plan the tests first.",
      "</contribution>",
      "",
      '**Gate** (fixture): check={"predicate":{"kind":"artifact-exists","artifact":"PLAN.md"}}, blocking=true, onError=halt',
    ].join("\n");
    expect(result.stdout).toBe(`${JSON.stringify({ point: "plan:pre", activeHooks: [STEP, CONTRIBUTION, GATE], rendered }, null, 2)}\n`);
    expect(result.stderr).toBe("");

    // --json is the same; without either, the rendered text for a person.
    expect((await runCli(["loop", "render-hooks", "plan:pre", "--json"], { cwd: p.cwd })).stdout).toBe(result.stdout);
    const text = await runCli(["loop", "render-hooks", "plan:pre"], { cwd: p.cwd });
    expect(text).toEqual({ code: 0, stdout: `${rendered}\n`, stderr: "" });
  });

  it("prints the empty envelope of a point no hook names, with or without capabilities", async () => {
    const p = await capabilityProject({ fixture: FIXTURE });
    const empty = { point: "ship:post", activeHooks: [], rendered: "_No active hooks at ship:post._" };
    const result = await runCli(["loop", "render-hooks", "ship:post", "--raw"], { cwd: p.cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${JSON.stringify(empty, null, 2)}\n`);
    const none = await runCli(["loop", "render-hooks", "ship:post", "--raw"], { cwd: await tempDir() });
    expect(none.code, none.stderr).toBe(0);
    expect(jsonOf(none)).toEqual(empty);
  });

  it.each([
    ["an unknown point", "plan:during", /Invalid loop point: "plan:during"/],
    ["a point with a trailing space", "plan:pre ", /Invalid loop point: "plan:pre "/],
    ["execute:task", "execute:task", /execute:task has no hooks to render: .*the-loop task resolve-content/],
  ])("exits 1 on %s, as gsd-core does, listing the twelve points", async (_what, point, message) => {
    const result = await runCli(["loop", "render-hooks", point, "--raw"], { cwd: await tempDir() });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toContain(LOOP_POINTS.join(", "));
  });

  it("checks --work-item as a ref, and the envelope does not depend on it", async () => {
    const p = await capabilityProject({ fixture: FIXTURE });
    const without = await runCli(["loop", "render-hooks", "plan:pre", "--raw"], { cwd: p.cwd });
    const withRef = await runCli(["loop", "render-hooks", "plan:pre", "--work-item", "7", "--raw"], { cwd: p.cwd });
    expect(withRef.code, withRef.stderr).toBe(0);
    expect(withRef.stdout).toBe(without.stdout);
    const bad = await runCli(["loop", "render-hooks", "plan:pre", "--work-item", "nonsense", "--raw"], { cwd: p.cwd });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--work-item: invalid work item reference");
  });

  it("activates a when-gated hook for a truthy value, refusing a value of another type than the key's", async () => {
    const p = await capabilityProject({ fixture: FIXTURE });
    const sources = async (): Promise<string[]> => {
      const result = await runCli(["loop", "render-hooks", "plan:pre", "--raw"], { cwd: p.cwd });
      expect(result.code, result.stderr).toBe(0);
      return jsonOf<Envelope>(result).activeHooks.map((hook) => hook.source);
    };
    expect(await sources()).toEqual(["steps[0]", "contributions[0]", "gates[0]"]);
    await p.install({ fixture: { "fixture.review": true } });
    expect(await sources()).toEqual(["steps[0]", "steps[1]", "contributions[0]", "gates[0]"]);
    await p.install({ fixture: { "fixture.review": "true" } });
    const refused = await runCli(["loop", "render-hooks", "plan:pre", "--raw"], { cwd: p.cwd });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('config.fixture.review: "true" is a string; the key is declared boolean');
    await p.install({ fixture: { "fixture.review": false } });
    expect(await sources()).toEqual(["steps[0]", "contributions[0]", "gates[0]"]);
  });

  it("refuses a config value for a key the manifest does not declare, naming the entry and the key", async () => {
    const p = await capabilityProject({ fixture: FIXTURE });
    await p.install({ fixture: { "fixture.reveiw": true } });
    const result = await runCli(["loop", "render-hooks", "plan:pre", "--raw"], { cwd: p.cwd });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("capabilities[0]");
    expect(result.stderr).toContain('config.fixture.reveiw: "fixture.reveiw" is not a key of fixture\'s config (it declares "fixture.review")');
  });

  it("refuses a bundle changed since consent, naming the command that consents again", async () => {
    const p = await capabilityProject({ fixture: FIXTURE });
    const dir = p.bundles.fixture ?? "";
    await writeFile(join(dir, "bin", "check.mjs"), "process.exit(0);\n");
    const result = await runCli(["loop", "render-hooks", "plan:pre", "--raw"], { cwd: p.cwd });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`the-loop capabilities add "${dir}" --yes`);
  });
});

describe("a capability's config values and its consent", () => {
  it("leaves the consented hash alone when a value changes, and keeps the values when consent is given again", async () => {
    const p = await capabilityProject({ fixture: FIXTURE });
    await p.install({ fixture: { "fixture.review": true } });
    const before = await readFile(p.configFile, "utf8");
    const listed = await runCli(["capabilities", "list", "--json"], { cwd: p.cwd });
    expect(jsonOf<{ capabilities: { matches: boolean }[] }>(listed).capabilities[0]?.matches).toBe(true);

    const dir = p.bundles.fixture ?? "";
    await writeFile(join(dir, "bin", "check.mjs"), "process.stdout.write('{\"block\":false}');\n");
    const again = await runCli(["capabilities", "add", dir, "--yes", "--json"], { cwd: p.cwd });
    expect(again.code, again.stderr).toBe(0);
    const after = await readFile(p.configFile, "utf8");
    expect(after).not.toBe(before);
    expect(after).toContain("fixture.review: true");
    const result = await runCli(["loop", "render-hooks", "plan:pre", "--raw"], { cwd: p.cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(jsonOf<Envelope>(result).activeHooks.map((hook) => hook.source)).toContain("steps[1]");
  });
});

describe("gsd-core's bundles through the command line", () => {
  const ROOT = join(REPO_ROOT, "test/fixtures/gsd-core");
  it("installs each unchanged with capabilities add --yes, and render-hooks prints gsd-core's envelope at every point", async () => {
    const p = await capabilityProject({});
    for (const id of ["hello-note", "intel", "schema-gate", "security", "tdd", "ui"]) {
      const added = await runCli(["capabilities", "add", join(ROOT, "bundles", id), "--yes"], { cwd: p.cwd });
      expect(added.code, added.stderr).toBe(0);
      if (id === "hello-note") expect(added.stdout).toContain("executable surfaces: none — declarative-only");
      if (id === "ui") expect(added.stdout).toContain("it HALTS plan:pre while workflow.ui_safety_gate is true");
    }
    const expected = JSON.parse(await readFile(join(ROOT, "expected/default.json"), "utf8")) as {
      envelopes: Record<string, { activeHooks: unknown[]; rendered: string }>;
    };
    for (const point of LOOP_POINTS) {
      const result = await runCli(["loop", "render-hooks", point, "--raw"], { cwd: p.cwd });
      expect(result.code, result.stderr).toBe(0);
      const ours = jsonOf<{ activeHooks: Record<string, unknown>[]; rendered: string }>(result);
      expect(ours.rendered, point).toBe(expected.envelopes[point]?.rendered);
      expect(
        ours.activeHooks.map(({ source: _source, ...hook }) => hook),
        point,
      ).toEqual(expected.envelopes[point]?.activeHooks);
    }
    const unknown = JSON.parse(await readFile(join(ROOT, "expected/unknown-point.json"), "utf8")) as { point: string; exitCode: number };
    expect((await runCli(["loop", "render-hooks", unknown.point, "--raw"], { cwd: p.cwd })).code).toBe(unknown.exitCode);
  });
});
