import { describe, expect, it } from "vitest";
import { sandboxProblem, type SandboxFact } from "../../src/daemon/status/problems.js";

describe("sandboxProblem: a session without its sandbox is a status problem, with the fix", () => {
  const cases: [string, SandboxFact, RegExp | undefined, RegExp | undefined][] = [
    ["auto, bwrap works: none", { mode: "auto" }, undefined, undefined],
    ["bubblewrap, bwrap works: none", { mode: "bubblewrap" }, undefined, undefined],
    [
      "none: everything the user reaches",
      { mode: "none" },
      /routing\.sandbox\.mode is none: .*daemon's secrets/,
      /routing\.sandbox\.mode: auto.*the-loop stop && the-loop start/,
    ],
    [
      "auto, no bwrap: unsandboxed, and why",
      { mode: "auto", unavailable: "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)" },
      /start without a sandbox .*because bwrap is not installed/,
      /apt-get install bubblewrap.*no restart needed/,
    ],
    [
      "bubblewrap, no bwrap: no session can start",
      { mode: "bubblewrap", unavailable: "bwrap cannot make a sandbox here: setting up uid map: Permission denied" },
      /no session can start: .*uid map/,
      /routing\.sandbox\.mode: none/,
    ],
  ];
  it.each(cases)("%s", (_name, fact, message, fix) => {
    const problem = sandboxProblem(fact);
    if (message === undefined) {
      expect(problem).toBeUndefined();
      return;
    }
    expect(problem?.code).toBe("sandbox-off");
    expect(problem?.message).toMatch(message);
    expect(problem?.fix).toMatch(fix ?? /./);
  });
});
