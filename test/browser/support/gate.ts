import type { Page } from "playwright-core";
import { expect } from "vitest";
import type { EventRecord } from "../../../src/events/reader.js";
import { screenshot } from "../../support/browser.js";
import { jsonOf } from "../../support/cli.js";
import type { CliResult } from "../../support/cli.js";
import type { GraphStatusJson } from "../../support/graph.js";

/**
 * Approving a human gate from the dashboard's item view, and what that must do: the steps the
 * dashboard's own test and the kept demo's test share. The page is on the item's view, logged in
 * as `operator`.
 */

/** How long the page gets to show what changed (the budget is 1 s; the bound is for a loaded CI machine). */
const LIVE_MS = 10_000;

/** The daemon's side, reached the way a person would: its CLI (on the right config) and its event log. */
export interface GateHost {
  cli(args: readonly string[]): Promise<CliResult>;
  waitForEvent(what: string, match: (record: EventRecord) => boolean): Promise<EventRecord>;
}

export interface GateApproval {
  readonly ref: string;
  /** The human gate the item waits at, and the node its approved edge leads to. */
  readonly gate: string;
  readonly next: string;
  readonly operator: string;
  readonly reason: string;
  /** A screenshot of the item at its gate, taken before the click (artifacts/screenshots/NAME.png). */
  readonly screenshot: string;
}

/** The item view at its gate: Approve offered, the graph's current node the gate, Start not offered. */
export async function waitAtGate(page: Page, gate: string): Promise<void> {
  await page.locator('button[data-action="approve"]').waitFor({ timeout: LIVE_MS });
  await page.locator(`.graph g.node-current[data-node="${gate}"]`).waitFor({ timeout: LIVE_MS });
  expect(await page.locator('button[data-action="start"]').count()).toBe(0);
}

/**
 * Presses Approve with a reason, then checks it moved the gate as the approve keyword does: the
 * page says where the item went, `graph status` agrees, `graph.gate_decided` names the operator
 * and the dashboard, the item carries the marked audit comment, and the page no longer offers Approve.
 */
export async function approveFromPage(page: Page, host: GateHost, approval: GateApproval): Promise<void> {
  await waitAtGate(page, approval.gate);
  await page.locator(".action-text textarea").fill(approval.reason);
  await screenshot(page, approval.screenshot);
  await page.locator('button[data-action="approve"]').click();
  await page.locator(".outcome-ok").getByText(`moved to ${approval.next}`).waitFor({ timeout: LIVE_MS });
  const status = await host.cli(["graph", "status", approval.ref, "--json"]);
  expect(status.code, status.stderr).toBe(0);
  expect(jsonOf<GraphStatusJson>(status).node).toBe(approval.next);
  const decided = await host.waitForEvent("the gate's decision", (r) => r.event === "graph.gate_decided" && r.work_item === approval.ref);
  expect(decided).toMatchObject({ decision: "approved", actor: approval.operator, actor_kind: "operator", via: "dashboard" });
  const shown = await host.cli(["item", "show", approval.ref, "--json"]);
  expect(shown.code, shown.stderr).toBe(0);
  const audit = jsonOf<{ comments: { body: string }[] }>(shown).comments.find((c) =>
    c.body.includes(`was approved by ${approval.operator} from the-loop's dashboard`),
  );
  expect(audit?.body).toContain(`Reason given: ${approval.reason}`);
  expect(audit?.body).toContain("<!-- the-loop:agent-comment -->");
  await page.locator(`.graph g.node-current[data-node="${approval.next}"]`).waitFor({ timeout: LIVE_MS });
  expect(await page.locator('button[data-action="approve"]').count()).toBe(0);
}
