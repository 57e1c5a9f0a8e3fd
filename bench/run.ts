/**
 * `npm run bench`: runs every figure script in bench/ (each also runs alone with
 * `npx tsx bench/<figure>.ts`), one after another so they do not disturb each other.
 * BENCH_RUNS overrides each figure's number of runs.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const benchDir = fileURLToPath(new URL(".", import.meta.url));
const figures = readdirSync(benchDir)
  .filter((name) => name.endsWith(".ts") && !["run.ts", "lib.ts"].includes(name))
  .sort();

console.log(`node ${process.version} on ${process.platform}/${process.arch}`);
if (process.env.NODE_EXTRA_CA_CERTS && process.env.BENCH_KEEP_ENV !== "1") {
  console.log("note: NODE_EXTRA_CA_CERTS is removed for measured processes (it adds a CA-bundle parse to every start); BENCH_KEEP_ENV=1 keeps it");
}
let failed = 0;
for (const figure of figures) {
  const result = spawnSync(process.execPath, ["--import", "tsx", `${benchDir}${figure}`], { stdio: "inherit" });
  if (result.status !== 0) {
    failed += 1;
    console.error(`${figure} failed (exit ${result.status})`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
