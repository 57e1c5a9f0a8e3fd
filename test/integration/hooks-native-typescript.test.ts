import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PACKAGE_ROOT, hookRoot, writeIn } from "../hooks/support/hook-dir.js";

/**
 * A Node that strips types itself (22.18+, 23.6+) imports a plain `.ts` hook without tsx, and
 * falls back to tsx for syntax it refuses. This project runs on Node 20, so the test runs only
 * where THE_LOOP_TEST_STRIPPING_NODE names such a Node (`npx -y node@22` leaves one in the npx
 * cache). It loads the built dist/ in that Node, as a daemon started by it would.
 */
const strippingNode = process.env["THE_LOOP_TEST_STRIPPING_NODE"];

/** A hook that answers with the URL it was imported as: tsx's carries a `tsx-namespace` query. */
const PLAIN_HOOK = `import { LifecycleHooks } from "the-loop/sdk/hooks";
const where: string = import.meta.url;
export class Where extends LifecycleHooks {
  override sessionSpawn(context: { readonly prompt: string }) {
    return { ...context, prompt: where };
  }
}
`;

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

describe.skipIf(strippingNode === undefined || strippingNode === "")("local hooks on a Node that strips types", () => {
  it("imports a plain .ts hook without tsx, and one with an enum through tsx", async () => {
    expect(existsSync(join(PACKAGE_ROOT, "dist", "hooks", "local.js")), "npm run build first").toBe(true);
    const root = await hookRoot();
    await writeIn(root, "package.json", JSON.stringify({ type: "module" }));
    await writeIn(root, "plain.ts", PLAIN_HOOK);
    await writeIn(root, "enum.ts", ENUM_HOOK);
    const dist = (path: string): string => JSON.stringify(new URL(`dist/${path}`, `file://${PACKAGE_ROOT}/`).href);
    const script = `
      import { parseHookDeclaration } from ${dist("hooks/declaration.js")};
      import { loadLocalExecutor } from ${dist("hooks/local.js")};
      import { LIFECYCLE_POINTS, LIFECYCLE_POINT_NAMES, lifecyclePoint } from ${dist("sdk/hooks/catalog.js")};
      const root = ${JSON.stringify(root)};
      const out = { typescript: process.features.typescript };
      for (const name of ["plain", "enum"]) {
        const [entry] = parseHookDeclaration([{ name, path: name + ".ts" }], { configDir: root, points: LIFECYCLE_POINT_NAMES });
        const executor = await loadLocalExecutor(entry, { points: LIFECYCLE_POINTS, configDir: root });
        out[name] = (await executor.invoke(lifecyclePoint("session_spawn"), { prompt: "p" })).prompt;
      }
      console.log(JSON.stringify(out));
    `;
    const child = spawnSync(strippingNode ?? "", ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000 });
    expect(child.status, child.stderr).toBe(0);
    const out: unknown = JSON.parse(child.stdout);
    expect(out).toMatchObject({
      typescript: expect.stringMatching(/^(strip|transform)$/),
      plain: expect.stringMatching(/^file:[^?]*plain\.ts$/),
      enum: expect.stringMatching(/^loud file:.*enum\.ts\?tsx-namespace=/),
    });
  });
});
