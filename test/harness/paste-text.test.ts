import { describe, expect, it } from "vitest";
import { pasteText } from "../../src/harness/index.js";

/** The C0 and C1 controls and DEL (Unicode's Cc), less the two that pasteText keeps. */
const FORBIDDEN = /[^\P{Cc}\t\n]/u;

describe("pasteText", () => {
  it.each([
    ["a bracketed-paste start marker", "a\x1b[200~b", "a\u241b[200~b"],
    ["a bracketed-paste end marker", "a\x1b[201~b", "a\u241b[201~b"],
    ["^C, which interrupts the agent", "stop\x03", "stop\u2403"],
    ["^D, end of input", "\x04bye", "\u2404bye"],
    ["^Z, suspend", "\x1a", "\u241a"],
    ["NUL", "a\x00b", "a\u2400b"],
    ["DEL", "a\x7fb", "a\u2421b"],
    ["backspace and vertical tab", "a\x08b\x0bc", "a\u2408b\u240bc"],
    ["a lone ESC", "\x1b", "\u241b"],
    ["an OSC 52 clipboard write ended by BEL", "\x1b]52;c;cm0gLXJmIH4=\x07", "\u241b]52;c;cm0gLXJmIH4=\u2407"],
    ["an OSC title ended by ST", "\x1b]0;pwned\x1b\\", "\u241b]0;pwned\u241b\\"],
    ["the 8-bit CSI, shown as the ESC [ it stands for", "\u009b201~", "\u241b[201~"],
    ["the 8-bit OSC and ST", "\u009d0;x\u009c", "\u241b]0;x\u241b\\"],
    ["the first and last C1 controls", "\u0080\u009f", "\u241b@\u241b_"],
    ["a typed-line tail", "ok\r!touch x\r", "ok\n!touch x\n"],
    ["CRLF line ends", "one\r\ntwo\r\n", "one\ntwo\n"],
    ["CR CR LF, one line end per CR", "a\r\r\nb", "a\n\nb"],
    ["a lone high surrogate", "a\ud800b", "a\ufffdb"],
    ["a lone low surrogate", "a\udc00b", "a\ufffdb"],
  ])("makes %s visible and inert", (_what, input, expected) => {
    const cleaned = pasteText(input);
    expect(cleaned).toBe(expected);
    expect(cleaned).not.toMatch(FORBIDDEN);
  });

  it.each([
    ["tabs and line feeds", "col1\tcol2\nline two\n\n\tindented"],
    ["emoji, including a ZWJ sequence and a flag", "ship it 🚀 👩‍💻 🇳🇱"],
    ["CJK and other scripts", "日本語のテキスト, 한국어, العربية, ελληνικά"],
    ["combining marks", "e\u0301 a\u0308 n\u0303 Z\u0351\u0336\u0334"],
    ["symbols near the control ranges", "\u00a0nbsp ¡¿ ÿ \u2028 ␛ ␃ ^[ ~"],
    ["shell and format metacharacters", "$(rm -rf ~) `id` ; && || #{session_name} 'q' \"dq\" \\"],
    ["a regex that looks like caret notation", "^[a-z]+$"],
  ])("keeps %s as they are", (_what, input) => {
    expect(pasteText(input)).toBe(input);
  });

  it("leaves no byte a terminal reads as a control, for every code point", () => {
    let every = "";
    for (let code = 0; code <= 0x10ffff; code++) every += String.fromCodePoint(code);
    const cleaned = pasteText(every);
    expect(cleaned).not.toMatch(FORBIDDEN);
    // What reaches the pane is the UTF-8 of the text: decoding it gives back no control either.
    expect(Buffer.from(cleaned, "utf8").toString("utf8")).toBe(cleaned);
  });

  it("cannot rebuild a paste marker from what it leaves", () => {
    // Cleaning that removed the marker itself would join the halves around it into a new one.
    for (const input of ["\x1b[20\x1b[201~1~", "\x1b\x1b[201~[201~", "\x1b[201\x00~", "\u009b\x1b[201~201~", "\x1b\r\n[201~"]) {
      const cleaned = pasteText(input);
      expect(cleaned).not.toContain("\x1b");
      expect(cleaned).not.toContain("\u009b");
      expect(pasteText(cleaned)).toBe(cleaned);
    }
  });

  it("never empties a text that had something in it, and leaves an empty one empty", () => {
    // Each character of a cleaned text comes from one of the original, so a comment of nothing but
    // controls still arrives as something a reader can see.
    for (let code = 0; code < 0xa0; code++) {
      expect(pasteText(String.fromCharCode(code))).not.toBe("");
    }
    expect(pasteText("\r\n")).toBe("\n");
    expect(pasteText("")).toBe("");
  });

  it("is idempotent", () => {
    const nasty = "a\x1b[201~\r\n\x03\u009b\t\x7f\ud800 ✅";
    expect(pasteText(pasteText(nasty))).toBe(pasteText(nasty));
  });

  it("cleans long inputs in linear time", () => {
    // Hostile and benign shapes of about a million characters each: a pass that rescans or rebuilds
    // the text per match would take hours; one linear pass takes milliseconds.
    const unit = 1 << 17;
    const inputs = [
      "\x1b[201~\r!x\r".repeat(unit),
      "\r".repeat(8 * unit),
      "\r\n".repeat(4 * unit),
      "plain text, nothing to change. ".repeat(unit / 4),
      "👩‍💻".repeat(2 * unit),
    ];
    const started = performance.now();
    const lengths = inputs.map((input) => pasteText(input).length);
    const elapsedMs = performance.now() - started;
    expect(lengths).toEqual([10 * unit, 8 * unit, 4 * unit, 31 * (unit / 4), 10 * unit]);
    expect(elapsedMs).toBeLessThan(5_000);
  });
});
