import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import type { Browser, BrowserContext, Page } from "playwright-core";

/**
 * Headless Chromium for the dashboard's browser tests: Debian's own build (`apt-get install
 * chromium`, .ci/run), driven by playwright-core — no browser is downloaded. As root it needs
 * --no-sandbox; its background networking (updates, safe browsing, metrics) is off, so nothing
 * leaves loopback. THE_LOOP_CHROMIUM names another binary.
 */

const CANDIDATES = ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser"];

export function chromiumPath(): string {
  const named = process.env.THE_LOOP_CHROMIUM;
  if (named !== undefined && named !== "") return named;
  const found = CANDIDATES.find((path) => existsSync(path));
  if (found === undefined) throw new Error(`no Chromium at ${CANDIDATES.join(", ")}: apt-get install -y chromium (or set THE_LOOP_CHROMIUM)`);
  return found;
}

export async function launchChromium(): Promise<Browser> {
  const root = process.getuid?.() === 0;
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    timeout: 30_000,
    args: [
      ...(root ? ["--no-sandbox"] : []),
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-domain-reliability",
      "--disable-sync",
      "--disable-default-apps",
      "--disable-breakpad",
      "--no-first-run",
      "--no-default-browser-check",
      "--metrics-recording-only",
      "--safebrowsing-disable-auto-update",
      "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,CertificateTransparencyComponentUpdater",
      "--no-pings",
      "--dns-prefetch-disable",
    ],
  });
}

/** Where screenshots go: a CI artefact folder (gitignored). No vitest import here: bench/ uses this module too. */
export const SCREENSHOTS = join(fileURLToPath(new URL("../..", import.meta.url)), "artifacts", "screenshots");

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  // From the top: the sticky header would otherwise be drawn where the page was scrolled to.
  await page.evaluate("window.scrollTo(0, 0)");
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * What a page did that it should not: a Content-Security-Policy violation, an uncaught error, a
 * console error, a request to anywhere but the dashboard. The tests expect none.
 */
export function watchPage(page: Page, origin: string): { readonly problems: string[] } {
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !/Failed to load resource: the server responded with a status of 404/.test(message.text())) {
      problems.push(`console error: ${message.text()}`);
    }
  });
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.origin !== origin && url.protocol !== "data:") problems.push(`request elsewhere: ${request.url()}`);
  });
  return { problems };
}

export async function newContext(browser: Browser, dark = false): Promise<BrowserContext> {
  return browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: dark ? "dark" : "light", deviceScaleFactor: 1 });
}
