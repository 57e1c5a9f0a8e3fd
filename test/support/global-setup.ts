import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { TestProject as VitestProject } from "vitest/node";
import { buildPage } from "../../scripts/build-page.js";
import { RUN_KEY, RUN_MARKER, describeProcesses, endProcesses, markedProcesses } from "./processes.js";

/**
 * Integration tests run the CLI as users do — `bin/the-loop.js` over the compiled `dist/` — so
 * the build runs first (incremental: a no-op when nothing changed). tsc still emits when a file
 * has type errors, so a type error elsewhere in a work-in-progress tree does not stop every
 * test; it is reported here, and `npm run build` / `npm run typecheck` (both in CI) fail on it.
 *
 * The dashboard's page is bundled after it (scripts/build-page.ts: esbuild, well under a second),
 * as `npm run build` does, so the daemon serves the page the sources make.
 *
 * The run gets an id every process it starts through the CLI carries (processes.ts). The
 * teardown fails the run if any of them is still alive once every test file is done — one the
 * per-test check (leak-guard.ts) could not see, such as the daemon of a worker that crashed —
 * and kills it.
 */
export default async function setup(project: VitestProject): Promise<() => Promise<void>> {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  try {
    execFileSync(process.execPath, [fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url)), "-p", "tsconfig.build.json"], {
      cwd: root,
      stdio: "inherit",
    });
  } catch {
    process.stderr.write("warning: the build reported type errors (above); tests run against what it emitted\n");
  }
  await buildPage();
  const runId = randomUUID();
  project.provide(RUN_KEY, runId);
  return async () => {
    const killed = await endProcesses(markedProcesses({ [RUN_MARKER]: runId }), 0);
    if (killed.length === 0) return;
    // vitest reports an error thrown here but still exits 0 when every test passed.
    process.exitCode = 1;
    throw new Error(`the test run left ${killed.length} process(es) running after it ended (killed now):\n${describeProcesses(killed)}`);
  };
}
