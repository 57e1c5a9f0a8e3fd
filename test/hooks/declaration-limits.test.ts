import { describe, expect, it } from "vitest";
import { HookDeclarationError, parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { DeclarationContext } from "../../src/hooks/declaration.js";
import { LIFECYCLE_POINT_NAMES } from "../../src/sdk/hooks/catalog.js";

/** Review findings on the declaration: what can never work fails at load (R3.4), never later and never silently. */

const CONTEXT: DeclarationContext = { configDir: "/etc/the-loop", points: LIFECYCLE_POINT_NAMES, homeDir: "/home/op" };

function failure(raw: unknown): string {
  try {
    parseHookDeclaration(raw, CONTEXT);
  } catch (error) {
    expect(error).toBeInstanceOf(HookDeclarationError);
    return (error as Error).message;
  }
  throw new Error("the declaration loaded");
}

describe("parseHookDeclaration: an on that names no point", () => {
  it.each([
    ["a remote entry", { url: "https://compliance.example/rpc" }],
    ["a local entry", { path: "gate.mjs" }],
  ])("an empty on list on %s fails: the entry would load and never run, required or not", (_title, target) => {
    expect(failure([{ name: "gate", ...target, on: [], required: true }])).toBe(
      'hooks[0] "gate": on lists no point, so the hook would never run; name the points it runs at, remove on to run it at every point it handles, or set enabled: false',
    );
  });
});

describe("parseHookDeclaration: headers that could never be sent", () => {
  it.each([
    [
      "a header name with a space",
      { "X Team": "sec" },
      'header name "X Team" is not a valid HTTP header name; write the name alone (letters, digits, -), without spaces or a colon',
    ],
    [
      "a header name padded with a space",
      { " Authorization": "x" },
      'header name " Authorization" is not a valid HTTP header name; write the name alone (letters, digits, -), without spaces or a colon',
    ],
    [
      "a header name with a colon",
      { "X-Team: sec": "x" },
      'header name "X-Team: sec" is not a valid HTTP header name; write the name alone (letters, digits, -), without spaces or a colon',
    ],
    [
      "an empty header name",
      { "": "x" },
      'header name "" is not a valid HTTP header name; write the name alone (letters, digits, -), without spaces or a colon',
    ],
    [
      "a header value beyond Latin-1",
      { "X-Team": "s€c" },
      'header "X-Team" has a value HTTP cannot carry (a line break, a control character, or a character beyond Latin-1)',
    ],
    [
      "a header value with a line break",
      { "X-Team": "sec\r\nX-Injected: 1" },
      'header "X-Team" has a value HTTP cannot carry (a line break, a control character, or a character beyond Latin-1)',
    ],
  ])("%s fails at load, not at every call", (_title, headers, message) => {
    expect(failure([{ name: "audit", url: "https://audit.example/rpc", headers }])).toBe(`hooks[0] "audit": ${message}`);
  });

  it("ordinary headers load", () => {
    const [entry] = parseHookDeclaration(
      [{ name: "audit", url: "https://audit.example/rpc", headers: { "X-Team": "sec ops", "x_trace.id": "a\tb" } }],
      CONTEXT,
    );
    expect(entry).toMatchObject({ headers: { "X-Team": "sec ops", "x_trace.id": "a\tb" } });
  });
});
