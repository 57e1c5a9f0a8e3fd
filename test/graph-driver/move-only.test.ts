import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * A graph moves one way: commitMove (src/graph-driver/move.ts) foresees, asks ahead, decides
 * under the lock, writes with the effects journalled and carries them out. This fails when a move
 * is written any other way: a call of the steps commitMove owns anywhere else, or a transaction on
 * the graph state records outside the allow-list below (writers that move nothing, each with its reason).
 */

const ROOT = join(import.meta.dirname, "../..");
const MOVE_MODULE = "src/graph-driver/move.ts";

/** The steps of a move: called only by commitMove (each is defined elsewhere, and its definition is no call). */
const MOVE_STEPS = ["withPendingEffects", "committedMove", "askAhead"] as const;

/** Transactions on the graph state records that are not moves: `file:function` → why it may stay. */
const NOT_MOVES: Readonly<Record<string, string>> = {
  "src/graph-driver/carry-out.ts:carryOut": "takes a carried-out move's journal off its record: the last step of a move commitMove made",
  "src/graph-driver/carry-out.ts:rememberUndelivered":
    "delivery bookkeeping: the assignment a paused or absent session missed; node, status and effects unchanged",
  "src/graph-driver/carry-out.ts:forgetUndelivered": "delivery bookkeeping: the missed assignment delivered or gone; node, status and effects unchanged",
  "src/graph-driver/capability-points.ts:rememberPointText": "keeps the points' text for the node's assignment; node, status and effects unchanged",
  "src/graph-driver/start-claim-force.ts:refuseClaim":
    "records a refused claim (a history entry and its event) after the claim's move refused or never began; nothing moves, no effects are journalled",
  "src/graph-driver/operator-answer.ts:refuseAnswer":
    "records an operator's gate answer refused before its move began (a history entry and its event); nothing moves, no effects are journalled",
  "src/graph-driver/gate-answers.ts:refuseUnchecked":
    "records gate answers refused for want of the-loop's login (history entries and events); nothing moves, no effects are journalled",
};

interface Finding {
  readonly file: string;
  readonly line: number;
  readonly what: string;
}

/** The name of the function whose body holds `index`: the nearest declaration before it. */
function enclosingFunction(source: string, index: number): string {
  const before = source.slice(0, index);
  const declarations = [...before.matchAll(/^(?:export )?(?:async )?function\*? ?(\w+)/gm)];
  return declarations[declarations.length - 1]?.[1] ?? "(top level)";
}

function lineOf(source: string, index: number): number {
  return source.slice(0, index).split("\n").length;
}

/** What in one file's source is a move written outside commitMove. */
export function movesOutside(file: string, source: string): Finding[] {
  if (file === MOVE_MODULE) return [];
  const findings: Finding[] = [];
  for (const step of MOVE_STEPS) {
    for (const match of source.matchAll(new RegExp(`(function\\s+)?\\b${step}\\(`, "g"))) {
      if (match[1] !== undefined) continue;
      findings.push({ file, line: lineOf(source, match.index), what: `calls ${step}() outside commitMove` });
    }
  }
  for (const match of source.matchAll(/\bstates\??\.transaction\(/g)) {
    const writer = `${file}:${enclosingFunction(source, match.index)}`;
    if (NOT_MOVES[writer] === undefined)
      findings.push({ file, line: lineOf(source, match.index), what: `${writer} writes the graph state outside commitMove` });
  }
  return findings;
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

describe("one way to move a graph", () => {
  it("no graph move in src/ is written outside commitMove", () => {
    const findings = sourcesUnder(join(ROOT, "src")).flatMap((path) => movesOutside(relative(ROOT, path).split("\\").join("/"), readFileSync(path, "utf8")));
    expect(findings.map((finding) => `${finding.file}:${finding.line}: ${finding.what}`)).toEqual([]);
  });

  it("every writer the allow-list names still exists (a stale entry would hide a new move)", () => {
    const present = new Set(
      sourcesUnder(join(ROOT, "src")).flatMap((path) => {
        const source = readFileSync(path, "utf8");
        const file = relative(ROOT, path).split("\\").join("/");
        return [...source.matchAll(/\bstates\??\.transaction\(/g)].map((match) => `${file}:${enclosingFunction(source, match.index)}`);
      }),
    );
    expect(Object.keys(NOT_MOVES).filter((writer) => !present.has(writer))).toEqual([]);
  });

  it.each([
    {
      name: "a hand-written move: a transaction writing pending effects",
      source: "export async function sneak(ctx) {\n  await setup.states.transaction(ref, async (tx) => tx.write(withPendingEffects(next, effects)));\n}\n",
      found: ["calls withPendingEffects() outside commitMove", "src/x.ts:sneak writes the graph state outside commitMove"],
    },
    {
      name: "the loop steps called by hand",
      source: "async function f() {\n  const ahead = await askAhead(asker, ref, seen, rest);\n  return committedMove(asker, ref, current, ahead, fresh);\n}\n",
      found: ["calls committedMove() outside commitMove", "calls askAhead() outside commitMove"],
    },
    { name: "a definition is not a call", source: "export function committedMove(asker) {\n  return asker;\n}\n", found: [] },
    { name: "another store's transaction", source: "async function f() {\n  await control.transaction(ref, work);\n}\n", found: [] },
  ])("the scan finds $name", ({ source, found }) => {
    expect(movesOutside("src/x.ts", source).map((finding) => finding.what)).toEqual(found);
  });

  it("the move module itself is not scanned", () => {
    expect(movesOutside(MOVE_MODULE, "async function commitMove() { await states.transaction(ref, () => withPendingEffects(s, e)); }")).toEqual([]);
  });
});
