import { describe, expect, it } from "vitest";
import { hasLabel, labelMatches, normalizeLabel } from "../../src/workitem/index.js";

describe("normalizeLabel", () => {
  it.each([
    ["the-loop", "the-loop"],
    ["The-Loop: Auto-Execute", "the-loop: auto-execute"],
    ["  Bug\t", "bug"],
    ["", ""],
    ["   ", ""],
  ])("%j → %j", (label, normalized) => {
    expect(normalizeLabel(label)).toBe(normalized);
  });
});

describe("labelMatches", () => {
  it.each([
    ["the-loop", "the-loop", true],
    ["The-Loop", "the-loop", true],
    [" the-loop\t", "the-loop", true],
    ["the-loop", "  THE-LOOP ", true],
    ["the-loop: auto", "the-loop", false],
    ["the loop", "the-loop", false],
    // An empty wanted label matches nothing, not even an empty one.
    ["", "", false],
    ["", "   ", false],
    ["x", "", false],
  ] as const)("%j against %j → %s", (label, wanted, expected) => {
    expect(labelMatches(label, wanted)).toBe(expected);
  });
});

describe("hasLabel", () => {
  it.each([
    [["bug", "Go"], "go", true],
    [["bug", " go "], "GO", true],
    [["bug"], "go", false],
    [[], "go", false],
    [[""], " ", false],
  ] as const)("%j has %j → %s", (labels, wanted, expected) => {
    expect(hasLabel(labels, wanted)).toBe(expected);
  });
});
