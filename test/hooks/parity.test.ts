import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES } from "../../src/events/catalog.js";
import { LifecycleHooks } from "../../src/sdk/hooks/base.js";
import { LIFECYCLE_POINTS } from "../../src/sdk/hooks/catalog.js";
import type { FieldSpec, HookPoint } from "../../src/sdk/hooks/catalog.js";
import { REPO_ROOT, jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

/**
 * A point is declared in four places — the catalog, the SDK base class, the user guide's table and
 * `the-loop hooks points` — and R1.4 asks that adding one fails the suite until all of them agree.
 * Each check below compares a side with the catalog, so a drift on either side is caught.
 */

const POINTS: readonly HookPoint[] = LIFECYCLE_POINTS;

/** A field as a table cell lists it: its name, and its kind (a cell omits `string`, the common one). */
interface ListedField {
  readonly name: string;
  readonly kind: string;
}

interface DocRow {
  readonly point: string;
  readonly fires: string;
  readonly facts: ListedField[];
  readonly decisions: ListedField[];
  readonly applies: string;
}

function catalogFields(fields: Readonly<Record<string, FieldSpec>>): ListedField[] {
  return Object.entries(fields).map(([name, spec]) => ({ name, kind: spec.kind }));
}

function splitRow(line: string): string[] {
  // `\|` inside a cell is a literal bar, not a column break.
  return line
    .trim()
    .replace(/^\||\|$/g, "")
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
}

/**
 * `` `name` (kind), `name` `` → its fields; `—` → none. Anything else in the cell is a format
 * error, so a doc row cannot pass by listing a field in prose the parser does not read.
 */
function parseFields(cell: string, where: string): ListedField[] {
  if (cell === "—") return [];
  return cell.split(/,\s*/).map((item) => {
    const match = /^`([A-Za-z][A-Za-z0-9]*)`(?: \(([a-z[\]-]+)\))?$/.exec(item.trim());
    if (!match) throw new Error(`${where}: "${item}" is not \`name\` or \`name\` (kind)`);
    return { name: match[1] ?? "", kind: match[2] ?? "string" };
  });
}

/** The rows of the table under "## The points" in docs/hooks.md. */
function docRows(markdown: string): DocRow[] {
  const section = /^## The points\n([\s\S]*?)(?=^## )/m.exec(markdown)?.[1];
  if (section === undefined) throw new Error('docs/hooks.md has no "## The points" section');
  // The first table of the section: its lines up to the first line that is not a row.
  const all = section.split("\n");
  const start = all.findIndex((line) => line.startsWith("|"));
  const end = all.findIndex((line, index) => index > start && !line.startsWith("|"));
  const lines = all.slice(start, end === -1 ? undefined : end);
  const header = splitRow(lines[0] ?? "");
  expect(header).toEqual(["point", "when it fires", "facts", "decisions", "how the decision applies"]);
  return lines.slice(2).map((line) => {
    const cells = splitRow(line);
    const point = /^`([a-z_]+)`$/.exec(cells[0] ?? "")?.[1];
    if (point === undefined || cells.length !== header.length) throw new Error(`malformed points row: ${line}`);
    return {
      point,
      fires: cells[1] ?? "",
      facts: parseFields(cells[2] ?? "", `${point} facts`),
      decisions: parseFields(cells[3] ?? "", `${point} decisions`),
      applies: cells[4] ?? "",
    };
  });
}

const POINT_LIKE = /^[a-z][A-Za-z0-9]*$/;

/** Text as a reader sees it: runs of white space are one space. */
const prose = (text: string): string => text.replace(/\s+/g, " ").trim();

/** `work_item_start` → `WorkItemStartContext`: the context type the SDK exports for a point. */
const contextType = (point: string): string =>
  `${point
    .split("_")
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("")}Context`;

/**
 * The "how the decision applies" cell against the catalog: for each decision, in catalog order,
 * `` `name`: `` and then the catalog's own `applies` text (the SDK's word, which `the-loop hooks
 * points` prints), optionally followed by what the guide adds; no other decision. A point without
 * decisions says "None".
 */
function checkApplies(point: HookPoint, cell: string): void {
  const text = prose(cell);
  const decisions = Object.entries(point.decisions);
  const named = [...text.matchAll(/`([A-Za-z]+)`: /g)].map((match) => match[1]);
  expect(named, `${point.name}: the decisions the "how the decision applies" cell explains, in order`).toEqual(decisions.map(([name]) => name));
  if (decisions.length === 0) {
    expect(text, `${point.name}: a point without decisions`).toMatch(/^None\b/);
    return;
  }
  let from = 0;
  for (const [name, spec] of decisions) {
    const stated = `\`${name}\`: ${prose(spec.applies)}`;
    const at = text.indexOf(stated, from);
    expect(at, `${point.name}: the cell states "${stated}" (the catalog's applies text), after the previous decision`).toBeGreaterThanOrEqual(from);
    from = at + stated.length;
  }
  expect(text.startsWith(`\`${decisions[0]?.[0]}\`: `), `${point.name}: the cell starts with its first decision`).toBe(true);
}

describe("the lifecycle points agree everywhere", () => {
  it("gives every point a method on LifecycleHooks, and the base class no method the catalog lacks", () => {
    const prototype = LifecycleHooks.prototype as unknown as Record<string, unknown>;
    for (const point of POINTS) {
      expect(typeof prototype[point.method], `LifecycleHooks.prototype.${point.method} (${point.name})`).toBe("function");
    }
    const methods = Object.getOwnPropertyNames(LifecycleHooks.prototype).filter(
      (name) => name !== "constructor" && POINT_LIKE.test(name) && typeof prototype[name] === "function",
    );
    expect(methods.sort()).toEqual(POINTS.map((point) => point.method).sort());
  });

  it("passes through at every point of the base class", async () => {
    class Passing extends LifecycleHooks {}
    const executor = new Passing() as unknown as Record<string, (context: unknown) => unknown>;
    for (const point of POINTS) {
      // A missing method fails here, not as an optional call that is undefined like a pass.
      const method = executor[point.method];
      expect(typeof method, `${point.method} is a method`).toBe("function");
      expect(await method?.call(executor, {}), point.method).toBeUndefined();
    }
  });

  it("states each point's decisions in the SDK method's doc comment", async () => {
    const source = await readFile(`${REPO_ROOT}/src/sdk/hooks/base.ts`, "utf8");
    for (const point of POINTS) {
      // The doc comment right before the method: no `*/` between its start and the method.
      const comment = new RegExp(`/\\*\\*((?:(?!\\*/)[^])*)\\*/\\s*${point.method}\\(`).exec(source)?.[1];
      expect(comment, `${point.method} has a doc comment`).toBeDefined();
      const listed = /Decisions: ([^.]*)\./.exec(comment ?? "")?.[1];
      const names = listed === undefined ? [] : [...listed.matchAll(/`([A-Za-z]+)`/g)].map((match) => match[1]);
      expect(names, `${point.method}'s doc comment`).toEqual(Object.keys(point.decisions));
      if (names.length === 0) expect(comment, `${point.method} says it has no decisions`).toMatch(/No decisions/);
    }
  });

  it("documents every point in docs/hooks.md's table with exactly its facts and decisions", async () => {
    const rows = docRows(await readFile(`${REPO_ROOT}/docs/hooks.md`, "utf8"));
    const catalogNames = POINTS.map((point) => point.name);
    const unknown = rows.map((row) => row.point).filter((name) => !catalogNames.includes(name));
    expect(unknown, "docs rows naming no point of the catalog").toEqual([]);
    expect(
      rows.map((row) => row.point),
      "one row per point, in catalog order",
    ).toEqual(catalogNames);
    for (const point of POINTS) {
      const row = rows.find((candidate) => candidate.point === point.name);
      expect(row?.facts, `${point.name} facts`).toEqual(catalogFields(point.facts));
      expect(row?.decisions, `${point.name} decisions`).toEqual(catalogFields(point.decisions));
    }
  });

  it("says in docs/hooks.md's table when each point fires and how each decision applies, as the catalog does (R2.5)", async () => {
    const rows = docRows(await readFile(`${REPO_ROOT}/docs/hooks.md`, "utf8"));
    for (const point of POINTS) {
      const row = rows.find((candidate) => candidate.point === point.name);
      expect(row, point.name).toBeDefined();
      if (row === undefined) continue;
      // The catalog's sentence first; the guide may say more after it (what is not wired yet).
      expect(prose(row.fires).startsWith(prose(point.fires)), `${point.name}: "when it fires" starts with the catalog's "${point.fires}"`).toBe(true);
      checkApplies(point, row.applies);
    }
  });

  it("names every point's method and context type wherever the guide, the SDK entry and the README list them", async () => {
    const guide = await readFile(`${REPO_ROOT}/docs/hooks.md`, "utf8");
    const sdk = await readFile(`${REPO_ROOT}/src/sdk/hooks/index.ts`, "utf8");
    const readme = await readFile(`${REPO_ROOT}/README.md`, "utf8");
    const methods = /\*\*One method per point\*\*([\s\S]*?)\n- /.exec(guide)?.[1] ?? "";
    const exports = /The SDK, `the-loop\/sdk\/hooks`, exports([\s\S]*?)\n(?:- |\n)/.exec(guide)?.[1] ?? "";
    const readmeSection = /## Lifecycle hooks\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? "";
    const listed = (text: string, pattern: RegExp): string[] => [...text.matchAll(pattern)].map((match) => match[1] ?? "");
    expect(listed(methods, /`([a-zA-Z]+)\(context\)`/g), "docs/hooks.md: the methods, in catalog order").toEqual(POINTS.map((point) => point.method));
    expect(listed(exports, /`([A-Za-z]+Context)`/g), "docs/hooks.md: the context types the SDK exports").toEqual(
      POINTS.map((point) => contextType(point.name)),
    );
    for (const point of POINTS) {
      expect(sdk, `src/sdk/hooks/index.ts exports ${contextType(point.name)}`).toMatch(new RegExp(`\\b${contextType(point.name)}\\b`));
    }
    const readmePoints = /^Your code, run at the moments[^—]*— ([^.]*)\./m.exec(readmeSection)?.[1] ?? "";
    expect(listed(readmePoints, /`([a-z_]+)`/g), "README.md: the points, in catalog order").toEqual(POINTS.map((point) => point.name));
  });

  it("prints the catalog as it is from `the-loop hooks points --json`", async () => {
    const cwd = await tempDir();
    const result = await runCli(["hooks", "points", "--family", "lifecycle", "--json"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(jsonOf(result)).toEqual(JSON.parse(JSON.stringify(LIFECYCLE_POINTS)));
  });

  it("keeps the event catalog out of the hook points (R1.3)", () => {
    const points = new Set<string>(POINTS.map((point) => point.name));
    expect(EVENT_TYPES.filter((type) => points.has(type))).toEqual([]);
  });
});
