import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The dashboard's page as the daemon serves it: the files `npm run build` bundles into
 * dist/dashboard/page/ (scripts/build-page.ts), read from the daemon's own installed package —
 * beside this module, never from a checkout or the working directory — once, then held in memory
 * (an installed package does not change under a running daemon).
 */

export interface PageAsset {
  readonly body: Buffer;
  readonly contentType: string;
}

/** The URL path of each served file, and the file in the bundle. */
const SERVED: Readonly<Record<string, { readonly file: string; readonly contentType: string }>> = {
  "/": { file: "index.html", contentType: "text/html; charset=utf-8" },
  "/assets/app.js": { file: "app.js", contentType: "text/javascript; charset=utf-8" },
  "/assets/app.css": { file: "app.css", contentType: "text/css; charset=utf-8" },
  "/assets/icon.svg": { file: "icon.svg", contentType: "image/svg+xml" },
};

/**
 * The page's Content-Security-Policy: its own script and stylesheet alone (no inline script, no
 * inline style element, nothing from elsewhere), requests to its own origin alone, no frame.
 */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export class PageNotBuiltError extends Error {}

export class PageAssets {
  private readonly cache = new Map<string, PageAsset>();

  /** `dir`: the bundle's folder; by default dist/dashboard/page/ of the package this module is in. */
  constructor(private readonly dir: URL = new URL("./page/", import.meta.url)) {}

  /** Whether `path` is one of the page's files. */
  serves(path: string): boolean {
    return Object.hasOwn(SERVED, path);
  }

  /** The file served at `path`; throws PageNotBuiltError (with the fix) when the bundle is missing. */
  get(path: string): PageAsset {
    const cached = this.cache.get(path);
    if (cached !== undefined) return cached;
    const served = SERVED[path];
    if (served === undefined) throw new Error(`the page serves no ${path}`);
    const file = fileURLToPath(new URL(served.file, this.dir));
    let body: Buffer;
    try {
      body = readFileSync(file);
    } catch (error) {
      throw new PageNotBuiltError(`the dashboard's page is not in this installation (${file} is missing): run \`npm run build\` in the-loop's package`, {
        cause: error,
      });
    }
    const asset = { body, contentType: served.contentType };
    this.cache.set(path, asset);
    return asset;
  }
}
