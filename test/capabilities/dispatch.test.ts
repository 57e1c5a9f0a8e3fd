import { describe, expect, it } from "vitest";
import { commandWordsOf, decideGate, decideStepFailure, instructionOf, livenessBanner, pointText, readCheckOutput } from "../../src/capabilities/dispatch.js";
import type { CheckOutcome, GateHook, ProcessOutcome, StepHook } from "../../src/capabilities/dispatch.js";

const ok = (stdout: string): ProcessOutcome => ({ exitCode: 0, stdout, stderr: "", timedOut: false });

function gate(overrides: Partial<GateHook> = {}): GateHook {
  return {
    capId: "checks",
    source: "gates[0]",
    kind: "gate",
    check: { query: "notes check" },
    blocking: true,
    onError: "skip",
    message: "release notes are missing",
    ...overrides,
  } as GateHook;
}

function step(overrides: Partial<StepHook> = {}): StepHook {
  return { capId: "checks", source: "steps[0]", kind: "step", ref: { command: "mark step" }, onError: "skip", ...overrides } as StepHook;
}

describe("reading a check's output", () => {
  it.each<[string, ProcessOutcome, CheckOutcome]>([
    ["a block with its message", ok('{"block": true, "message": "no notes"}'), { ok: true, block: true, message: "no notes" }],
    ["no block", ok('{"block": false}'), { ok: true, block: false }],
    ["an empty message is none", ok('{"block": true, "message": "  "}'), { ok: true, block: true }],
    ["not JSON", ok("yes"), { ok: false, error: 'q did not print JSON {"block": true|false, "message"?: "…"}' }],
    ["an array", ok("[]"), { ok: false, error: 'q printed an array, not {"block": …}' }],
    ["a string block", ok('{"block": "false"}'), { ok: false, error: 'q printed no boolean "block"' }],
    ["a number message", ok('{"block": false, "message": 3}'), { ok: false, error: 'q printed a "message" that is not a string' }],
    ["unknown keys, ignored", ok('{"block": false, "verdict": "fine", "score": 3}'), { ok: true, block: false }],
    ["no block at all", ok('{"message": "hm"}'), { ok: false, error: 'q printed no boolean "block"' }],
    ["both wrong: the block is named", ok('{"block": 1, "message": 3}'), { ok: false, error: 'q printed no boolean "block"' }],
    ["null", ok("null"), { ok: false, error: 'q printed null, not {"block": …}' }],
    [
      "a non-zero exit, whatever it printed",
      { exitCode: 3, stdout: '{"block": false}', stderr: "boom\n", timedOut: false },
      { ok: false, error: "q exited 3: boom" },
    ],
    ["a timeout", { exitCode: null, stdout: "", stderr: "", timedOut: true }, { ok: false, error: "q timed out" }],
    [
      "a program that did not start",
      { exitCode: null, stdout: "", stderr: "", timedOut: false, error: "command not found: x" },
      { ok: false, error: "q could not run: command not found: x" },
    ],
  ])("%s", (_name, outcome, expected) => {
    expect(readCheckOutput(outcome, "q")).toEqual(expected);
  });
});

describe("a gate's verdict", () => {
  it.each<[string, Partial<GateHook>, CheckOutcome, { decision: string; halt: boolean; contains?: string }]>([
    ["a pass moves on quietly", {}, { ok: true, block: false }, { decision: "pass", halt: false }],
    [
      "a blocking block halts with the gate's message",
      {},
      { ok: true, block: true, message: "RELEASE.md" },
      { decision: "block", halt: true, contains: "release notes are missing (RELEASE.md)" },
    ],
    [
      "an advisory block surfaces and moves on",
      { blocking: false },
      { ok: true, block: true },
      { decision: "advisory", halt: false, contains: "release notes are missing" },
    ],
    [
      "a failed check with onError skip warns and moves on",
      {},
      { ok: false, error: "q timed out" },
      { decision: "error-skipped", halt: false, contains: "q timed out" },
    ],
    [
      "a failed check with onError halt halts",
      { onError: "halt" },
      { ok: false, error: "q timed out" },
      { decision: "error-halted", halt: true, contains: "q timed out" },
    ],
    [
      "a failed advisory check with onError halt still halts",
      { onError: "halt", blocking: false },
      { ok: false, error: "x" },
      { decision: "error-halted", halt: true },
    ],
  ])("%s", (_name, overrides, outcome, expected) => {
    const verdict = decideGate(gate(overrides), outcome);
    expect(verdict.decision).toBe(expected.decision);
    expect(verdict.halt).toBe(expected.halt);
    if (expected.contains) expect(verdict.message).toContain(expected.contains);
  });
});

