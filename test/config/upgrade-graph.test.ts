import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parse.js";
import { upgradeConfigText } from "../../src/config/upgrade/config.js";

/** `upgrade-config` and graph.closeAfterMinutes: made visible where the graph is on, as a decision. */

const CONTROLLED = `version: 1
state:
  root: .the-loop
routing:
  control:
    enabled: true
    requireStartCommand: true
    keywords:
      start: the-loop:start-execution
      stop: the-loop:stop-execution
      pause: the-loop:pause-execution
      resume: the-loop:resume-execution
  mcp:
    enabled: true
  supervision:
    enabled: true
`;

describe("upgradeConfigText and graph.closeAfterMinutes", () => {
  it("adds it, with its default and a comment, to a graph block that turns the graph on, and asks for the decision", () => {
    const text = `${CONTROLLED}graph:\n  enabled: true   # ours\n  default: adhoc\n`;
    const upgrade = upgradeConfigText(text);
    expect(upgrade.added).toEqual(["graph.closeAfterMinutes"]);
    expect(upgrade.text).toContain("graph:\n  enabled: true   # ours\n  default: adhoc\n");
    expect(upgrade.text).toMatch(/\n {2}# A run's session closes this long after the run ends; 0: at once, never: kept[^\n]*\n {2}closeAfterMinutes: 10\n$/);
    expect(parseConfigText(upgrade.text).config?.graph.closeAfterMinutes).toBe(10);
    expect(upgrade.needsDecision).toEqual([{ key: "graph.closeAfterMinutes", why: expect.stringContaining("Set it to never") }]);
    expect(upgradeConfigText(upgrade.text).changed).toBe(false);
  });

  it.each([
    { name: "without a graph block", text: CONTROLLED },
    { name: "with the graph off", text: `${CONTROLLED}graph:\n  enabled: false\n` },
    { name: "with the decision made", text: `${CONTROLLED}graph:\n  enabled: true\n  closeAfterMinutes: never\n` },
  ])("leaves the file alone $name", ({ text }) => {
    expect(upgradeConfigText(text)).toMatchObject({ changed: false, added: [], needsDecision: [] });
  });
});
