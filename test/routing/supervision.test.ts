import { describe, expect, it } from "vitest";
import { STABLE_RUN_MS, backoffMs, exitText, failureText, planSupervision } from "../../src/routing/supervision.js";
import type { SupervisionFacts } from "../../src/routing/supervision.js";

const settings = { enabled: true, maxRestarts: 3, backoffSeconds: 2 };
const now = 1_000_000_000;
const dead: SupervisionFacts = {
  status: "active",
  pane: "dead",
  harnessStartedAt: now - 60_000,
  startingElsewhere: false,
  restarts: 0,
  held: false,
  runEnded: false,
  now,
};

describe("planSupervision", () => {
  it.each<[string, Partial<SupervisionFacts>, Partial<typeof settings>, unknown]>([
    ["a live pane is left alone", { pane: "live" }, {}, { kind: "none", why: "live" }],
    ["supervision off leaves a dead pane to the next event", {}, { enabled: false }, { kind: "none", why: "disabled" }],
    ["a paused session is not restarted", { status: "paused" }, {}, { kind: "none", why: "not-active" }],
    ["a closed session is never restarted", { status: "closed" }, {}, { kind: "none", why: "not-active" }],
    ["a failed session is never restarted", { status: "failed" }, {}, { kind: "none", why: "not-active" }],
    ["a harness its claimer has not started yet is not dead", { harnessStartedAt: undefined, pane: "absent" }, {}, { kind: "none", why: "not-started" }],
    ["a start another live process is making is its own", { startingElsewhere: true }, {}, { kind: "none", why: "starting-elsewhere" }],
    ["a standing stop or pause holds it", { held: true }, {}, { kind: "none", why: "held" }],
    ["after the end of its run it stays ended", { runEnded: true }, {}, { kind: "none", why: "run-ended" }],
    ["the first death is restarted at once", {}, {}, { kind: "restart", attempt: 1 }],
    ["a gone tmux session too", { pane: "absent" }, {}, { kind: "restart", attempt: 1 }],
    [
      "the second waits out the backoff from the last start",
      { restarts: 1, harnessStartedAt: now - 500 },
      {},
      { kind: "wait", attempt: 2, dueAt: now + 1_500 },
    ],
    ["and goes once it has passed", { restarts: 1, harnessStartedAt: now - 2_000 }, {}, { kind: "restart", attempt: 2 }],
    ["the third waits twice as long", { restarts: 2, harnessStartedAt: now - 3_000 }, {}, { kind: "wait", attempt: 3, dueAt: now + 1_000 }],
    ["every restart spent: failed to start", { restarts: 3, harnessStartedAt: now - 1_000 }, {}, { kind: "fail", restarts: 3 }],
    ["maxRestarts 0 fails the first death", {}, { maxRestarts: 0 }, { kind: "fail", restarts: 0 }],
    ["a harness that ran long enough counts from 0 again", { restarts: 3, harnessStartedAt: now - STABLE_RUN_MS }, {}, { kind: "restart", attempt: 1 }],
  ])("%s", (_name, facts, overrides, expected) => {
    expect(planSupervision({ ...settings, ...overrides }, { ...dead, ...facts })).toEqual(expected);
  });
});

describe("backoffMs", () => {
  it.each([
    [1, 0],
    [2, 2_000],
    [3, 4_000],
    [4, 8_000],
    [20, 300_000],
  ])("restart %i waits %i ms", (attempt, ms) => {
    expect(backoffMs(attempt, 2)).toBe(ms);
  });
});

describe("the words", () => {
  it.each([
    ["dead", { status: 1 }, "exited with status 1"],
    ["dead", { signal: 9 }, "was killed by signal 9"],
    ["dead", undefined, "exited"],
    ["absent", { status: 1 }, "its tmux session is gone"],
  ] as const)("%s %j: %s", (pane, exit, text) => {
    expect(exitText(pane, exit)).toBe(text);
  });

  it("names the harness, how it ended, the restarts and the key", () => {
    expect(failureText("claude", "exited with status 1", 3, 3)).toBe(
      "its harness (claude) exited with status 1, after 3 restarts in a row (routing.supervision.maxRestarts: 3)",
    );
    expect(failureText("codex", "exited", 0, 0)).toBe("its harness (codex) exited, it was not started again (routing.supervision.maxRestarts: 0)");
  });
});
