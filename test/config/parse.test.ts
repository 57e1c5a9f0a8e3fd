import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parse.js";
import { formatProblem } from "../../src/config/problem.js";
import { starterConfigText } from "../../src/config/starter.js";

function problemsOf(text: string): string[] {
  return parseConfigText(text).problems.map((problem) => formatProblem(problem, "c.yaml"));
}

describe("parseConfigText", () => {
  it("gives the defaults for an empty document", () => {
    const outcome = parseConfigText("");
    expect(outcome.problems).toEqual([]);
    expect(outcome.config).toMatchObject({
      state: { root: ".the-loop" },
      routing: {
        authorizedUsers: [],
        spawnOnUnmatched: "labeled",
        autoExecuteLabel: "the-loop: auto-execute",
        defaultHarness: "claude",
        harnesses: {},
        announce: { enabled: true },
        tmux: { keepSessionOnClose: true, killHarnessOnClose: true, harnessKillGraceSeconds: 5 },
      },
      polling: { enabled: false, intervalSeconds: 60, sources: [] },
      eventLog: { enabled: true },
      webhooks: { ghWebhook: {} },
      integrations: { local: { project: "default" } },
    });
  });

  it.each([
    ["an unknown top-level key", "state:\n  root: x\nbogus: 1\n", "c.yaml:3:1: bogus: unknown key; known keys here: version, state"],
    ["a misspelt key, with a suggestion", "state:\n  rooot: x\n", 'c.yaml:2:3: state.rooot: unknown key; did you mean "root"?'],
    ["a wrong type", 'eventLog:\n  enabled: "yes"\n', "c.yaml:2:3: eventLog.enabled: expected boolean, received string"],
    ["an empty path", 'eventLog:\n  path: ""\n', "c.yaml:2:3: eventLog.path: Too small"],
    ["a bad project name", 'integrations:\n  local:\n    project: "a b"\n', "c.yaml:3:5: integrations.local.project: a project name is"],
    ["a wrong version", "version: 2\n", "c.yaml:1:1: version: expected 1"],
    ["a list at the top", "- 1\n", "c.yaml:1:1: the config must be a mapping"],
    ["a YAML syntax error", "state:\n\troot: x\n", "c.yaml:2:1: YAML syntax: Tabs are not allowed as indentation"],
    ["a duplicate key", "state: {}\nstate: {}\n", "c.yaml:2:1: YAML syntax: Map keys must be unique"],
  ])("reports %s with its key path and line", (_name, text, expected) => {
    const problems = problemsOf(text);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(expected);
  });

  it("reports every problem at once", () => {
    const problems = problemsOf("state:\n  rooot: x\neventLog:\n  enabled: 3\n  colour: red\nextra: true\n");
    expect(problems).toEqual([
      expect.stringMatching(/^c\.yaml:2:3: state\.rooot: /),
      expect.stringMatching(/^c\.yaml:4:3: eventLog\.enabled: /),
      expect.stringMatching(/^c\.yaml:5:3: eventLog\.colour: unknown key/),
      expect.stringMatching(/^c\.yaml:6:1: extra: unknown key/),
    ]);
  });

  it.each([
    ["an unknown default harness", "routing:\n  defaultHarness: gpt\n", /routing\.defaultHarness: unknown harness "gpt"; known: claude, cursor/],
    [
      "a command harness without a command",
      "routing:\n  harnesses:\n    mine:\n      args: []\n",
      /routing\.harnesses\.mine\.command: "mine" is not a built-in harness/,
    ],
    [
      "resumeCommand on claude",
      "routing:\n  harnesses:\n    claude:\n      resumeCommand: [x]\n",
      /routing\.harnesses\.claude\.resumeCommand: "claude" resumes by itself/,
    ],
    ["polling enabled with no sources", "polling:\n  enabled: true\n", /polling\.sources: polling is enabled but has no sources/],
    ["an unknown spawn policy", "routing:\n  spawnOnUnmatched: sometimes\n", /routing\.spawnOnUnmatched: /],
    [
      "two commands sharing a keyword",
      "routing:\n  control:\n    keywords:\n      stop: GO-NOW\n      start: go-now\n",
      /routing\.control\.keywords\.stop: the stop keyword is the same as the start keyword/,
    ],
    [
      "a keyword in backticks",
      "routing:\n  control:\n    keywords:\n      start: '`go`'\n",
      /routing\.control\.keywords\.start: a keyword cannot contain a backtick/,
    ],
    ["a keyword that reads as a quote", "routing:\n  control:\n    keywords:\n      pause: '> hold'\n", /routing\.control\.keywords\.pause: a keyword cannot/],
    [
      "a keyword spanning lines",
      'routing:\n  control:\n    keywords:\n      resume: "go\\non"\n',
      /routing\.control\.keywords\.resume: one line of text without tabs/,
    ],
  ])("rejects %s", (_name, text, expected) => {
    expect(problemsOf(text)).toEqual([expect.stringMatching(expected)]);
  });

  it("accepts a command harness as the default harness", () => {
    const outcome = parseConfigText('routing:\n  defaultHarness: fake\n  harnesses:\n    fake:\n      command: [node, fake.mjs, "{prompt}"]\n');
    expect(outcome.problems).toEqual([]);
    expect(outcome.config?.routing.harnesses.fake).toEqual({ command: ["node", "fake.mjs", "{prompt}"], args: [] });
  });

  it("reads routing under webhooks.ghWebhook as top-level routing, with a warning", () => {
    const outcome = parseConfigText("webhooks:\n  ghWebhook:\n    pidfile: /run/r.pid\n    routing:\n      registryDir: /srv/sessions\n");
    expect(outcome.problems).toEqual([]);
    expect(outcome.config?.routing).toMatchObject({ registryDir: "/srv/sessions", spawnOnUnmatched: "labeled" });
    expect(outcome.config?.webhooks.ghWebhook).toMatchObject({ pidfile: "/run/r.pid" });
    expect(outcome.config?.webhooks.ghWebhook).not.toHaveProperty("routing");
    expect(outcome.warnings.map((warning) => formatProblem(warning, "c.yaml"))).toEqual([
      expect.stringMatching(/^c\.yaml:4:5: webhooks\.ghWebhook\.routing: this is the older spelling/),
    ]);
  });

  it("points problems inside the older routing spelling at the lines where they stand", () => {
    expect(problemsOf("webhooks:\n  ghWebhook:\n    routing:\n      registryDirr: x\n")).toEqual([
      expect.stringMatching(/^c\.yaml:4:7: webhooks\.ghWebhook\.routing\.registryDirr: unknown key; did you mean "registryDir"\?/),
    ]);
  });

  it("refuses routing written in both places", () => {
    expect(problemsOf("routing: {}\nwebhooks:\n  ghWebhook:\n    routing: {}\n")).toEqual([
      "c.yaml:4:5: webhooks.ghWebhook.routing: routing is set both at the top level (line 1) and here; keep only the top-level block",
    ]);
  });

  it("stores the local project in lower case", () => {
    expect(parseConfigText("integrations:\n  local:\n    project: MyApp\n").config?.integrations.local.project).toBe("myapp");
  });

  it("bounds alias expansion instead of exhausting memory", () => {
    const bomb = [
      "a: &a [x, x, x, x, x, x, x, x, x, x]",
      ...Array.from({ length: 8 }, (_, i) => {
        const prev = i === 0 ? "a" : `l${i - 1}`;
        return `l${i}: &l${i} [*${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}]`;
      }),
    ].join("\n");
    expect(problemsOf(bomb)[0]).toMatch(/YAML/);
  });

  it("accepts the starter config init writes, without warnings", () => {
    const outcome = parseConfigText(starterConfigText("my-project"));
    expect(outcome.problems).toEqual([]);
    expect(outcome.warnings).toEqual([]);
    expect(outcome.config?.integrations.local.project).toBe("my-project");
    expect(outcome.config?.state.root).toBe(".the-loop");
  });
});
