import { describe, expect, it } from "vitest";
import { clip, outputTail, stripControlCharacters } from "../../src/subprocess/index.js";
import { wholeUtf8Prefix, wholeUtf8Suffix } from "../../src/subprocess/text.js";

describe("stripControlCharacters", () => {
  it.each([
    { input: "plain", expected: "plain" },
    { input: "\u001b[31mred\u001b[0m", expected: "red" },
    { input: "\u001b]0;title\u0007after", expected: "after" },
    { input: "a\tb", expected: "a b" },
    { input: "a\r\nb\rc", expected: "a\nb\nc" },
    { input: "bell\u0007 nul\u0000 del\u007f c1\u009b", expected: "bell nul del c1" },
  ])("$input → $expected", ({ input, expected }) => {
    expect(stripControlCharacters(input)).toBe(expected);
  });
});

describe("outputTail", () => {
  it.each([
    { text: "", lines: 3, chars: 100, expected: "" },
    { text: "one\n\n  two  \nthree\n", lines: 2, chars: 100, expected: "two | three" },
    { text: "a\nb\nc\nd", lines: 10, chars: 100, expected: "a | b | c | d" },
    { text: "0123456789", lines: 1, chars: 5, expected: "…6789" },
    { text: "\u001b[1mFAIL\u001b[0m x.test.ts", lines: 1, chars: 100, expected: "FAIL x.test.ts" },
  ])("keeps the end of $text", ({ text, lines, chars, expected }) => {
    expect(outputTail(text, lines, chars)).toBe(expected);
  });
});

describe("clip", () => {
  it.each([
    { text: "short", max: 10, expected: "short" },
    { text: "0123456789", max: 5, expected: "0123…" },
  ])("clips $text to $max", ({ text, max, expected }) => {
    expect(clip(text, max)).toBe(expected);
  });
});

describe("cutting UTF-8 at a byte cap", () => {
  const bytes = Buffer.from("aé€😀", "utf8"); // 1 + 2 + 3 + 4 bytes
  it.each([
    { end: 1, expected: "a" },
    { end: 2, expected: "a" },
    { end: 3, expected: "aé" },
    { end: 5, expected: "aé" },
    { end: 6, expected: "aé€" },
    { end: 9, expected: "aé€" },
    { end: 10, expected: "aé€😀" },
  ])("a prefix of $end bytes decodes to $expected", ({ end, expected }) => {
    expect(wholeUtf8Prefix(bytes.subarray(0, end)).toString("utf8")).toBe(expected);
  });

  it.each([
    { start: 0, expected: "aé€😀" },
    { start: 2, expected: "€😀" },
    { start: 4, expected: "😀" },
    { start: 7, expected: "" },
  ])("a suffix from byte $start decodes to $expected", ({ start, expected }) => {
    expect(wholeUtf8Suffix(bytes.subarray(start)).toString("utf8")).toBe(expected);
  });
});
