import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * docs/architecture.md's module map names every folder under src/ and what it owns: a folder
 * added without a row (or a row left for a folder that is gone) fails here, so the map a
 * newcomer reads first stays the tree they find.
 */

const ROOT = join(import.meta.dirname, "..");
const doc = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");

function moduleMapRows(): string[] {
  const start = doc.indexOf("## Module map");
  const end = doc.indexOf("\n## ", start + 1);
  return doc
    .slice(start, end)
    .split("\n")
    .filter((line) => line.startsWith("| `src/"))
    .map((line) => /^\| `src\/([^`/]+)/.exec(line)?.[1] ?? "");
}

describe("docs/architecture.md's module map", () => {
  const folders = readdirSync(join(ROOT, "src"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  const rows = moduleMapRows();

  it("has a row for every folder under src/", () => {
    expect(folders.filter((folder) => !rows.includes(folder))).toEqual([]);
  });

  it("has no row for a folder src/ does not have", () => {
    const files = new Set(readdirSync(join(ROOT, "src")));
    expect(rows.filter((row) => !files.has(row) && !files.has(row.replace(/\.ts$/, "") + ".ts"))).toEqual([]);
  });

  it("says what each row's folder holds", () => {
    for (const line of doc.split("\n").filter((row) => row.startsWith("| `src/"))) {
      const cells = line.split("|").map((cell) => cell.trim());
      expect(cells[2]?.length ?? 0, line).toBeGreaterThan(10);
    }
  });
});
