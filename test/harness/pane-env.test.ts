import { describe, expect, it } from "vitest";
import { definedEnvironment, inheritedEnvironment, paneEnvPlan, parseShellEnvironment } from "../../src/harness/pane-env.js";

describe("parseShellEnvironment", () => {
  it("reads tmux's shell form: escaped values, values over several lines, removed variables", () => {
    const text = [
      'HOME="/home/alice"; export HOME;',
      'Q="a\\"b\\$c\\\\d\\`e\'f"; export Q;',
      'MULTI="first',
      'NOT_A_VAR=second"; export MULTI;',
      'EMPTY=""; export EMPTY;',
      "unset DISPLAY;",
      "some line tmux never prints",
      "",
    ].join("\n");
    expect(parseShellEnvironment(text)).toEqual(
      new Map<string, string | null>([
        ["HOME", "/home/alice"],
        ["Q", "a\"b$c\\d`e'f"],
        ["MULTI", "first\nNOT_A_VAR=second"],
        ["EMPTY", ""],
        ["DISPLAY", null],
      ]),
    );
  });
});

describe("inheritedEnvironment", () => {
  it("overlays the session's variables on the global ones, and drops what the session removes", () => {
    const global = new Map<string, string | null>([
      ["A", "global"],
      ["B", "global"],
      ["C", "global"],
    ]);
    const session = new Map<string, string | null>([
      ["B", "session"],
      ["C", null],
      ["D", null],
      ["E", "session"],
    ]);
    expect(inheritedEnvironment(global, session)).toEqual(
      new Map([
        ["A", "global"],
        ["B", "session"],
        ["E", "session"],
      ]),
    );
  });
});

describe("paneEnvPlan", () => {
  const wanted = { HOME: "/home/alice", ANTHROPIC_API_KEY: "sk-key", THE_LOOP_WORK_ITEM: "local:demo#1", PATH: "/loop/bin:/usr/bin" };

  it.each([
    [
      "a server started with the-loop's environment: only the session's own variables travel",
      { HOME: "/home/alice", ANTHROPIC_API_KEY: "sk-key", PATH: "/usr/bin", PWD: "/srv" },
      { THE_LOOP_WORK_ITEM: "local:demo#1" },
      [],
    ],
    [
      "an operator's server: what differs is passed, what is not wanted is withheld",
      { HOME: "/home/alice", ANTHROPIC_API_KEY: "old", GH_TOKEN: "ghp", THE_LOOP_GH_WEBHOOK_SECRET: "s", EDITOR: "vim", PATH: "/bin" },
      { ANTHROPIC_API_KEY: "sk-key", THE_LOOP_WORK_ITEM: "local:demo#1" },
      ["EDITOR", "GH_TOKEN", "THE_LOOP_GH_WEBHOOK_SECRET"],
    ],
    [
      "an empty server: everything is passed but PATH, which travels as the client's",
      {},
      { HOME: "/home/alice", ANTHROPIC_API_KEY: "sk-key", THE_LOOP_WORK_ITEM: "local:demo#1" },
      [],
    ],
    [
      "what tmux sets in every pane is neither passed nor withheld",
      { ...wanted, TERM: "xterm", TMUX: "/tmp/tmux-1/default,1,0", TMUX_PANE: "%1", SHELL: "/bin/zsh", PWD: "/", TERM_PROGRAM: "x" },
      {},
      [],
    ],
  ])("%s", (_what, inherited, set, unset) => {
    expect(paneEnvPlan(new Map(Object.entries(inherited)), wanted)).toEqual({ set, unset });
  });

  it("never passes what tmux would override", () => {
    expect(paneEnvPlan(new Map(), { TERM: "xterm", SHELL: "/bin/zsh", PWD: "/", A: "1" })).toEqual({ set: { A: "1" }, unset: [] });
  });
});

describe("definedEnvironment", () => {
  it("keeps set variables with names env can take", () => {
    expect(definedEnvironment({ A: "1", B: undefined, "BASH_FUNC_x%%": "() { :; }", "1X": "y", _Z: "" })).toEqual({ A: "1", _Z: "" });
  });
});
