import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedBoard } from "../support/board-seed.js";
import { launchChromium, newContext, screenshot, watchPage } from "../support/browser.js";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { graphStatus, specReviewProject } from "../support/graph.js";
import type { ClaimJson } from "../support/graph.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { approveFromPage } from "./support/gate.js";

/**
 * The dashboard's page in a real browser (headless Chromium) against a real daemon on the local
 * tracker: the board live, the item view's timeline, graph, terminal and actions, and the page's
 * security from the browser's side. Screenshots go to artifacts/screenshots/.
 */

const REF = "local:demo#1";
/** How long the page gets to show what changed. The budget is 1 s (bench/dashboard-page.ts measures it); the bound is for a loaded CI machine. */
const LIVE_MS = 10_000;

let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

async function dashboardProject(
  operator: string | undefined,
  before?: (p: TestProject) => Promise<void>,
  routing: Record<string, unknown> = {},
): Promise<{ p: TestProject; base: URL }> {
  const p = await specReviewProject(routing);
  const configFile = join(p.root, "cli-config.yaml");
  const text = await readFile(configFile, "utf8");
  await writeFile(configFile, `${text}dashboard:\n  enabled: true\n${operator !== undefined ? `  operator: ${operator}\n` : ""}`);
  await before?.(p);
  const started = await p.cli(["start", "--json"]);
  expect(started.code, started.stderr).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  const status = jsonOf<{ dashboard: { url: string | null } }>(await p.cli(["status", "--json"]));
  return { p, base: new URL(status.dashboard.url ?? "") };
}

/** A logged-in page: the one-time URL opened in a fresh browser context. */
async function loggedIn(p: TestProject, base: URL, dark = false): Promise<{ page: Page; problems: string[] }> {
  const printed = await p.cli(["dashboard", "--json"]);
  expect(printed.code, printed.stderr).toBe(0);
  const context = await newContext(browser, dark);
  const page = await context.newPage();
  const { problems } = watchPage(page, base.origin);
  const answer = await page.goto(jsonOf<{ url: string }>(printed).url);
  expect(answer?.status()).toBe(200);
  expect(new URL(page.url()).pathname).toBe("/");
  return { page, problems };
}

async function atTheGate(p: TestProject, ref = REF): Promise<void> {
  await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
  const claimed = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: ref });
  expect(claimed.code, claimed.stderr).toBe(0);
  expect(jsonOf<ClaimJson>(claimed)).toMatchObject({ moved: true, node: "review", status: "waiting" });
}

// What runs in the page is written as a string: the tests are type-checked without the DOM's types.
const card = (page: Page, ref: string) => page.locator(`li.card[data-ref="${ref}"]`);

