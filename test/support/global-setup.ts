import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Integration tests run the CLI as users do — `bin/the-loop.js` over the compiled `dist/` — so
 * the build runs first (incremental: a no-op when nothing changed). tsc still emits when a file
 * has type errors, so a type error elsewhere in a work-in-progress tree does not stop every
 * test; it is reported here, and `npm run build` / `npm run typecheck` (both in CI) fail on it.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  try {
    execFileSync(process.execPath, [fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url)), "-p", "tsconfig.build.json"], {
      cwd: root,
      stdio: "inherit",
    });
  } catch {
    process.stderr.write("warning: the build reported type errors (above); tests run against what it emitted\n");
  }
}
