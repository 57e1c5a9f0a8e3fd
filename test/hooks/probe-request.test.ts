import { describe, expect, it } from "vitest";
import { isLoadRequest } from "../../src/hooks/probe.js";

describe("isLoadRequest: what the hook check's child accepts over IPC", () => {
  it.each([
    [{ raw: [], configDir: "/p" }, true],
    [{ raw: [], configDir: "/p", configPath: "/p/cli-config.yaml", importTimeoutMs: 200 }, true],
    [null, false],
    ["/p", false],
    [{ raw: [] }, false],
    [{ raw: [], configDir: 7 }, false],
    [{ raw: [], configDir: "/p", configPath: 1 }, false],
    [{ raw: [], configDir: "/p", importTimeoutMs: -1 }, false],
    [{ raw: [], configDir: "/p", importTimeoutMs: "200" }, false],
  ])("%j → %s", (value, expected) => {
    expect(isLoadRequest(value)).toBe(expected);
  });
});
