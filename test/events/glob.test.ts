import { describe, expect, it } from "vitest";
import { globToRegExp, matchesGlob } from "../../src/events/glob.js";

describe("matchesGlob", () => {
  it.each([
    ["item.opened", "item.opened", true],
    ["item.opened", "item.*", true],
    ["item.opened", "*", true],
    ["item.opened", "*.opened", true],
    ["item.opened", "item.*ed", true],
    ["item.opened", "item.?pened", true],
    ["item.opened", "item.??pened", false],
    ["item.opened", "session.*", false],
    ["item.opened", "item", false],
    ["item.opened", "item.", false],
    ["item.opened", "Item.*", false],
    ["item.opened", "*.*.*", false],
    ["session.pr_linked", "session.*", true],
    ["session.pr_linked", "*pr_*", true],
    ["item.labeled", "item.[lu]*", true],
    ["item.unlabeled", "item.[lu]*", true],
    ["item.opened", "item.[lu]*", false],
    ["item.opened", "item.[!lu]*", true],
    ["item.opened", "item.[a-p]pened", true],
    ["item.opened", "item.[z-a]pened", false],
    ["item.opened", "item.[opened", false],
    ["item.[opened", "item.[opened", true],
    ["a+b(c)", "a+b(c)", true],
    ["axb", "a.b", false],
    ["a|b", "a|b", true],
    ["a\\b", "a\\b", true],
  ])("%s against %s → %s", (text, pattern, expected) => {
    expect(matchesGlob(text, pattern)).toBe(expected);
  });

  it("anchors the whole name", () => {
    expect(globToRegExp("item").test("xitemx")).toBe(false);
  });
});
