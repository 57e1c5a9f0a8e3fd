import { describe, expect, it } from "vitest";
import { allowedHarnesses, chooseHarness, type HarnessRouting } from "../../src/routing/harness-choice.js";

const routing: HarnessRouting = {
  defaultHarness: "claude",
  harnesses: { claude: {}, "my-agent": { command: ["my-agent"] } },
  harnessByLabel: { "agent:codex": "codex", "Agent: Gemini": "gemini" },
};

describe("chooseHarness: the start's choice, else the first mapped label, else the default", () => {
  it.each([
    ["no choice, no mapped label: the default", {}, [], { harness: "claude", by: "default" }],
    ["a mapped label", {}, ["bug", "agent:codex"], { harness: "codex", by: "label", label: "agent:codex" }],
    ["a label compared as labels are (trimmed, any case)", {}, [" agent: gemini "], { harness: "gemini", by: "label", label: "Agent: Gemini" }],
    [
      "two mapped labels: the config's order decides, not the item's",
      {},
      ["Agent: Gemini", "agent:codex"],
      { harness: "codex", by: "label", label: "agent:codex" },
    ],
    ["the start's choice wins over a label", { chosen: "my-agent" }, ["agent:codex"], { harness: "my-agent", by: "start" }],
    ["a choice of a harness a label maps to", { chosen: "gemini" }, [], { harness: "gemini", by: "start" }],
  ])("%s", (_name, input, labels, expected) => {
    expect(chooseHarness(routing, { ...input, labels })).toEqual(expected);
  });

  it("refuses a choice the config does not allow, and never puts another agent in its place", () => {
    const choice = chooseHarness(routing, { chosen: "cursor", labels: ["agent:codex"] });
    expect(choice).toEqual({
      refused: expect.stringMatching(/chose harness "cursor", which the config no longer allows \(allowed: claude, my-agent, codex, gemini\)/),
    });
  });

  it("allows the default, each declared harness and each a label maps to, once each", () => {
    expect(allowedHarnesses({ ...routing, harnessByLabel: { a: "codex", b: "codex", c: "claude" } })).toEqual(["claude", "my-agent", "codex"]);
  });
});
