import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BodySignature, utf8Text } from "../../src/ingress/webhook/body.js";

/** What the receiver read bodies with before: the WHATWG decoder, fatal, BOM dropped. */
const FATAL = new TextDecoder("utf-8", { fatal: true });

function reference(bytes: Buffer): string | undefined {
  try {
    return FATAL.decode(bytes);
  } catch {
    return undefined;
  }
}

const CASES: readonly (readonly [string, number[] | string])[] = [
  ["empty", []],
  ["ASCII JSON", '{"action":"created"}'],
  ["two-, three- and four-byte characters", '{"t":"é – 漢 😀"}'],
  ["a leading BOM", [0xef, 0xbb, 0xbf, 0x7b, 0x7d]],
  ["a BOM alone", [0xef, 0xbb, 0xbf]],
  ["two BOMs (only the first is dropped)", [0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, 0x31]],
  ["a BOM not at the start", [0x31, 0xef, 0xbb, 0xbf]],
  ["a lone continuation byte", [0x7b, 0x80, 0x7d]],
  ["a truncated sequence at the end", [0x7b, 0xe6, 0xbc]],
  ["an overlong slash", [0xc0, 0xaf]],
  ["an overlong three-byte NUL", [0xe0, 0x80, 0x80]],
  ["an encoded surrogate", [0xed, 0xa0, 0x80]],
  ["a code point past U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
  ["0xFF", [0x61, 0xff]],
  ["Latin-1 é", [0x22, 0xe9, 0x22]],
];

describe("utf8Text", () => {
  it.each(CASES)("reads %s as a fatal TextDecoder does", (_name, input) => {
    const bytes = typeof input === "string" ? Buffer.from(input, "utf8") : Buffer.from(input);
    expect(utf8Text(bytes)).toBe(reference(bytes));
  });

  it("drops a leading BOM and refuses invalid bytes", () => {
    expect(utf8Text(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))).toBe("{}");
    expect(utf8Text(Buffer.from([0xc0, 0xaf]))).toBeUndefined();
  });
});

describe("BodySignature", () => {
  const SECRET = "webhook-secret-for-the-table";
  const BODY = Buffer.from('{"action":"created","comment":{"body":"é"}}');
  const HEX = createHmac("sha256", SECRET).update(BODY).digest("hex");
  const flipped = `${HEX.slice(0, -1)}${HEX.endsWith("0") ? "1" : "0"}`;

  it.each<[string, string, boolean]>([
    ["GitHub's header", `sha256=${HEX}`, true],
    ["upper-case hex", `sha256=${HEX.toUpperCase()}`, true],
    ["an upper-case prefix", `SHA256=${HEX}`, true],
    ["spaces around it", `  sha256=${HEX}\t`, true],
    ["one hex digit changed", `sha256=${flipped}`, false],
    ["one digit short", `sha256=${HEX.slice(0, -1)}`, false],
    ["one digit long", `sha256=${HEX}0`, false],
    ["a non-hex last digit", `sha256=${HEX.slice(0, -1)}g`, false],
    ["a non-hex digit inside", `sha256=${HEX.slice(0, 10)}z${HEX.slice(11)}`, false],
    ["no prefix", HEX, false],
    ["another algorithm", `sha1=${HEX}`, false],
    ["a prefix alone", "sha256=", false],
    ["empty", "", false],
    ["all zeros", `sha256=${"0".repeat(64)}`, false],
  ])("%s: %s", (_name, header, expected) => {
    const signature = new BodySignature(SECRET);
    // Fed in two chunks, as a body arrives.
    signature.update(BODY.subarray(0, 7));
    signature.update(BODY.subarray(7));
    expect(signature.matches(header)).toBe(expected);
  });

  it("checks the bytes fed, not another body's", () => {
    const signature = new BodySignature(SECRET);
    signature.update(Buffer.from("{}"));
    expect(signature.matches(`sha256=${HEX}`)).toBe(false);
  });
});
