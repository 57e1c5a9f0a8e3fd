import { describe, expect, it } from "vitest";
import { CLAUDE_BLOCKED_PATTERN, CLAUDE_PASTED_PATTERN, CLAUDE_READY_PATTERN } from "../../src/harness/adapters.js";
import { awaitReady, judgeScreen, screenTail } from "../../src/sessions/readiness.js";

const claude = { readyPattern: CLAUDE_READY_PATTERN, blockedPattern: CLAUDE_BLOCKED_PATTERN };
const rule = "─".repeat(60);

/** Screens as Claude Code 2.1 draws them (captured from the real CLI in tmux). */
const IDLE = [" ▐▛███▜▌   Claude Code v2.1.197", "❯ please say hi", "● done", rule, "❯ ", rule, "  ? for shortcuts · ← for agents", "", ""].join("\n");
const WORKING = ["❯ please say hi", "● Bash(echo hi)", "  ⎿  Running…", rule, "❯ ", rule, "  esc to interrupt · ← for agents"].join("\n");
const TRUST_DIALOG = [
  rule,
  " Accessing workspace:",
  " /tmp/work",
  " Quick safety check: Is this a project you created or one you trust?",
  " Claude Code'll be able to read, edit, and execute files here.",
  " Security guide",
  " ❯ 1. Yes, I trust this folder",
  "   2. No, exit",
  " Enter to confirm · Esc to cancel",
].join("\n");
const PERMISSION = [" Bash command", "   touch x", " Do you want to proceed?", " ❯ 1. Yes", "   2. No", " Esc to cancel · Tab to amend"].join("\n");
const QUOTED_ABOVE = [
  "❯ Fix: the session sits on 'trust this folder' — Enter to confirm · Esc to cancel",
  "● Looking.",
  "line",
  "line",
  "line",
  "line",
  rule,
  "❯ ",
  rule,
  "  ? for shortcuts",
].join("\n");

describe("judgeScreen", () => {
  it.each([
    { name: "idle input box", screen: IDLE, state: "ready" },
    { name: "working (input is queued)", screen: WORKING, state: "ready" },
    { name: "the folder trust dialog", screen: TRUST_DIALOG, state: "blocked" },
    { name: "a tool's permission prompt", screen: PERMISSION, state: "blocked" },
    { name: "a blank screen still starting", screen: "\n\n\n", state: "starting" },
    { name: "ticket text quoting a dialog, above the input box", screen: QUOTED_ABOVE, state: "ready" },
    { name: "a dialog drawn over a stale footer", screen: `${IDLE}\n Enter to confirm · Esc to cancel`, state: "blocked" },
  ])("$name: $state", ({ screen, state }) => {
    expect(judgeScreen(screen, claude)).toBe(state);
  });

  it("reads only the bottom non-empty lines", () => {
    expect(screenTail("a\n\nb\nc\n\n", 2)).toBe("b\nc");
  });
});

describe("Claude Code's input box holding a paste", () => {
  const box = (input: string) => ["❯ please say hi", "● done", rule, input, rule, "  ? for shortcuts"].join("\n");
  it.each([
    { name: "empty, under a short exchange whose own ❯ line is in the tail", screen: box("❯"), pasted: false },
    { name: "a long paste, folded", screen: box("❯ [Pasted text #1 +5 lines]"), pasted: true },
    { name: "a short paste, as typed", screen: box("❯ Use PostgreSQL"), pasted: true },
    { name: "while the agent works", screen: WORKING.replace("❯ \n", "❯ next\n"), pasted: true },
  ])("$name: $pasted", ({ screen, pasted }) => {
    expect(CLAUDE_PASTED_PATTERN.test(screenTail(screen))).toBe(pasted);
  });
});

describe("awaitReady", () => {
  it("waits through a start and a dialog until the screen is ready", async () => {
    const screens = ["", TRUST_DIALOG, TRUST_DIALOG, IDLE];
    let reads = 0;
    const outcome = await awaitReady({ rule: claude, screen: async () => screens[Math.min(reads++, screens.length - 1)], boundMs: 5_000 });
    expect(outcome.ready).toBe(true);
    expect(reads).toBe(4);
  });

  it("gives up at the bound and says what it saw", async () => {
    const outcome = await awaitReady({ rule: claude, screen: async () => TRUST_DIALOG, boundMs: 250 });
    expect(outcome).toMatchObject({ ready: false, state: "blocked" });
    expect(!outcome.ready && outcome.tail).toContain("Enter to confirm");
    expect(outcome.waitedMs).toBeGreaterThanOrEqual(200);
  });

  it("a pane that is gone ends the wait at once: the delivery finds out and starts it again", async () => {
    expect(await awaitReady({ rule: claude, screen: async () => undefined, boundMs: 10_000 })).toMatchObject({ ready: true });
  });

  it("stops waiting when told to", async () => {
    const outcome = await awaitReady({ rule: claude, screen: async () => "", boundMs: 10_000, keepWaiting: () => false });
    expect(outcome).toMatchObject({ ready: false, state: "starting" });
  });
});
