import { describe, expect, it } from "vitest";
import { endRun } from "../../src/graph-run/outcomes.js";
import { blockedText, closeAfterField, closeAfterText, runEndedAt, runEndedText, sessionCloseDue } from "../../src/graph-run/session-notices.js";
import type { CloseDueInput } from "../../src/graph-run/session-notices.js";
import { GRAPH_STATUSES } from "../../src/graph/types.js";
import type { GraphStatus } from "../../src/graph/types.js";
import { GRAPH, OPERATOR, REF, T0, applied, at, started, stateAt } from "../graph/fixture.js";

/** What a session is told when its run ends or is blocked, and when it is closed for an ended run. */

const MINUTE = 60_000;

describe("sessionCloseDue", () => {
  const base: CloseDueInput = {
    status: "done",
    endedAt: T0.toISOString(),
    sessionCreatedAt: at(-30).toISOString(),
    now: at(10),
    closeAfterMs: 10 * MINUTE,
  };
  const cases: { name: string; input: Partial<CloseDueInput>; due: boolean }[] = [
    { name: "a done run, the delay passed", input: {}, due: true },
    { name: "a done run, the delay not yet passed", input: { now: at(9.9) }, due: false },
    { name: "0: at once", input: { closeAfterMs: 0, now: T0 }, due: true },
    { name: "never", input: { closeAfterMs: undefined, now: at(100_000) }, due: false },
    { name: "a session begun after the run ended is not its run's", input: { sessionCreatedAt: at(1).toISOString() }, due: false },
    { name: "a session whose start time does not parse is the run's", input: { sessionCreatedAt: "?" }, due: true },
    { name: "an end time that does not parse closes nothing", input: { endedAt: "?" }, due: false },
  ];
  it.each(cases)("$name → $due", ({ input, due }) => {
    expect(sessionCloseDue({ ...base, ...input })).toBe(due);
  });

  const finals: readonly GraphStatus[] = ["done", "failed", "exhausted", "stalled", "canceled"];
  it.each(GRAPH_STATUSES.map((status) => ({ status, due: finals.includes(status) })))("status $status → $due", ({ status, due }) => {
    expect(sessionCloseDue({ ...base, status })).toBe(due);
  });
});

describe("runEndedAt", () => {
  it("is the last ending history entry, not a later change of the record", () => {
    const ended = applied(endRun(GRAPH, started(), { status: "canceled", reasonCode: "stopped", reason: "stopped", actor: OPERATOR, at: at(3) })).state;
    expect(runEndedAt({ ...ended, updatedAt: at(7).toISOString() })).toBe(at(3).toISOString());
  });

  it("is the record's last change when no entry says when it ended (a history cut to its bound)", () => {
    expect(runEndedAt(stateAt({ status: "done", history: [], updatedAt: at(4).toISOString() }))).toBe(at(4).toISOString());
  });
});

describe("runEndedText", () => {
  it("begins with the-loop's mark, says how and where the run ended, and when the session closes", () => {
    const done = stateAt({ status: "done", node: "done" });
    const text = runEndedText(GRAPH, done, 10 * MINUTE);
    expect(text.split("\n")[0]).toBe(`the-loop run ended for ${REF}: the ${GRAPH.name} run is done: its terminal node was reached, at node "done".`);
    expect(text).toContain("do not claim a node again");
    expect(text).toContain("closed in 10 minutes (graph.closeAfterMinutes); its transcript is kept");
  });

  it("gives the reason of an end short of a terminal node", () => {
    const failed = stateAt({ status: "failed", reasonCode: "hook_denied", reason: "denied by budget: over budget" });
    expect(runEndedText(GRAPH, failed, 0)).toContain("Why: denied by budget: over budget");
  });

  it.each([
    { ms: undefined, says: "stays open until someone closes it (graph.closeAfterMinutes: never)", field: "never" },
    { ms: 0, says: "closed now (graph.closeAfterMinutes: 0)", field: "0" },
    { ms: 30_000, says: "closed in 30 seconds", field: "0.5" },
  ])("says when the session closes: $field", ({ ms, says, field }) => {
    expect(closeAfterText(ms)).toContain(says);
    expect(closeAfterField(ms)).toBe(field);
  });
});

describe("blockedText", () => {
  it("begins with the-loop's mark and carries the gate's message and how the item is resumed", () => {
    const text = blockedText({ ref: REF, graph: "work-item", node: "final-review", what: "capability-gate", reason: "RELEASE-NOTES.md is missing" });
    expect(text.split("\n")[0]).toBe(
      `the-loop block for ${REF}: the item is blocked at node "final-review" of the work-item graph: a capability's gate stopped it.`,
    );
    expect(text).toContain("The gate's message: RELEASE-NOTES.md is missing");
    expect(text).toContain("`the-loop graph force`");
  });
});
