import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LocalHookError, loadLocalExecutor } from "../../src/hooks/local.js";
import { parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { LocalHookEntry } from "../../src/hooks/declaration.js";
import { namesThisPackage, ownManifest } from "../../src/hooks/self-resolve.js";
import { LIFECYCLE_POINTS, LIFECYCLE_POINT_NAMES } from "../../src/sdk/hooks/catalog.js";
import { tempDir } from "../support/temp.js";
import { PACKAGE_ROOT, writeIn } from "./support/hook-dir.js";

const HOOK = `import { LifecycleHooks } from "the-loop/sdk/hooks";
export class H extends LifecycleHooks {
  sessionSpawn() {
    return undefined;
  }
}
`;

/** Where the-loop maps its own name for a hook file; the resolution itself runs under Node in test/integration/hooks-example.test.ts. */
describe("the-loop's own name, for a hook file", () => {
  it("is the-loop and its subpaths, nothing that merely starts alike", () => {
    expect(["the-loop", "the-loop/sdk/hooks", "the-loop/package.json"].map(namesThisPackage)).toEqual([true, true, true]);
    expect(["the-loop-extra", "@acme/the-loop", "./the-loop"].map(namesThisPackage)).toEqual([false, false, false]);
  });

  it("maps to the package.json of the copy that is loading the hook", () => {
    expect(ownManifest()).toBe(join(PACKAGE_ROOT, "package.json"));
    expect(ownManifest("/")).toBeUndefined();
  });

  it("leaves another missing package failing, with the fix", async () => {
    const root = await tempDir();
    await writeIn(root, "hooks/a.mjs", `import "acme-missing-package";\n${HOOK}`);
    const [entry] = parseHookDeclaration([{ name: "h", path: "hooks/a.mjs" }], { configDir: root, points: LIFECYCLE_POINT_NAMES });
    const error: unknown = await loadLocalExecutor(entry as LocalHookEntry, { points: LIFECYCLE_POINTS, configDir: root }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LocalHookError);
    expect((error as Error).message).toContain(`install the package it names in a node_modules folder at or above ${join(root, "hooks")}`);
  });
});
