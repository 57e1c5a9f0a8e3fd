import { describe, expect, it } from "vitest";
import { budgetLine, budgetStatus } from "../../src/cli/commands/sessions/budget-status.js";

const routing = (
  over: { budget?: { tokens?: number; minutes?: number; warnAt?: number }; harnesses?: Record<string, unknown>; defaultHarness?: string } = {},
) => ({
  defaultHarness: over.defaultHarness ?? "claude",
  harnesses: over.harnesses ?? {},
  harnessByLabel: {},
  budget: { warnAt: 0.8, ...over.budget },
});

describe("what status says of budgets", () => {
  it("says nothing without a limit: usage is only counted", () => {
    expect(budgetStatus(routing())).toBeUndefined();
    expect(budgetStatus(routing({ harnesses: { mine: { command: "x" } } }))).toBeUndefined();
  });

  it.each([
    [
      routing({ budget: { tokens: 6000 } }),
      { limits: { tokens: 6000, minutes: null, warnAt: 0.8 }, unreadable: [] },
      "budget: 6,000 tokens per session (warned at 80 %)",
    ],
    [
      routing({ budget: { tokens: 6000, minutes: 240, warnAt: 0.5 }, harnesses: { mine: { command: "x" } } }),
      {
        limits: { tokens: 6000, minutes: 240, warnAt: 0.5 },
        unreadable: [{ harness: "mine", reason: expect.stringMatching(/^the mine harness writes no transcript/) }],
      },
      /^budget: 6,000 tokens, 240 min per session \(warned at 50 %\); tokens not read for mine \(the mine harness writes no transcript the-loop reads usage from: only minutes are counted\)$/,
    ],
    [
      routing({ budget: { minutes: 30 }, defaultHarness: "cursor", harnesses: { codex: {} } }),
      { limits: { tokens: null, minutes: 30, warnAt: 0.8 }, unreadable: [{ harness: "cursor", reason: expect.any(String) }] },
      /^budget: 30 min per session \(warned at 80 %\); tokens not read for cursor \(/,
    ],
  ])("%#: the limits, and each allowed harness whose tokens cannot be read — never a 0", (given, status, line) => {
    const found = budgetStatus(given);
    expect(found).toEqual(status);
    expect(budgetLine(found ?? status)).toMatch(line);
  });
});
