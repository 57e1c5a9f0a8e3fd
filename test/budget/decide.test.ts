import { describe, expect, it } from "vitest";
import { NO_RAISE, judgeBudget, parseBudgetRaise, raiseFor, usedOfLimit, withThousands } from "../../src/budget/decide.js";
import type { BudgetInput, BudgetVerdict } from "../../src/budget/decide.js";

const base: BudgetInput = { limits: { tokens: 1000, minutes: 60, warnAt: 0.8 }, raise: NO_RAISE, use: { tokens: 0, minutes: 0 }, warnedAt: {}, active: true };

describe("judgeBudget", () => {
  it.each<{ name: string; input: Partial<BudgetInput>; verdict: BudgetVerdict }>([
    { name: "well within", input: { use: { tokens: 100, minutes: 1 } }, verdict: { kind: "within" } },
    {
      name: "at the threshold: a warning",
      input: { use: { tokens: 800, minutes: 1 } },
      verdict: { kind: "warn", dimension: "tokens", used: 800, limit: 1000 },
    },
    { name: "warned at this limit already", input: { use: { tokens: 900, minutes: 1 }, warnedAt: { tokens: 1000 } }, verdict: { kind: "within" } },
    {
      name: "warned at a lower limit, raised since: warned again",
      input: { use: { tokens: 1700, minutes: 1 }, raise: { tokens: 1000, minutes: 0 }, warnedAt: { tokens: 1000 } },
      verdict: { kind: "warn", dimension: "tokens", used: 1700, limit: 2000 },
    },
    { name: "at the limit", input: { use: { tokens: 1000, minutes: 1 } }, verdict: { kind: "exceeded", dimension: "tokens", used: 1000, limit: 1000 } },
    {
      name: "past the limit, warned or not",
      input: { use: { tokens: 5000, minutes: 1 }, warnedAt: { tokens: 1000 } },
      verdict: { kind: "exceeded", dimension: "tokens", used: 5000, limit: 1000 },
    },
    {
      name: "over the limit, raised above it: within",
      input: { use: { tokens: 1200, minutes: 1 }, raise: { tokens: 1000, minutes: 0 }, warnedAt: { tokens: 1000 } },
      verdict: { kind: "within" },
    },
    { name: "minutes at their limit", input: { use: { tokens: 10, minutes: 61 } }, verdict: { kind: "exceeded", dimension: "minutes", used: 61, limit: 60 } },
    {
      name: "both over: tokens first",
      input: { use: { tokens: 2000, minutes: 61 } },
      verdict: { kind: "exceeded", dimension: "tokens", used: 2000, limit: 1000 },
    },
    {
      name: "tokens that cannot be read are never judged; minutes still are",
      input: { use: { tokens: undefined, minutes: 50 } },
      verdict: { kind: "warn", dimension: "minutes", used: 50, limit: 60 },
    },
    { name: "no limit on tokens: never over", input: { limits: { warnAt: 0.8 }, use: { tokens: 10 ** 9, minutes: 10 ** 6 } }, verdict: { kind: "within" } },
    { name: "a paused session is not acted on", input: { use: { tokens: 5000, minutes: 1 }, active: false }, verdict: { kind: "within" } },
    {
      name: "warnAt 1: the warning is the limit",
      input: { limits: { tokens: 1000, warnAt: 1 }, use: { tokens: 999, minutes: 1 } },
      verdict: { kind: "within" },
    },
  ])("$name", ({ input, verdict }) => {
    expect(judgeBudget({ ...base, ...input })).toEqual(verdict);
  });
});

describe("--budget +N", () => {
  it.each([
    { text: "+50000", parsed: { amount: 50000 } },
    { text: "+50k", parsed: { dimension: "tokens", amount: 50000 } },
    { text: "+2000tokens", parsed: { dimension: "tokens", amount: 2000 } },
    { text: "+30min", parsed: { dimension: "minutes", amount: 30 } },
    { text: "+30MINUTES", parsed: { dimension: "minutes", amount: 30 } },
    { text: "50000", parsed: undefined },
    { text: "+0", parsed: undefined },
    { text: "-5", parsed: undefined },
    { text: "+5x", parsed: undefined },
    { text: "+1e6", parsed: undefined },
  ])("$text", ({ text, parsed }) => {
    expect(parseBudgetRaise(text)).toEqual(parsed);
  });

  it.each([
    { parsed: { amount: 10 }, pausedOn: "minutes" as const, raise: { tokens: 0, minutes: 10 } },
    { parsed: { amount: 10 }, pausedOn: undefined, raise: { tokens: 10, minutes: 0 } },
    { parsed: { dimension: "tokens" as const, amount: 10 }, pausedOn: "minutes" as const, raise: { tokens: 10, minutes: 0 } },
  ])("a bare number raises the limit the item was paused on ($pausedOn)", ({ parsed, pausedOn, raise }) => {
    expect(raiseFor(parsed, pausedOn)).toEqual(raise);
  });

  it("figures as the comments say them", () => {
    expect(usedOfLimit({ dimension: "tokens", used: 123456, limit: 100000 })).toBe("123,456 of 100,000 tokens");
    expect(usedOfLimit({ dimension: "minutes", used: 61.5, limit: 60 })).toBe("61 of 60 min");
  });
});

describe("withThousands", () => {
  it.each([0, 7, 999, 1_000, 12_345, 100_000, 999_999, 1_000_000, 192_001, 2 ** 40, Number.MAX_SAFE_INTEGER, 1.5, -1_234, 1e21, Number.NaN, Infinity])(
    "spells %d as toLocaleString('en-US') does",
    (value) => {
      expect(withThousands(value)).toBe(value.toLocaleString("en-US"));
    },
  );
});
