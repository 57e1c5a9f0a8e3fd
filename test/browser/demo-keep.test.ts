import { execFile } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, newContext, screenshot, watchPage } from "../support/browser.js";
import { runCli } from "../support/cli.js";
import { printedStopCommands } from "../support/demo-keep.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { parseEventLine } from "../../src/events/reader.js";
import type { EventRecord } from "../../src/events/reader.js";
import { approveFromPage, waitAtGate } from "./support/gate.js";
import type { GateHost } from "./support/gate.js";

/**
 * `the-loop demo --keep` as a person follows it: the printed login URL opened in headless
 * Chromium shows the kept item on the board, live, and its item view at its review gate; Approve
 * on the page answers the gate as alice; the printed commands then stop everything it left running.
 */

const run = promisify(execFile);
const LIVE_MS = 10_000;

let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

const parsed = (line: string): EventRecord[] => {
  const record = line.trim() === "" ? undefined : parseEventLine(line);
  return record ? [record] : [];
};

const printed = (output: string, pattern: RegExp): string => {
  const found = pattern.exec(output)?.[1];
  if (found === undefined) throw new Error(`the demo did not print ${String(pattern)}:\n${output}`);
  return found;
};

describe("the-loop demo --keep, in headless Chromium", () => {
  it("shows the kept item live on the board from the printed login URL, waiting at its review gate; Approve on its page moves the gate; the printed commands stop what it kept running", async () => {
    const cwd = await tempDir();
    const result = await runCli(["demo", "--keep"], { cwd });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const root = printed(result.stdout, /^ {2}state root: (\S+)$/m);
    const socket = printed(result.stdout, /server -L (\S+?)\)/);
    const configFile = join(root, "cli-config.yaml");
    try {
      const login = printed(result.stdout, /dashboard login \(works once, before \S+\): (\S+)$/m);
      const origin = new URL(login).origin;
      const context = await newContext(browser);
      const page = await context.newPage();
      const { problems } = watchPage(page, origin);
      expect((await page.goto(login))?.status()).toBe(200);
      await expect.poll(() => page.getByTestId("who").textContent()).toBe("acting as alice");
      // Its agent asks its question at once: the kept item waits for a person, its session live.
      const card = page.locator('section[data-column="waiting"] li.card[data-ref="local:demo#2"]');
      await card.waitFor({ timeout: LIVE_MS });
      await page.locator('section[data-column="done"] li.card[data-ref="local:demo#1"]').waitFor({ timeout: LIVE_MS });
      await screenshot(page, "demo-keep-board");
      await card.locator("a").click();
      await page.locator("#item-title").getByText("local:demo#2").waitFor();
      await page
        .getByTestId("usage")
        .getByText(/Budget used so far: .* min/)
        .waitFor({ timeout: LIVE_MS });
      // The demo says the kept item waits at its review gate, and that the page's Approve answers it.
      expect(result.stdout).toMatch(/the agent claimed its work \(the-loop graph complete\): it waits at its review gate for a person$/m);
      expect(result.stdout).toMatch(/the Approve button on its page answers the gate, as alice/);
      await waitAtGate(page, "review");
      await screenshot(page, "demo-keep-item");
      const host: GateHost = {
        cli: (args) => runCli(["--config", configFile, ...args], { cwd }),
        waitForEvent: (what, match) =>
          waitFor(what, async () => (await readFile(join(root, "logs", "events.jsonl"), "utf8")).split("\n").flatMap(parsed).find(match), {
            timeoutMs: LIVE_MS,
            intervalMs: 50,
          }),
      };
      await approveFromPage(page, host, {
        ref: "local:demo#2",
        gate: "review",
        next: "complete",
        operator: "alice",
        reason: "documented, thanks",
        screenshot: "demo-keep-item-gate",
      });
      expect(problems).toEqual([]);
      await context.close();

      const stops = printedStopCommands(result.stdout);
      expect(stops).toEqual([`the-loop --config ${configFile} stop`, `tmux -L ${socket} kill-server`, `rm -rf ${dirname(root)}`]);
      expect((await runCli(["--config", configFile, "stop"], { cwd })).code).toBe(0);
      await run("tmux", ["-L", socket, "kill-server"]);
      await rm(dirname(root), { recursive: true, force: true });
      // Nothing is left: no tmux server, no dashboard answering.
      await expect(run("tmux", ["-L", socket, "list-sessions"])).rejects.toThrow();
      await expect(fetch(`${origin}/api/v1/me`)).rejects.toThrow();
    } finally {
      // A daemon already stopped has nothing left to stop.
      await runCli(["--config", configFile, "stop"], { cwd }).catch(() => undefined);
      // A server already gone has nothing left to kill.
      await run("tmux", ["-L", socket, "kill-server"]).catch(() => undefined);
      await rm(dirname(root), { recursive: true, force: true });
    }
  });
});
