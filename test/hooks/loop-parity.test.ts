import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../../src/events/catalog.js";
import { LifecycleHooks, LoopHooks, isLifecycleHooksClass } from "../../src/sdk/hooks/base.js";
import { LIFECYCLE_POINTS } from "../../src/sdk/hooks/catalog.js";
import { LOOP_CONTEXT_FIELDS, LOOP_POINTS } from "../../src/sdk/hooks/loop-catalog.js";
import { REPO_ROOT, jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

/**
 * The loop family is declared in the same four places as the lifecycle points — the catalog,
 * the SDK base class, the user guide and `the-loop hooks points` — and each check below
 * compares one of them with the catalog.
 */

const POINT_LIKE = /^[a-z][A-Za-z0-9]*$/;
const cells = (line: string): string[] =>
  line
    .trim()
    .replace(/^\||\|$/g, "")
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
const names = (cell: string): string[] => [...cell.matchAll(/`([a-z_]+)`/g)].map((match) => match[1] ?? "");
const prose = (text: string): string => text.replace(/\s+/g, " ").trim();

/** The rows of the first table after `heading`'s text in the loop family's section. */
async function tableAfter(marker: RegExp): Promise<string[][]> {
  const guide = await readFile(`${REPO_ROOT}/docs/hooks.md`, "utf8");
  const section = /^## The loop family\n([\s\S]*?)(?=^## )/m.exec(guide)?.[1];
  if (section === undefined) throw new Error('docs/hooks.md has no "## The loop family" section');
  const from = section.search(marker);
  expect(from, String(marker)).toBeGreaterThanOrEqual(0);
  const lines = section.slice(from).split("\n");
  const start = lines.findIndex((line) => line.startsWith("|"));
  const end = lines.findIndex((line, index) => index > start && !line.startsWith("|"));
  return lines.slice(start + 2, end).map(cells);
}

describe("the loop family agrees everywhere", () => {
  it("is seven events, only the two .pre deny, every one opt-in", () => {
    expect(LOOP_POINTS.map((point) => point.name)).toEqual([
      "loop.started",
      "loop.generation.pre",
      "loop.generation.post",
      "loop.gate.pre",
      "loop.gate.post",
      "loop.node.terminal",
      "loop.terminal",
    ]);
    for (const point of LOOP_POINTS) {
      expect([point.family, point.optIn, point.synchronous, point.canDeny], point.name).toEqual([
        "loop",
        true,
        point.name.endsWith(".pre"),
        point.name.endsWith(".pre"),
      ]);
      expect(Object.keys(point.decisions), point.name).toEqual(point.canDeny ? ["denied", "deny_reason", "deny"] : ["labels"]);
      expect(Object.keys(point.facts).slice(0, LOOP_CONTEXT_FIELDS.length), point.name).toEqual([...LOOP_CONTEXT_FIELDS]);
    }
  });

  it("gives every event a method on LoopHooks, and LoopHooks no method of its own the catalog lacks", () => {
    const prototype = LoopHooks.prototype as unknown as Record<string, unknown>;
    const own = Object.getOwnPropertyNames(LoopHooks.prototype).filter(
      (name) => name !== "constructor" && POINT_LIKE.test(name) && typeof prototype[name] === "function",
    );
    expect(own.sort()).toEqual(LOOP_POINTS.map((point) => point.method).sort());
    // One class serves both families: the lifecycle methods are inherited.
    for (const point of LIFECYCLE_POINTS) expect(typeof prototype[point.method], point.method).toBe("function");
  });

  it("passes at every event, and counts a subclass as a hook class but neither base", async () => {
    class Passing extends LoopHooks {}
    const executor = new Passing() as unknown as Record<string, (payload: unknown) => unknown>;
    for (const point of LOOP_POINTS) {
      // A missing method fails here, not as an optional call that is undefined like a pass.
      const method = executor[point.method];
      expect(typeof method, `${point.method} is a method`).toBe("function");
      expect(await method?.call(executor, {}), point.method).toBeUndefined();
    }
    expect([isLifecycleHooksClass(Passing), isLifecycleHooksClass(LoopHooks), isLifecycleHooksClass(LifecycleHooks)]).toEqual([true, false, false]);
  });

  it("states each event's decisions in the SDK method's doc comment", async () => {
    const source = await readFile(`${REPO_ROOT}/src/sdk/hooks/base.ts`, "utf8");
    for (const point of LOOP_POINTS) {
      const comment = new RegExp(`/\\*\\*((?:(?!\\*/)[^])*)\\*/\\s*${point.method}\\(`).exec(source)?.[1] ?? "";
      const listed = /Decisions: ([^.]*)\./.exec(comment)?.[1] ?? "";
      expect(names(listed), point.method).toEqual(Object.keys(point.decisions));
    }
  });

  it("lists every event in docs/hooks.md with when it fires, its own fields and whether it denies", async () => {
    const rows = await tableAfter(/^\| event \| when it fires/m);
    expect(rows.map((row) => (row[0] ?? "").replaceAll("`", ""))).toEqual(LOOP_POINTS.map((point) => point.name));
    for (const point of LOOP_POINTS) {
      const row = rows.find((candidate) => candidate[0] === `\`${point.name}\``) ?? [];
      expect(prose(row[1] ?? "").startsWith(prose(point.fires)), `${point.name} fires`).toBe(true);
      expect(names(row[2] ?? ""), `${point.name} fields`).toEqual(Object.keys(point.facts).filter((field) => !LOOP_CONTEXT_FIELDS.includes(field)));
      expect(row[3], `${point.name} denies`).toBe(point.canDeny ? "yes" : "no");
    }
  });

  it("describes every payload field in docs/hooks.md with its kind, and says when each is omitted", async () => {
    const rows = await tableAfter(/^\| field \| kind \| what it holds in the-loop/m);
    const specs = new Map<string, { kind: string; optional?: boolean }>();
    for (const point of LOOP_POINTS) for (const [name, spec] of Object.entries(point.facts)) specs.set(name, spec);
    expect(rows.map((row) => names(row[0] ?? "")[0]).sort()).toEqual([...specs.keys()].sort());
    for (const row of rows) {
      const field = names(row[0] ?? "")[0] ?? "";
      const spec = specs.get(field);
      expect(row[1], `${field} kind`).toBe(spec?.kind);
      // agh's omitempty: a loop field is omitted where it has no value, never null.
      expect((spec as { nullable?: boolean } | undefined)?.nullable, `${field} is never null`).toBeUndefined();
      if (spec?.optional !== true) expect(row[3], `${field} is never omitted`).toBe("never");
      else expect(row[3], `${field} says when it is omitted`).not.toBe("never");
    }
  });

  it("names every payload type and method in the guide and the SDK entry", async () => {
    const guide = await readFile(`${REPO_ROOT}/docs/hooks.md`, "utf8");
    const sdk = await readFile(`${REPO_ROOT}/src/sdk/hooks/index.ts`, "utf8");
    for (const point of LOOP_POINTS) {
      const type = `${point.method.charAt(0).toUpperCase()}${point.method.slice(1)}Payload`;
      expect(guide, type).toContain(`\`${type}\``);
      expect(sdk, type).toMatch(new RegExp(`\\b${type}\\b`));
      expect(guide, point.method).toContain(`\`${point.method}(payload)\``);
    }
  });

  it("prints the family as it is from `the-loop hooks points --family loop --json`, and both without --family", async () => {
    const cwd = await tempDir();
    const loop = await runCli(["hooks", "points", "--family", "loop", "--json"], { cwd });
    expect(loop.code, loop.stderr).toBe(0);
    expect(jsonOf(loop)).toEqual(JSON.parse(JSON.stringify(LOOP_POINTS)));
    const both = await runCli(["hooks", "points", "--json"], { cwd });
    expect(jsonOf(both)).toEqual(JSON.parse(JSON.stringify([...LIFECYCLE_POINTS, ...LOOP_POINTS])));
  });

  it("keeps the event catalog out of the loop events", () => {
    const events = new Set<string>(LOOP_POINTS.map((point) => point.name));
    expect(EVENT_TYPES.filter((type) => events.has(type))).toEqual([]);
  });
});
