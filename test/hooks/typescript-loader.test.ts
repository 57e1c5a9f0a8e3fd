import { describe, expect, it } from "vitest";
import { parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { LocalHookEntry } from "../../src/hooks/declaration.js";
import { loadLocalExecutor, typescriptLoaderFor } from "../../src/hooks/local.js";
import { LIFECYCLE_POINTS, LIFECYCLE_POINT_NAMES, lifecyclePoint } from "../../src/sdk/hooks/catalog.js";
import type { HookPoint } from "../../src/sdk/hooks/catalog.js";
import { hookRoot, writeIn } from "./support/hook-dir.js";
import { spawnContext } from "./support/fixtures.js";

const SPAWN = lifecyclePoint("session_spawn") as HookPoint;

/** A hook with an enum: syntax Node's type stripping refuses, which tsx compiles. */
const ENUM_HOOK = `import { LifecycleHooks } from "the-loop/sdk/hooks";
enum Mode { Loud = "loud" }
const where: string = import.meta.url;
export class Where extends LifecycleHooks {
  override sessionSpawn(context: { readonly prompt: string }) {
    return { ...context, prompt: \`\${Mode.Loud} \${where}\` };
  }
}
`;

describe("which loader imports a .ts hook", () => {
  it.each<[unknown, "native" | "tsx"]>([
    ["strip", "native"],
    ["transform", "native"],
    [undefined, "tsx"],
    [false, "tsx"],
    ["", "tsx"],
    [true, "tsx"],
  ])("process.features.typescript %j: %s", (typescript, loader) => {
    expect(typescriptLoaderFor(typescript === undefined ? {} : { typescript })).toBe(loader);
  });

  it("takes this Node's own answer: tsx on a Node that strips no types", () => {
    const typescript: unknown = Reflect.get(process.features, "typescript");
    expect(typescriptLoaderFor({ typescript })).toBe(typescript === "strip" || typescript === "transform" ? "native" : "tsx");
  });

  it("imports a .ts hook with an enum on this Node", async () => {
    const root = await hookRoot();
    await writeIn(root, "package.json", JSON.stringify({ type: "module" }));
    await writeIn(root, "enum.ts", ENUM_HOOK);
    const [entry] = parseHookDeclaration([{ name: "h", path: "enum.ts" }], { configDir: root, points: LIFECYCLE_POINT_NAMES });
    const executor = await loadLocalExecutor(entry as LocalHookEntry, { points: LIFECYCLE_POINTS, configDir: root });
    expect(await executor.invoke(SPAWN, spawnContext())).toMatchObject({ prompt: expect.stringMatching(/^loud file:.*enum\.ts/) });
  });
});
