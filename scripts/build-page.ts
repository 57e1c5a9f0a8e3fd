/**
 * Bundles the dashboard's page (src/dashboard/page/) into dist/dashboard/page/, part of `npm run
 * build`: one script, one stylesheet and the HTML that loads them, which the daemon serves from
 * its own installed package (src/dashboard/page-assets.ts). Everything the page runs is in these
 * files: no CDN, nothing fetched at run time. esbuild (the compiler tsx already installs) does it
 * in well under a second.
 *
 *   tsx scripts/build-page.ts            (npm run build runs it after tsc)
 *   tsx scripts/build-page.ts --check    (also prints the sizes)
 */
import { copyFile, mkdir, readFile, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE = join(ROOT, "src", "dashboard", "page");
export const PAGE_OUT = join(ROOT, "dist", "dashboard", "page");

/** The files the daemon serves, as the build writes them. */
export const PAGE_FILES = ["index.html", "app.js", "app.css", "icon.svg"] as const;

export async function buildPage(out = PAGE_OUT): Promise<void> {
  // The names are fixed and each is overwritten whole: no clearing first, so two test projects' setups may build at once.
  await mkdir(out, { recursive: true });
  await build({
    entryPoints: { app: join(SOURCE, "main.tsx") },
    outdir: out,
    bundle: true,
    minify: true,
    format: "iife",
    platform: "browser",
    target: ["chrome111", "firefox115", "safari16.4"],
    jsx: "automatic",
    jsxImportSource: "preact",
    // The licences of what is bundled (xterm.js, preact: MIT) stay with it, in one file beside it.
    legalComments: "linked",
    logLevel: "warning",
    // The page is the browser's: no node built-in may creep in.
    external: [],
    define: { "process.env.NODE_ENV": '"production"' },
  });
  await copyFile(join(SOURCE, "index.html"), join(out, "index.html"));
  await copyFile(join(SOURCE, "icon.svg"), join(out, "icon.svg"));
}

/** Each shipped file's size, raw and gzipped. */
export async function pageSizes(out = PAGE_OUT): Promise<{ file: string; bytes: number; gzip: number }[]> {
  const sizes = [];
  for (const file of PAGE_FILES) {
    const path = join(out, file);
    const bytes = (await stat(path)).size;
    sizes.push({ file, bytes, gzip: gzipSync(await readFile(path), { level: 9 }).length });
  }
  return sizes;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildPage();
  if (process.argv.includes("--check")) {
    for (const size of await pageSizes()) console.log(`${size.file}: ${size.bytes} bytes, ${size.gzip} gzipped`);
  }
}