describe("the dashboard's page, in headless Chromium, against a real daemon", () => {
  it("shows a started item on the board live, then its timeline takes a CLI comment without a reload, and approving moves the gate", async () => {
    const { p, base } = await dashboardProject("alice");
    const { page, problems } = await loggedIn(p, base);
    await expect.poll(() => page.getByTestId("who").textContent()).toBe("acting as alice");
    await page.locator('section[data-column="working"]').waitFor();

    // The board is open before the item exists: it arrives over the event stream, no reload.
    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    await card(page, REF).locator(".chip-node").getByText("write").waitFor({ timeout: LIVE_MS });
    expect(await page.locator('section[data-column="working"] li.card').count()).toBe(1);
    await waitFor("the boot", async () => (await p.transcript()).some((entry) => entry.type === "boot"));
    await screenshot(page, "board");

    // The item view, by keyboard: the card is a link.
    await card(page, REF).locator("a").focus();
    await page.keyboard.press("Enter");
    await page.locator("#item-title").getByText(REF).waitFor();
    await page.locator('.graph g.node-current[data-node="write"]').waitFor();
    const navigations: string[] = [];
    page.on("framenavigated", (frame) => navigations.push(frame.url()));

    const commented = await p.cli(["item", "comment", "#1", "Please cover the <b>error codes</b> too", "--as", "bob", "--json"]);
    expect(commented.code, commented.stderr).toBe(0);
    const { id } = jsonOf<{ id: string }>(commented);
    // The timeline names it, and the comments show it, as text.
    await page.locator(".timeline").getByText(`bob commented (${id})`).waitFor({ timeout: LIVE_MS });
    await page.locator(".comments-panel").getByText("Please cover the <b>error codes</b> too").waitFor({ timeout: LIVE_MS });
    expect(await page.locator(".comments-panel b").count()).toBe(0);

    // At the gate: the approve button applies, and it moves the gate as the keyword does.
    await atTheGate(p);
    await approveFromPage(page, p, { ref: REF, gate: "review", next: "done", operator: "alice", reason: "reads well", screenshot: "item" });
    // Everything above happened without a reload.
    expect(navigations.filter((url) => new URL(url).pathname !== "/" || new URL(url).search !== "")).toEqual([]);
    expect(problems).toEqual([]);
  });

  it("draws the agent's terminal read-only, from the tmux pane", async () => {
    const { p, base } = await dashboardProject("alice");
    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    await waitFor("the boot", async () => (await p.transcript()).some((entry) => entry.type === "boot"));
    const { page, problems } = await loggedIn(p, base, true);
    await page.goto(`${base.origin}/#/item/${encodeURIComponent(REF)}`);
    const rows = page.locator(".terminal-host .xterm-rows");
    await rows.getByText("fake-harness: ready").waitFor({ timeout: LIVE_MS });
    // Read-only: typing into the page reaches no pane.
    await page.locator(".terminal-host").click();
    await page.keyboard.type("echo typed-into-the-dashboard\n");
    const transcript = await p.transcript();
    expect(transcript.some((entry) => entry.type === "input" && (entry.text ?? "").includes("typed-into-the-dashboard"))).toBe(false);
    await screenshot(page, "item-terminal-dark");
    expect(problems).toEqual([]);
  });

  it("says so, and draws nothing wrong, when an answer is not the shape its route documents", async () => {
    const { p, base } = await dashboardProject("alice");
    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    const { page, problems } = await loggedIn(p, base);
    await card(page, REF).waitFor({ timeout: LIVE_MS });
    // A board answer whose items are a string where the schema says a list: a proxy's rewrite, or a daemon of another build.
    await page.route("**/api/v1/items", (route) => route.fulfill({ status: 200, contentType: "application/json", body: '{"items":"not a list"}' }));
    await page.reload();
    const alert = page.getByRole("alert");
    await alert.waitFor({ timeout: LIVE_MS });
    expect(await alert.textContent()).toMatch(/answer to GET \/api\/v1\/items is not the shape this page reads .*restart the daemon/);
    expect(await page.locator("li.card").count()).toBe(0);
    await screenshot(page, "board-malformed-answer");
    // The daemon's own answer again: the board is back, and the page never threw.
    await page.unroute("**/api/v1/items");
    await page.reload();
    await card(page, REF).waitFor({ timeout: LIVE_MS });
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it("reads nothing without the login, and a page on another origin cannot make it act", async () => {
    const { p, base } = await dashboardProject("alice");
    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    await atTheGate(p);

    const stranger = await newContext(browser);
    const cold = await stranger.newPage();
    for (const path of ["/", "/assets/app.js", "/api/v1/items", `/api/v1/items/${encodeURIComponent(REF)}/why`]) {
      expect((await cold.goto(`${base.origin}${path}`))?.status(), path).toBe(401);
    }
    await stranger.close();

    // A page of another origin on the same host (the same site: the SameSite cookie goes with its requests) posts to the dashboard.
    const { page } = await loggedIn(p, base);
    const target = `${base.origin}/api/v1/items/${encodeURIComponent(REF)}/actions/approve`;
    const evil = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(
        `<!doctype html><form id="f" method="POST" action="${target}" enctype="text/plain"><input name='{"reason":"x","a":"' value='"}'></form>` +
          `<script>fetch(${JSON.stringify(target)}, {method: "POST", mode: "no-cors", credentials: "include", headers: {"content-type": "text/plain"}, body: "{}"})` +
          `.finally(() => document.getElementById("f").submit());</script>`,
      );
    });
    await new Promise<void>((done) => evil.listen(0, "127.0.0.1", done));
    try {
      const evilOrigin = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
      await page.goto(`${evilOrigin}/`);
      await waitFor("both refusals", async () => {
        const refused = (await p.events()).filter((r) => r.event === "dashboard.refused" && r.status === 403);
        return refused.length >= 2 ? refused : undefined;
      });
    } finally {
      await new Promise<void>((done) => evil.close(() => done()));
    }
    expect((await graphStatus(p)).node).toBe("review");
    expect((await p.events()).some((r) => r.event === "graph.gate_decided")).toBe(false);
  });

  it("renders a board of 1,000 items, every card", async () => {
    let refs: string[] = [];
    const { p, base } = await dashboardProject("alice", async (project) => {
      refs = await seedBoard(join(project.root, "sessions"), 1000);
    });
    const { page, problems } = await loggedIn(p, base);
    await expect.poll(() => page.locator("li.card").count(), { timeout: LIVE_MS }).toBe(1000);
    expect(await page.locator('section[data-column="done"] .badge').first().textContent()).toBe("1000");
    await card(page, refs[0] ?? "").waitFor({ state: "attached" });
    // The filter narrows it, from the keyboard.
    await page.keyboard.press("/");
    await page.keyboard.type("#1999");
    await expect.poll(() => page.locator("li.card").count()).toBe(1);
    expect(problems).toEqual([]);
  });

  it("shows every column a fleet fills, legible in the dark and at 200 % zoom, and read-only without dashboard.operator", async () => {
    const { p, base } = await dashboardProject("alice", undefined, {
      limits: { maxLiveSessions: 4 },
      budget: { minutes: 240, warnAt: 0.8 },
    });
    const titles = [
      "Write the spec for the login flow",
      "Rate-limit the public API",
      "Migrate the billing tables",
      "Fix the flaky upload test",
      "Document the webhook retries",
      "Add dark mode to the settings page",
    ];
    for (const title of titles) expect((await p.cli(["item", "new", title, "--label", ARM, "--as", "alice"])).code).toBe(0);
    await waitFor(
      "four spawned, two queued",
      async () => {
        const events = await p.events();
        return events.filter((r) => r.event === "session.spawned").length >= 4 && events.filter((r) => r.event === "session.queued").length >= 2
          ? true
          : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    await atTheGate(p, "local:demo#2");
    expect((await p.cli(["sessions", "pause", "--work-item", "#3"])).code).toBe(0);
    expect((await p.cli(["item", "close", "#4", "--as", "alice"])).code).toBe(0);
    // #4's slot goes to #5; #6 waits on.
    await p.waitForEvent("the queue moving", (r) => r.event === "session.dequeued");

    const { page, problems } = await loggedIn(p, base);
    const column = (id: string) => page.locator(`section[data-column="${id}"] li.card`);
    await expect.poll(() => column("waiting").count(), { timeout: LIVE_MS }).toBe(2);
    await expect.poll(() => column("queued").count(), { timeout: LIVE_MS }).toBe(1);
    await expect.poll(() => column("working").count(), { timeout: LIVE_MS }).toBe(2);
    await expect.poll(() => column("done").count(), { timeout: LIVE_MS }).toBe(1);
    await page.locator('section[data-column="queued"] li.card').getByText("#1 in queue").waitFor();
    await screenshot(page, "board-fleet");

    // 200 % zoom is a window half as wide in CSS pixels, each drawn twice the size: nothing runs off the side.
    const zoomed = await browser.newContext({ viewport: { width: 720, height: 900 }, deviceScaleFactor: 2 });
    const big = await zoomed.newPage();
    await big.goto((await p.cli(["dashboard", "--json"])).stdout.match(/"url":\s*"([^"]+)"/)?.[1] ?? "");
    await big.locator("li.card").first().waitFor();
    expect(await big.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")).toBe(true);
    await screenshot(big, "board-zoom-200");
    await big.goto(`${base.origin}/#/item/${encodeURIComponent("local:demo#2")}`);
    await big.locator('button[data-action="approve"]').waitFor({ timeout: LIVE_MS });
    await screenshot(big, "item-zoom-200");
    await zoomed.close();

    const dark = await loggedIn(p, base, true);
    await dark.page.goto(`${base.origin}/#/item/${encodeURIComponent("local:demo#2")}`);
    await dark.page.locator('.graph g.node-current[data-node="review"]').waitFor({ timeout: LIVE_MS });
    expect(await dark.page.evaluate("getComputedStyle(document.body).backgroundColor")).not.toBe("rgb(244, 245, 248)");
    await screenshot(dark.page, "item-dark");
    await dark.page.goto(`${base.origin}/#/events?type=session.*`);
    await dark.page.locator("table.events tbody tr").first().waitFor({ timeout: LIVE_MS });
    expect(await dark.page.locator("table.events tbody tr code").allTextContents()).toEqual(expect.arrayContaining(["session.spawned", "session.queued"]));
    expect((await dark.page.locator("table.events tbody tr code").allTextContents()).every((type) => type.startsWith("session."))).toBe(true);
    await screenshot(dark.page, "events-dark");
    expect([...problems, ...dark.problems]).toEqual([]);
    await p.cli(["stop"]);

    // Without dashboard.operator: the page says so, and offers no action.
    const readOnly = await dashboardProject(undefined);
    expect((await readOnly.p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await readOnly.p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    const viewer = await loggedIn(readOnly.p, readOnly.base);
    await expect.poll(() => viewer.page.getByTestId("who").textContent()).toBe("read-only: no dashboard.operator");
    await viewer.page.goto(`${readOnly.base.origin}/#/item/${encodeURIComponent(REF)}`);
    await viewer.page.locator(".actions-readonly").waitFor();
    expect(await viewer.page.locator("button[data-action]").count()).toBe(0);
  });
});
