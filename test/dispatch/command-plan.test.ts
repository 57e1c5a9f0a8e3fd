import { describe, expect, it } from "vitest";
import { planControl, sessionStateOf } from "../../src/control/plan.js";
import type { ControlSituation } from "../../src/control/plan.js";
import { planCommand } from "../../src/dispatch/command-plan.js";

type Row = [ControlSituation["command"], ControlSituation["session"], string | undefined, string];

describe("planCommand", () => {
  // command, session, harness problem → "reject:<reason>" or "<record>/<transition>/<follow-up>/<effect>"
  const rows: Row[] = [
    ["start", "none", undefined, "first/claim/start-harness/started"],
    ["start", "none", "no such harness", "after/none/start-pending/start-pending"],
    ["start", "paused", undefined, "after/resume/notify-resumed/resumed"],
    ["start", "paused", "no such harness", "after/resume/notify-resumed/resumed"],
    ["start", "active", undefined, "after/none/none/noop"],
    ["resume", "none", undefined, "reject:nothing-to-resume"],
    ["resume", "paused", undefined, "after/resume/notify-resumed/resumed"],
    ["resume", "active", undefined, "never/none/none/noop"],
    ["pause", "none", undefined, "after/none/none/recorded"],
    ["pause", "paused", undefined, "after/none/none/noop"],
    ["pause", "active", undefined, "after/pause/announce-paused/paused"],
    ["stop", "none", undefined, "after/none/none/recorded"],
    ["stop", "paused", undefined, "first/close/finish-close/stopped"],
    ["stop", "active", undefined, "first/close/finish-close/stopped"],
  ];
  it.each(rows)("%s with session %s (harness problem %s) → %s", (command, session, harnessProblem, expected) => {
    const plan = planCommand({ command, session, armed: true, itemClosed: false, harnessProblem });
    const seen = plan.kind === "reject" ? `reject:${plan.reason}` : `${plan.record}/${plan.transition}/${plan.followUp}/${plan.effect}`;
    expect(seen).toBe(expected);
  });

  it("carries the harness problem of a pending start", () => {
    const plan = planCommand({ command: "start", session: "none", armed: true, itemClosed: false, harnessProblem: "no such harness" });
    expect(plan).toMatchObject({ kind: "apply", action: "spawn", effect: "start-pending", problem: "no such harness" });
  });

  it("refuses exactly what planControl refuses, and records exactly what it records", () => {
    for (const command of ["start", "stop", "pause", "resume"] as const) {
      for (const session of ["none", "active", "paused"] as const) {
        for (const armed of [true, false]) {
          for (const itemClosed of [true, false]) {
            const control = planControl({ command, session, armed, itemClosed });
            const plan = planCommand({ command, session, armed, itemClosed });
            expect(plan.kind).toBe(control.kind);
            if (plan.kind === "apply" && control.kind === "apply") {
              expect(plan.action).toBe(control.action);
              expect(plan.record !== "never").toBe(control.record);
            }
          }
        }
      }
    }
  });
});

describe("sessionStateOf", () => {
  it.each([
    [undefined, "none"],
    [{ status: "closed" }, "none"],
    [{ status: "active" }, "active"],
    [{ status: "paused" }, "paused"],
  ] as const)("%j → %s", (record, expected) => {
    expect(sessionStateOf(record)).toBe(expected);
  });
});
