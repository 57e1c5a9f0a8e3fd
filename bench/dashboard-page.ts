/**
 * Figures: the dashboard's page in headless Chromium (Debian's, as the browser tests drive it)
 * against a real daemon on the local tracker. Budgets (docs/architecture.md): a 1,000-item board
 * renders in ≤ 1 s, and a comment appears live in ≤ 1 s.
 *
 * - **Board render**: from the navigation's start (the page's `performance` time origin) to every
 *   card of a 1,000-item board in the document: the page's load, its read of `/api/v1/items` and
 *   its render. The items are session records written into the state root before the daemon
 *   starts (closed, so the daemon has nothing to act on).
 * - **Comment live**: from a comment's own time on the local tracker (`item comment --json`'s
 *   `createdAt`) to its text in the open item view's timeline, seen by a MutationObserver in the
 *   page: the poll (every 0.25 s, as the demo's), the event stream, the page's throttled read
 *   of `why` and its render. The poll interval is the floor it sits on.
 *
 * BENCH_RUNS overrides the number of runs; BENCH_QUICK=1 makes 3 over a 200-item board.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { promisify } from "node:util";
import { stringify } from "yaml";
import { seedBoard } from "../test/support/board-seed.js";
import { launchChromium } from "../test/support/browser.js";
import { BIN, benchEnv, median, percentile, printFigure, printHeading, runsFromEnv, scaled } from "./lib.js";

const run = promisify(execFile);
const ITEMS = scaled(1000, 200);
const runs = runsFromEnv(9, 3);
const FAKE_HARNESS = new URL("../test/support/fake-harness.mjs", import.meta.url).pathname;

const dir = await mkdtemp(join(tmpdir(), "the-loop-bench-dashboard-"));
const home = await mkdtemp(join(tmpdir(), "the-loop-bench-home-"));
const socketName = `loop-bench-dashboard-${process.pid}`;
const env = benchEnv({ HOME: home });
const cli = async (args: string[]): Promise<string> => (await run(process.execPath, [BIN, ...args], { cwd: dir, env })).stdout;

await mkdir(join(dir, ".the-loop"), { recursive: true });
await writeFile(
  join(dir, ".the-loop", "cli-config.yaml"),
  stringify({
    version: 1,
    integrations: { local: { project: "demo" } },
    routing: {
      authorizedUsers: ["alice"],
      defaultHarness: "fake",
      harnesses: { fake: { command: [process.execPath, FAKE_HARNESS, join(dir, "transcript.jsonl"), "{prompt}"] } },
      tmux: { socketName },
    },
    polling: { enabled: true, intervalSeconds: 0.25, sources: [{ provider: "local" }] },
    dashboard: { enabled: true, operator: "alice" },
  }),
);
await seedBoard(join(dir, ".the-loop", "sessions"), ITEMS);

const browser = await launchChromium();
try {
  await cli(["start", "--json"]);
  const status = JSON.parse(await cli(["status", "--json"])) as { dashboard: { url: string } };
  const base = status.dashboard.url;
  const login = JSON.parse(await cli(["dashboard", "--json"])) as { url: string };
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  await page.goto(login.url);

  const renders: number[] = [];
  const parts: { script: number; items: number }[] = [];
  for (let index = 0; index < runs + 1; index += 1) {
    await page.goto("about:blank");
    await page.goto(`${base}/#/`);
    // Run in the page (bench/ is type-checked without the DOM's types).
    type Page = { document: { querySelectorAll(selector: string): { length: number } } };
    await page.waitForFunction((count) => (globalThis as unknown as Page).document.querySelectorAll("li.card").length === count, ITEMS, {
      timeout: 30_000,
      polling: "raf",
    });
    // A string, not a function: tsx would wrap a function's inner names in a helper the page does not have.
    const timing = (await page.evaluate(`(() => {
      const entries = performance.getEntriesByType("resource");
      const script = entries.find((entry) => entry.name.endsWith("/assets/app.js"));
      const items = entries.find((entry) => entry.name.endsWith("/api/v1/items"));
      return { at: performance.now(), script: script ? script.responseEnd : 0, items: items ? items.responseEnd : 0 };
    })()`)) as { at: number; script: number; items: number };
    // The first is a cold start of the daemon's read and the page's caches; it is shown, not counted.
    if (index === 0) printHeading(`dashboard page: a ${ITEMS}-item board, ${runs} runs (first load ${Math.round(timing.at)} ms, not counted)`);
    else {
      renders.push(timing.at);
      parts.push(timing);
    }
  }
  printFigure({ label: `board of ${ITEMS} items rendered (median)`, value: median(renders), unit: "ms", budget: 1000 });
  printFigure({ label: "board rendered (p90)", value: percentile(renders, 90), unit: "ms" });
  printFigure({ label: "  of which: the script loaded (median)", value: median(parts.map((part) => part.script)), unit: "ms" });
  printFigure({ label: "  of which: /api/v1/items answered (median)", value: median(parts.map((part) => part.items)), unit: "ms" });

  await cli(["item", "new", "A comment's way to the page", "--as", "alice"]);
  await page.goto(`${base}/#/item/${encodeURIComponent("local:demo#1")}`);
  await page.locator(".timeline li").first().waitFor({ timeout: 30_000 });
  const latencies: number[] = [];
  for (let index = 0; index < runs; index += 1) {
    const marker = `bench-comment-${index}-${Date.now()}`;
    // Every text the timeline and the comments show, with when it first appeared: the timeline names a comment by its id, the comments show its body.
    await page.evaluate(`(() => {
      const seen = {};
      window.__seen = seen;
      new MutationObserver(() => {
        for (const element of document.querySelectorAll(".timeline-text, .comment-body")) seen[element.textContent] ??= Date.now();
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    })()`);
    const made = JSON.parse(await cli(["item", "comment", "#1", `Looked at it: ${marker}`, "--as", "bob", "--json"])) as { id: string; createdAt: string };
    // The page's CSP refuses waitForFunction's eval: the page records the time itself, and this polls for it.
    const probe = `(() => {
      const times = Object.entries(window.__seen)
        .filter((entry) => entry[0].includes(${JSON.stringify(`(${made.id})`)}) || entry[0].includes(${JSON.stringify(marker)}))
        .map((entry) => entry[1]);
      return times.length > 0 ? Math.min(...times) : null;
    })()`;
    const deadline = Date.now() + 30_000;
    let seenAt: number | null = null;
    while (seenAt === null) {
      if (Date.now() > deadline) throw new Error(`the comment ${made.id} did not appear on the page in 30 s`);
      seenAt = (await page.evaluate(probe)) as number | null;
      if (seenAt === null) await delay(20);
    }
    latencies.push(seenAt - Date.parse(made.createdAt));
  }
  printHeading(`dashboard page: a comment made with the CLI, to the open item view (poll every 0.25 s), ${runs} runs`);
  printFigure({ label: "comment seen on the page (median)", value: median(latencies), unit: "ms", budget: 1000 });
  printFigure({ label: "comment seen on the page (p90)", value: percentile(latencies, 90), unit: "ms" });
} finally {
  await browser.close();
  await cli(["stop"]).catch(() => undefined); // Already stopped, or never started: nothing to stop.
  await run("tmux", ["-L", socketName, "kill-server"]).catch(() => undefined); // No server was started: the board seeds no live session.
  await rm(dir, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
}
