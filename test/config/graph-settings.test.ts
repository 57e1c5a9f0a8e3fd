import { describe, expect, it } from "vitest";
import { DEFAULT_GATE_KEYWORDS } from "../../src/config/graph-schema.js";
import { parseConfigText } from "../../src/config/parse.js";
import { formatProblem } from "../../src/config/problem.js";

function problemsOf(text: string): string[] {
  return parseConfigText(text).problems.map((problem) => formatProblem(problem, "c.yaml"));
}

describe("the graph settings", () => {
  it("default to graphs off, work-item, the namespaced gate keywords and no self-approval", () => {
    const config = parseConfigText("").config;
    expect(config?.graph).toEqual({ enabled: false, default: "work-item", keywords: DEFAULT_GATE_KEYWORDS, allowSelfApproval: false, closeAfterMinutes: 10 });
    expect(config?.graphs).toEqual([]);
    expect(DEFAULT_GATE_KEYWORDS).toEqual({ approve: "the-loop:approve", requestChanges: "the-loop:request-changes" });
  });

  it.each([
    { text: "0", value: 0 },
    { text: "0.5", value: 0.5 },
    { text: "never", value: "never" },
  ])("take closeAfterMinutes: $text", ({ text, value }) => {
    const outcome = parseConfigText(`graph:\n  closeAfterMinutes: ${text}\n`);
    expect(outcome.problems).toEqual([]);
    expect(outcome.config?.graph.closeAfterMinutes).toBe(value);
  });

  it.each(["-1", "always", "20000"])("refuse closeAfterMinutes: %s", (text) => {
    const outcome = parseConfigText(`graph:\n  closeAfterMinutes: ${text}\n`);
    expect(outcome.problems.map((problem) => problem.path)).toEqual(["graph.closeAfterMinutes"]);
  });

  it("accept an operator graph as the default", () => {
    const outcome = parseConfigText("graph:\n  enabled: true\n  default: mine\ngraphs:\n  - {name: mine, path: graphs/mine.yaml}\n");
    expect(outcome.problems).toEqual([]);
    expect(outcome.config?.graph.default).toBe("mine");
    expect(outcome.config?.graphs).toEqual([{ name: "mine", path: "graphs/mine.yaml" }]);
  });

  it.each([
    [
      "a default no graph has",
      "graph:\n  default: mine\n",
      'c.yaml:2:3: graph.default: no graph is named "mine"; known: work-item, adhoc (declare it under graphs)',
    ],
    [
      "a default that is no graph name",
      "graph:\n  default: My Graph\n",
      "c.yaml:2:3: graph.default: a graph name is lowercase words joined by '-', such as work-item",
    ],
    ["a misspelt key", "graph:\n  enable: true\n", 'c.yaml:2:3: graph.enable: unknown key; did you mean "enabled"?'],
    [
      "a keyword with a backtick",
      "graph:\n  keywords:\n    approve: '`ok`'\n",
      "c.yaml:3:5: graph.keywords.approve: a keyword cannot contain a backtick or `<!--`, or start with `>`: the parser reads those as quoted text",
    ],
    ["a keyword of two lines", 'graph:\n  keywords:\n    approve: "ship\\nit"\n', "c.yaml:3:5: graph.keywords.approve: one line of text without tabs"],
    [
      "one keyword for both answers",
      "graph:\n  keywords:\n    approve: OK!\n    requestChanges: ok!\n",
      "c.yaml:4:5: graph.keywords.requestChanges: the requestChanges keyword is the same as the approve keyword; each answer needs its own",
    ],
    [
      "a gate keyword that is a control keyword",
      "graph:\n  keywords:\n    requestChanges: The-Loop:Stop-Execution\n",
      "c.yaml:3:5: graph.keywords.requestChanges: the requestChanges keyword is the same as the control stop keyword (routing.control.keywords.stop); each needs its own",
    ],
    [
      "an operator graph with a built-in's name",
      "graphs:\n  - {name: work-item, path: mine.yaml}\n",
      'c.yaml:2:6: graphs[0].name: "work-item" is a built-in graph; give yours another name (copy the built-in\'s file to change it) and set graph.default to it',
    ],
    [
      "two operator graphs of one name",
      "graphs:\n  - {name: mine, path: a.yaml}\n  - {name: mine, path: b.yaml}\n",
      'c.yaml:3:6: graphs[1].name: graphs[0] already has the name "mine"',
    ],
    ["an entry without a path", "graphs:\n  - {name: mine}\n", "c.yaml:2:5: graphs[0].path: expected string, received undefined"],
    ["an unknown key in an entry", "graphs:\n  - {name: mine, path: a.yaml, url: x}\n", "c.yaml:2:32: graphs[0].url: unknown key; known keys here: name, path"],
  ])("refuse %s", (_what, text, expected) => {
    expect(problemsOf(text)).toEqual([expected]);
  });
});
