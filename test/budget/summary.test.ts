import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NO_RAISE } from "../../src/budget/decide.js";
import type { BudgetLimits } from "../../src/budget/decide.js";
import { BudgetStore } from "../../src/budget/store.js";
import type { BudgetRecord } from "../../src/budget/store.js";
import { NOT_READ_YET, readUsage, summarizeUsage, usageLine, usageText } from "../../src/budget/summary.js";
import type { UsageSummary } from "../../src/budget/summary.js";
import { tempDir } from "../support/temp.js";

const REF = "local:demo#1";
const CREATED = "2026-01-01T12:00:00.000Z";
const NOW = new Date("2026-01-01T12:07:30.000Z");
const session = { createdAt: CREATED, harness: "claude" };
const limits: BudgetLimits = { tokens: 10_000, minutes: 60, warnAt: 0.8 };

const record = (over: Partial<BudgetRecord> = {}): BudgetRecord => ({
  version: 1,
  ref: REF,
  session: CREATED,
  harness: "claude",
  raise: NO_RAISE,
  warnedAt: {},
  usage: { readable: true, readAt: "2026-01-01T12:07:00.000Z", files: 1, input: 1000, cached: 200, output: 300, total: 1500 },
  ...over,
});

describe("summarizeUsage: a session's usage as every reader shows it", () => {
  it.each<{ name: string; record: BudgetRecord | undefined; limits?: BudgetLimits; session?: typeof session; summary: UsageSummary }>([
    {
      name: "read: the tokens and their parts, the minutes counted now, the limits",
      record: record(),
      summary: {
        tokens: 1500,
        input: 1000,
        cached: 200,
        output: 300,
        minutes: 7,
        limits: { tokens: 10_000, minutes: 60 },
        readAt: "2026-01-01T12:07:00.000Z",
      },
    },
    {
      name: "raised: the limits in force, and what was raised",
      record: record({ raise: { tokens: 5000, minutes: 0 } }),
      summary: {
        tokens: 1500,
        input: 1000,
        cached: 200,
        output: 300,
        minutes: 7,
        limits: { tokens: 15_000, minutes: 60 },
        raised: { tokens: 5000, minutes: 0 },
        readAt: "2026-01-01T12:07:00.000Z",
      },
    },
    {
      name: "no limit set: only counted",
      record: record(),
      limits: { warnAt: 0.8 },
      summary: { tokens: 1500, input: 1000, cached: 200, output: 300, minutes: 7, limits: {}, readAt: "2026-01-01T12:07:00.000Z" },
    },
    {
      name: "not read yet: null with the reason, never 0",
      record: undefined,
      summary: { tokens: null, unreadable: NOT_READ_YET, minutes: 7, limits: { tokens: 10_000, minutes: 60 } },
    },
    {
      name: "a harness that records no tokens: null with why",
      record: undefined,
      session: { createdAt: CREATED, harness: "aider" },
      summary: {
        tokens: null,
        unreadable: expect.stringMatching(/^the aider harness writes no transcript/) as never,
        minutes: 7,
        limits: { tokens: 10_000, minutes: 60 },
      },
    },
    {
      name: "a transcript that could not be read: null with the daemon's reason",
      record: record({ usage: { readable: false, readAt: "2026-01-01T12:07:00.000Z", reason: "no transcript yet" } }),
      summary: { tokens: null, unreadable: "no transcript yet", minutes: 7, limits: { tokens: 10_000, minutes: 60 }, readAt: "2026-01-01T12:07:00.000Z" },
    },
    {
      name: "an earlier session's record counts for nothing: its raise neither",
      record: record({ session: "2025-12-31T00:00:00.000Z", raise: { tokens: 5000, minutes: 0 } }),
      summary: { tokens: null, unreadable: NOT_READ_YET, minutes: 7, limits: { tokens: 10_000, minutes: 60 } },
    },
  ])("$name", ({ record: given, limits: own, session: whose, summary }) => {
    expect(summarizeUsage(given, own ?? limits, whose ?? session, NOW)).toEqual(summary);
  });
});

describe("the usage's words", () => {
  it.each<[UsageSummary, string, string]>([
    [{ tokens: 12_345, minutes: 12, limits: { tokens: 100_000, minutes: 240 } }, "12,345/100,000 tok, 12/240 min", "12,345/100,000 tok, 12/240 min"],
    [{ tokens: 12_345, minutes: 3, limits: {} }, "12,345 tok, 3 min", "12,345 tok, 3 min"],
    [
      { tokens: null, unreadable: "the aider harness writes no transcript", minutes: 3, limits: { minutes: 30 } },
      "? tok, 3/30 min",
      "? tok, 3/30 min (tokens: the aider harness writes no transcript)",
    ],
  ])("%# %j", (summary, text, line) => {
    expect(usageText(summary)).toBe(text);
    expect(usageLine(summary)).toBe(line);
  });
});

describe("readUsage", () => {
  it("reads the item's budget record; a damaged one reads as none, never as 0 tokens", async () => {
    const dir = join(await tempDir(), "budget");
    await mkdir(dir, { recursive: true });
    const store = new BudgetStore({ dir });
    expect(readUsage(store, limits, REF, session, NOW).tokens).toBeNull();
    await writeFile(store.fileOf(REF), JSON.stringify(record()));
    expect(readUsage(store, limits, REF, session, NOW)).toMatchObject({ tokens: 1500, minutes: 7 });
    await writeFile(store.fileOf(REF), "{ not json");
    expect(readUsage(store, limits, REF, session, NOW)).toMatchObject({ tokens: null, unreadable: NOT_READ_YET });
  });
});
