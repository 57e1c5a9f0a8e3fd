/**
 * Figure: the size of the dashboard's page as the package ships it (dist/dashboard/page/, bundled
 * by scripts/build-page.ts): each file raw and gzipped, and the total a browser downloads on the
 * first visit. No budget: the figure is watched for growth (docs/architecture.md, Dependencies,
 * says what each part weighs). It bundles afresh into a temporary folder, so it measures the
 * sources as they are, not a stale build. Quick mode is the same (it takes well under a second).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildPage, pageSizes } from "../scripts/build-page.js";
import { printFigure, printHeading } from "./lib.js";

const out = await mkdtemp(join(tmpdir(), "the-loop-bench-page-"));
try {
  const started = performance.now();
  await buildPage(out);
  const buildMs = performance.now() - started;
  const sizes = await pageSizes(out);
  printHeading("dashboard page bundle (what the daemon serves, from the package)");
  for (const size of sizes) {
    printFigure({ label: `${size.file}`, value: size.bytes / 1024, unit: "KiB", note: `${(size.gzip / 1024).toFixed(1)} KiB gzipped` });
  }
  const total = sizes.reduce((sum, size) => sum + size.bytes, 0);
  const gzip = sizes.reduce((sum, size) => sum + size.gzip, 0);
  printFigure({ label: "total", value: total / 1024, unit: "KiB", note: `${(gzip / 1024).toFixed(1)} KiB gzipped` });
  printFigure({ label: "bundling (esbuild)", value: buildMs, unit: "ms" });
} finally {
  await rm(out, { recursive: true, force: true });
}
