import { describe, expect, it } from "vitest";
import { notifySinkFailuresOf, notifySinkProblems } from "../../src/daemon/status/notify-problem.js";
import type { LoggedEvent } from "../../src/daemon/status/problems.js";

const SINKS = [
  { name: "team", urlEnv: "TEAM_URL" },
  { name: "ops", urlEnv: "OPS_URL" },
];
const DAEMON = new Set([42]);

const sent = (sink: string, pid = 42, ts = "2026-12-02T08:00:00Z"): LoggedEvent => ({
  ts,
  event: "notify.sent",
  pid,
  sink,
  moment: "done",
  work_item: "local:demo#1",
});
const failed = (sink: string, willRetry: boolean, pid = 42, ts = "2026-12-02T08:01:00Z"): LoggedEvent => ({
  ts,
  event: "notify.failed",
  pid,
  sink,
  moment: "gate-waiting",
  work_item: "local:demo#2",
  error: "the sink team answered HTTP 404",
  will_retry: willRetry,
});

describe("notifySinkFailuresOf", () => {
  it.each<[string, LoggedEvent[], string[]]>([
    ["nothing sent", [], []],
    ["all taken", [sent("team"), sent("ops")], []],
    ["given up last", [sent("team"), failed("team", false)], ["team"]],
    ["given up, then taken", [failed("team", false), sent("team")], []],
    ["a try that is retried is no failure yet", [sent("team"), failed("team", true)], []],
    ["an earlier daemon's failure is past", [failed("team", false, 7)], []],
    ["each sink on its own", [failed("team", false), sent("ops"), failed("ops", false), sent("ops")], ["team"]],
  ])("%s", (_what, events, sinks) => {
    expect(notifySinkFailuresOf(events, DAEMON, SINKS).map((failure) => failure.sink)).toEqual(sinks);
  });

  it("names the sink's variable in the fix, and the last notification given up", () => {
    const [problem] = notifySinkProblems(notifySinkFailuresOf([failed("team", false)], DAEMON, SINKS));
    expect(problem?.code).toBe("notify-sink-failing");
    expect(problem?.message).toBe(
      "notifications to the sink team are not arriving: the last one (gate-waiting, local:demo#2) was given up at 2026-12-02T08:01:00Z: the sink team answered HTTP 404",
    );
    expect(problem?.fix).toContain("TEAM_URL");
    const [gone] = notifySinkProblems(notifySinkFailuresOf([failed("old", false)], DAEMON, SINKS));
    expect(gone?.fix).toContain("the sink's urlEnv variable");
  });
});
