import { describe, expect, it } from "vitest";
import { selfLoginFailureOf, selfLoginProblem } from "../../src/daemon/status/problems.js";
import type { LoggedEvent } from "../../src/daemon/status/problems.js";

/** `status` and the login the-loop posts as: a permanent lookup failure of the running daemon is a problem, with the fix. */
const DAEMON = 4242;
const unknown = (ts: string, permanent: boolean, pid = DAEMON): LoggedEvent => ({
  ts,
  event: "graph.self_login_unknown",
  pid,
  permanent,
  reason: permanent ? "GitHub refused to say whom the token acts as (403)" : "GitHub did not say (500)",
  fix: "set integrations.github.selfLogin to the login the-loop's token posts as",
});
const learned = (ts: string): LoggedEvent => ({ ts, event: "graph.self_login_learned", pid: DAEMON, login: "the-loop-bot" });

describe("selfLoginFailureOf", () => {
  const pids = new Set([DAEMON]);
  it.each<[string, LoggedEvent[], boolean]>([
    ["no lookup failed", [], false],
    ["a permanent failure", [unknown("t1", true)], true],
    ["a transient failure (asked again)", [unknown("t1", false)], false],
    ["a permanent failure, then the login learned", [unknown("t1", true), learned("t2")], false],
    ["the login learned, then a permanent failure", [learned("t1"), unknown("t2", true)], true],
    ["a permanent failure of an earlier daemon", [unknown("t1", true, 17)], false],
    ["a permanent failure, then a transient one", [unknown("t1", true), unknown("t2", false)], false],
  ])("%s → a problem: %s", (_what, events, problem) => {
    expect(selfLoginFailureOf(events, pids) !== undefined).toBe(problem);
  });

  it("says what failed and gives the lookup's fix", () => {
    const failure = selfLoginFailureOf([unknown("2025-06-01T12:00:00.000Z", true)], pids);
    expect(failure).toBeDefined();
    const problem = selfLoginProblem(failure!);
    expect(problem.code).toBe("self-login-unknown");
    expect(problem.message).toContain("403");
    expect(problem.message).toContain("gate answer");
    expect(problem.fix).toContain("integrations.github.selfLogin");
  });
});
