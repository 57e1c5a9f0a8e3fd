import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Integration tests run the CLI as users do — `bin/the-loop.js` over the compiled `dist/` — so
 * the build runs first (incremental: a no-op when nothing changed).
 */
export default function setup(): void {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  execFileSync(process.execPath, [fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url)), "-p", "tsconfig.build.json"], {
    cwd: root,
    stdio: "inherit",
  });
}
