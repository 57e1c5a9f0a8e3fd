import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { UNIT_MODULE_MOCKS } from "../vitest.config.js";

/**
 * The unit project shares each worker's loaded modules between its files (vitest.config.ts), so
 * a module a file replaces with `vi.mock` would already be loaded, unreplaced, by an earlier
 * file. A unit test file that replaces a module must be listed in UNIT_MODULE_MOCKS, whose
 * project loads modules afresh for each file.
 */

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const REPLACES_A_MODULE = /\bvi\s*\.\s*(?:mock|doMock)\s*\(/;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith(".test.ts") ? [relative(ROOT, path)] : [];
  });
}

describe("unit test files that replace a module", () => {
  it("are all in the project that isolates them", () => {
    const replacing = testFiles(join(ROOT, "test")).filter(
      (file) => !file.startsWith("test/integration/") && REPLACES_A_MODULE.test(readFileSync(join(ROOT, file), "utf8")),
    );
    // This file names the call it looks for without making it.
    const listed = new Set(UNIT_MODULE_MOCKS);
    expect(replacing.filter((file) => !listed.has(file) && file !== "test/module-mocks.test.ts")).toEqual([]);
    // And the list names no file that no longer replaces one.
    expect(UNIT_MODULE_MOCKS.filter((file) => !replacing.includes(file))).toEqual([]);
  });
});
