/**
 * `npm run bench`: runs every figure script in bench/ (each also runs alone with
 * `npx tsx bench/<figure>.ts`), one after another so they do not disturb each other.
 * BENCH_RUNS overrides each figure's number of runs. BENCH_QUICK=1 (what CI runs, `.ci/run`) makes
 * every figure take few runs over small data: each path still runs end to end and a broken figure
 * script fails the run, but nothing is asserted on time and no budget is compared (bench/lib.ts).
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
if (process.env.BENCH_QUICK === "1") console.log("quick mode (BENCH_QUICK=1): few runs, small data; the figures only show each path works");
const started = performance.now();
let failed = 0;
for (const figure of figures) {
  const figureStarted = performance.now();
  const result = spawnSync(process.execPath, ["--import", "tsx", `${benchDir}${figure}`], { stdio: "inherit" });
  console.log(`  (${figure}: ${((performance.now() - figureStarted) / 1000).toFixed(1)} s)`);
  if (result.status !== 0) {
    failed += 1;
    console.error(`${figure} failed (exit ${result.status ?? result.signal})`);
  }
}
console.log(`\n${figures.length - failed} of ${figures.length} figure scripts ran in ${((performance.now() - started) / 1000).toFixed(1)} s`);
process.exitCode = failed > 0 ? 1 : 0;
