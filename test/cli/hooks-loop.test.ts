import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LIFECYCLE_POINTS } from "../../src/sdk/hooks/catalog.js";
import { LOOP_CONTEXT_FIELDS, LOOP_POINTS, LOOP_POINT_NAMES } from "../../src/sdk/hooks/loop-catalog.js";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

async function project(yaml: string): Promise<string> {
  const cwd = await tempDir();
  await mkdir(join(cwd, ".the-loop"));
  await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), yaml);
  return cwd;
}

describe("the-loop hooks points --family", () => {
  it("--family loop lists the seven events, which can deny, their own fields, and the loop context once", async () => {
    const result = await runCli(["hooks", "points", "--family", "loop"], { cwd: await tempDir() });
    expect(result.code, result.stderr).toBe(0);
    for (const point of LOOP_POINTS) {
      const block = new RegExp(`^${point.name.replaceAll(".", "\\.")}\\n([\\s\\S]*?)(?:\\n\\n|(?![\\s\\S]))`, "m").exec(result.stdout)?.[1] ?? "";
      expect(block, point.name).toMatch(new RegExp(`^ {2}method: {4}${point.method}$`, "m"));
      expect(block, point.name).toMatch(point.canDeny ? /^ {2}denies: {4}yes/m : /^ {2}denies: {4}no/m);
      for (const field of Object.keys(point.facts).filter((name) => !LOOP_CONTEXT_FIELDS.includes(name))) {
        expect(block, `${point.name}.${field}`).toMatch(new RegExp(`^ {13}${field}: `, "m"));
      }
      for (const decision of Object.keys(point.decisions)) expect(block, `${point.name} ${decision}`).toContain(`${decision}: `);
    }
    expect(result.stdout.match(/resolved_network_participation: json-object/g)).toHaveLength(1);
    expect(result.stdout).not.toMatch(/^work_item_start$/m);
    for (const line of result.stdout.split("\n")) expect(line.length, line).toBeLessThanOrEqual(80);
  });

  it("marks each field agh omits where it has no value as optional, and each loop event as opt-in", async () => {
    const result = await runCli(["hooks", "points", "--family", "loop"], { cwd: await tempDir() });
    expect(result.code, result.stderr).toBe(0);
    const text = result.stdout.replace(/\s+/g, " ");
    for (const point of LOOP_POINTS) {
      const block = new RegExp(`^${point.name.replaceAll(".", "\\.")}\\n([\\s\\S]*?)(?:\\n\\n|(?![\\s\\S]))`, "m").exec(result.stdout)?.[1] ?? "";
      expect(block, point.name).toMatch(/^ {2}opt-in: {4}yes: only an entry whose on names it runs here$/m);
      const fields: [string, { kind: string; optional?: boolean; nullable?: boolean }][] = [...Object.entries(point.facts), ...Object.entries(point.decisions)];
      for (const [name, spec] of fields) {
        const kind = spec.nullable === true ? `${spec.kind} or null` : spec.optional === true ? `${spec.kind}, optional` : spec.kind;
        expect(text, `${point.name}.${name}`).toContain(`${name}: ${kind} — `);
      }
    }
    expect(text).toContain("parent_loop_run_id: string, optional — ");
    expect(text).toContain("loop_run_id: string — ");
    expect(text).toContain("A key marked optional is omitted where it has no value (agh's omitempty), never null");
  });

  it("--family lifecycle lists the lifecycle points only; no flag lists both, grouped", async () => {
    const cwd = await tempDir();
    const lifecycle = await runCli(["hooks", "points", "--family", "lifecycle"], { cwd });
    expect(lifecycle.code, lifecycle.stderr).toBe(0);
    expect(lifecycle.stdout).not.toMatch(/^loop\./m);
    const both = await runCli(["hooks", "points"], { cwd });
    const order = [...LIFECYCLE_POINTS, ...LOOP_POINTS].map((point) => both.stdout.search(new RegExp(`^${point.name.replaceAll(".", "\\.")}$`, "m")));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(both.stdout).toMatch(/^== Lifecycle points: /m);
    expect(both.stdout).toMatch(/^== Loop events: /m);
  });

  it("refuses a family that does not exist", async () => {
    const result = await runCli(["hooks", "points", "--family", "loops"], { cwd: await tempDir() });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/lifecycle, loop/);
  });
});

describe("the-loop config validate with loop.* entries", () => {
  it("accepts exact loop events, and reports a pattern and a required loop-only entry naming the valid events", async () => {
    const cwd = await project(`state:
  root: s
hooks:
  - name: fine
    url: https://hooks.example.com/
    on: [loop.started, loop.gate.pre]
  - name: pattern
    url: https://hooks.example.com/
    on: ["loop.*"]
  - name: strict
    url: https://hooks.example.com/
    on: [loop.generation.pre]
    required: true
`);
    const result = await runCli(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `hooks[1] "pattern": on names "loop.*", a pattern; on takes exact names, no wildcards, so list each one: the loop events are ${LOOP_POINT_NAMES.join(", ")}`,
    );
    expect(result.stderr).toContain('hooks[2] "strict": required: true on an entry that runs only at loop events (loop.generation.pre)');
    expect(result.stderr).not.toContain('"fine"');
  });

  it("lists an entry naming loop events under `the-loop hooks`", async () => {
    const cwd = await project(`hooks:
  - name: observer
    url: https://hooks.example.com/
    on: [loop.terminal]
`);
    const result = await runCli(["hooks", "--json"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject([{ name: "observer", points: ["loop.terminal"] }]);
  });
});