describe("a step", () => {
  it("halts on failure only with onError halt", () => {
    expect(decideStepFailure(step(), "exited 1").halt).toBe(false);
    expect(decideStepFailure(step({ onError: "halt" }), "exited 1")).toMatchObject({ halt: true });
  });

  it.each(["intel; rm -rf /", "$(id)", "a\nb", "Intel", "a  b", "", 3])("refuses the command %j before anything runs", (value) => {
    expect(commandWordsOf(value, "steps[0].ref.command")).toHaveProperty("refused");
  });

  it("splits good words into argv elements", () => {
    expect(commandWordsOf("intel api-surface", "f")).toEqual({ words: ["intel", "api-surface"] });
  });

  it("turns a skill and an agent into instructions, the agent with the liveness banner", () => {
    expect(instructionOf(step({ ref: { skill: "code-review" } }), "execute:post")).toBe(
      "Use the skill `gsd-code-review` now (checks, execute:post). If this session has no such skill, say so and go on: a step never blocks.",
    );
    const agent = instructionOf(step({ ref: { agent: "security-auditor" } }), "verify:pre") ?? "";
    expect(agent).toContain("`security-auditor`");
    expect(agent).toContain(livenessBanner("security-auditor"));
    expect(livenessBanner("x")).toBe("◆ Spawning x... (runs in a subagent — no output until it returns; expected, not a freeze)");
    expect(instructionOf(step(), "discuss:pre")).toBeUndefined();
  });

  it("turns an agent verdict into an advisory instruction", () => {
    const text = instructionOf(gate({ blocking: false, check: { agentVerdict: { ref: "reviewer", prompt: "Is it safe?" } } }), "ship:pre") ?? "";
    expect(text).toContain("Is it safe?");
    expect(text).toContain("advisory, never blocking");
    expect(text).toContain(livenessBanner("reviewer"));
  });
});

describe("the assignment's capability section", () => {
  it("is empty when the points gave nothing", () => {
    expect(pointText({ points: ["discuss:pre"], contributions: [], instructions: [], notes: [], tasks: [] })).toBe("");
  });

  it("puts each role's fragments verbatim under its heading, then the steps, the tasks and the notes", () => {
    const text = pointText({
      points: ["plan:pre", "plan:post"],
      contributions: [
        { role: "planner", text: "Plan in *small* steps.\n\n  indented" },
        { role: "checker", text: "Check the plan." },
        { role: "planner", text: "Name the risks." },
      ],
      instructions: ["Use the skill `x` now (c, plan:pre)."],
      notes: ["advisory"],
      tasks: [{ id: "jira-1", title: "Do it", content: "The content." }],
    });
    expect(text).toBe(
      [
        "Capabilities at plan:pre, plan:post:",
        "## For the planner\n\nPlan in *small* steps.\n\n  indented\n\nName the risks.",
        "## For the checker\n\nCheck the plan.",
        "## Steps from capabilities\n\n- Use the skill `x` now (c, plan:pre).",
        "## Task jira-1: Do it\n\nThe content.",
        "## Notes from capability gates\n\n- advisory",
      ].join("\n\n"),
    );
  });
});
