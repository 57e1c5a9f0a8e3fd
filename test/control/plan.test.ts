import { describe, expect, it } from "vitest";
import { controlStateOf, planControl, spawnHold } from "../../src/control/plan.js";
import type { ControlSituation } from "../../src/control/plan.js";

type Row = [ControlSituation["command"], ControlSituation["session"], boolean, boolean, string];

describe("planControl", () => {
  // command, session, armed, item closed → expected: "reject:<reason>" or "<action>/<record?>/<effect>"
  const rows: Row[] = [
    ["start", "none", true, false, "spawn/record/started"],
    ["start", "none", false, false, "reject:not-armed"],
    ["start", "none", true, true, "reject:item-closed"],
    ["start", "none", false, true, "reject:item-closed"],
    ["start", "paused", false, false, "resume/record/resumed"],
    ["start", "paused", true, true, "resume/record/resumed"],
    ["start", "active", true, false, "none/record/noop"],
    ["start", "active", false, false, "none/record/noop"],
    ["resume", "none", true, false, "reject:nothing-to-resume"],
    ["resume", "paused", false, false, "resume/record/resumed"],
    ["resume", "active", true, false, "none/skip/noop"],
    ["pause", "none", false, false, "none/record/recorded"],
    ["pause", "none", true, true, "none/record/recorded"],
    ["pause", "active", true, false, "pause/record/paused"],
    ["pause", "paused", true, false, "none/record/noop"],
    ["stop", "none", false, false, "none/record/recorded"],
    ["stop", "active", true, false, "close/record/stopped"],
    ["stop", "paused", true, false, "close/record/stopped"],
    ["stop", "paused", false, true, "close/record/stopped"],
  ];
  it.each(rows)("%s with session %s (armed %s, closed %s) → %s", (command, session, armed, itemClosed, expected) => {
    const plan = planControl({ command, session, armed, itemClosed });
    const seen = plan.kind === "reject" ? `reject:${plan.reason}` : `${plan.action}/${plan.record ? "record" : "skip"}/${plan.effect}`;
    expect(seen).toBe(expected);
  });

  it.each<[ControlSituation["command"], ControlSituation["session"], string]>([
    ["resume", "none", "none/record/start-pending"],
    ["resume", "paused", "resume/record/resumed"],
    ["pause", "none", "none/record/recorded"],
    ["start", "none", "spawn/record/started"],
    ["stop", "none", "none/record/recorded"],
  ])("a queued item: %s with session %s → %s (a pause keeps its place, its resume releases it)", (command, session, expected) => {
    const plan = planControl({ command, session, armed: true, itemClosed: false, queued: true });
    const seen = plan.kind === "reject" ? `reject:${plan.reason}` : `${plan.action}/${plan.record ? "record" : "skip"}/${plan.effect}`;
    expect(seen).toBe(expected);
  });

  it("never records a refused command, and only start can spawn", () => {
    for (const command of ["start", "stop", "pause", "resume"] as const) {
      for (const session of ["none", "active", "paused"] as const) {
        for (const armed of [true, false]) {
          for (const itemClosed of [true, false]) {
            const plan = planControl({ command, session, armed, itemClosed });
            if (plan.kind === "apply" && plan.action === "spawn") {
              expect(command).toBe("start");
              expect(armed && !itemClosed).toBe(true);
            }
          }
        }
      }
    }
  });
});

describe("controlStateOf", () => {
  it.each([
    [undefined, "none"],
    [{ command: "start" as const }, "start-requested"],
    [{ command: "resume" as const }, "start-requested"],
    [{ command: "pause" as const }, "disarmed"],
    [{ command: "stop" as const }, "disarmed"],
    [{ command: "stop" as const, clearedAt: "2026-11-30T00:00:00.000Z" }, "none"],
    [{ command: "start" as const, clearedAt: "2026-11-30T00:00:00.000Z" }, "none"],
  ])("%j → %s", (record, state) => {
    expect(controlStateOf(record)).toBe(state);
  });
});

describe("spawnHold", () => {
  it.each([
    ["none", true, true, "awaiting-start"],
    ["none", true, false, undefined],
    ["none", false, true, undefined],
    ["start-requested", true, true, undefined],
    ["start-requested", false, false, undefined],
    ["disarmed", true, true, "execution-stopped"],
    ["disarmed", true, false, "execution-stopped"],
    ["disarmed", false, false, "execution-stopped"],
  ] as const)("state %s, enabled %s, requireStartCommand %s → %s", (state, enabled, requireStartCommand, hold) => {
    expect(spawnHold(state, { enabled, requireStartCommand })).toBe(hold);
  });
});
