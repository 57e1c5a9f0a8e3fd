import { describe, expect, it } from "vitest";
import {
  EXIT_STATUS_NOT_RUNNING,
  EXIT_STATUS_PROBLEMS,
  damagedFileProblems,
  failingSourceProblems,
  githubTokenProblem,
  hookServerProblems,
  pendingStartProblems,
  pollCyclesOf,
  statusExitCode,
  statusProblems,
  stoppedServiceProblems,
} from "../../src/daemon/status/problems.js";
import type { GitHubTokenFact, LoggedEvent, PollCycle, StatusFacts, StatusProblem } from "../../src/daemon/status/problems.js";

const problem = (code: StatusProblem["code"]): StatusProblem => ({ code, message: "m", fix: "f" });

describe("statusExitCode", () => {
  it.each<[string, StatusProblem[], number]>([
    ["no problem", [], 0],
    ["a stopped service", [problem("service-stopped")], EXIT_STATUS_NOT_RUNNING],
    ["a stopped service among others", [problem("damaged-file"), problem("service-stopped")], EXIT_STATUS_NOT_RUNNING],
    ["running with a problem", [problem("github-token-missing")], EXIT_STATUS_PROBLEMS],
    ["running with several", [problem("damaged-file"), problem("start-pending")], EXIT_STATUS_PROBLEMS],
  ])("%s → %i", (_, problems, code) => {
    expect(statusExitCode(problems)).toBe(code);
  });
  it("keeps the two failure codes apart", () => {
    expect(EXIT_STATUS_NOT_RUNNING).not.toBe(EXIT_STATUS_PROBLEMS);
  });
});

describe("stoppedServiceProblems", () => {
  it.each<[string, { name: string; enabled: boolean; running: boolean }[], string[]]>([
    ["enabled and running", [{ name: "poller", enabled: true, running: true }], []],
    ["disabled and stopped", [{ name: "poller", enabled: false, running: false }], []],
    ["enabled and stopped", [{ name: "poller", enabled: true, running: false }], ["poller is enabled but not running"]],
    [
      "one of two stopped",
      [
        { name: "poller", enabled: true, running: true },
        { name: "gh-webhook", enabled: true, running: false },
      ],
      ["gh-webhook is enabled but not running"],
    ],
  ])("%s", (_, services, messages) => {
    const problems = stoppedServiceProblems(services, "/root/logs/daemon.out");
    expect(problems.map((p) => p.message)).toEqual(messages);
    for (const p of problems) expect(p.fix).toContain("the-loop start");
  });
});

describe("githubTokenProblem", () => {
  const base: GitHubTokenFact = {
    neededBy: ["the poll source octo/repo"],
    found: false,
    tokenEnv: ["GH_TOKEN", "GITHUB_TOKEN"],
    host: "github.com",
    daemonReachedGitHub: false,
  };
  it.each<[string, Partial<GitHubTokenFact>, boolean]>([
    ["nothing needs one", { neededBy: [] }, false],
    ["found here", { found: true }, false],
    ["the daemon reached GitHub with a token of its own", { daemonReachedGitHub: true }, false],
    ["needed and missing", {}, true],
    ["the webhook receiver needs it", { neededBy: ["the webhook receiver"] }, true],
  ])("%s → reported: %s", (_, fact, reported) => {
    expect(githubTokenProblem({ ...base, ...fact }) !== undefined).toBe(reported);
  });

  it("names what needs it, the first variable, gh and the restart", () => {
    const found = githubTokenProblem({ ...base, neededBy: ["the poll source octo/repo", "the webhook receiver"] });
    expect(found).toMatchObject({ code: "github-token-missing" });
    expect(found?.message).toContain("the poll source octo/repo and the webhook receiver");
    expect(found?.fix).toContain("set GH_TOKEN (or GITHUB_TOKEN)");
    expect(found?.fix).toContain("`gh auth login`");
    expect(found?.fix).toContain("the-loop stop");
  });

  it("names the configured variable and the Enterprise host", () => {
    const found = githubTokenProblem({ ...base, tokenEnv: ["ACME_TOKEN"], host: "ghe.acme.test" });
    expect(found?.message).toContain("ACME_TOKEN is not set");
    expect(found?.fix).toContain("set ACME_TOKEN,");
    expect(found?.fix).toContain("gh auth login --hostname ghe.acme.test");
  });
});

describe("pollCyclesOf", () => {
  const ev = (event: string, fields: Record<string, unknown> = {}, pid = 7): LoggedEvent => ({ ts: `t${fields.n ?? ""}`, event, pid, ...fields });
  it("gives each error to the cycle that ends after it, and leaves other processes out", () => {
    const cycles = pollCyclesOf(
      [
        ev("poll.provider_error", { poll_source: "github:a/b", error: "old daemon" }, 3),
        ev("poll.cycle", { n: 0 }, 3),
        ev("poll.provider_error", { poll_source: "github:a/b", error: "first" }),
        ev("poll.provider_error", { poll_source: "github:a/b", error: "second" }),
        ev("poll.cycle", { n: 1 }),
        ev("session.spawn_failed", { work_item: "local:x#1" }),
        ev("poll.cycle", { n: 2 }),
        ev("poll.provider_error", { error: "no source named" }),
        ev("poll.cycle", { n: 3 }),
      ],
      7,
    );
    expect(cycles.map((cycle) => [cycle.at, Object.fromEntries(cycle.failures)])).toEqual([
      ["t1", { "github:a/b": "second" }],
      ["t2", {}],
      ["t3", { "*": "no source named" }],
    ]);
  });
});

describe("failingSourceProblems", () => {
  const cycle = (...failing: string[]): PollCycle => ({ at: "now", failures: new Map(failing.map((key) => [key, `${key} broke`])) });
  it.each<[string, PollCycle[], string[]]>([
    ["fewer cycles than the window", [cycle("a"), cycle("a")], []],
    ["failing every cycle", [cycle("a"), cycle("a"), cycle("a")], ["poll source a"]],
    ["recovered in the last cycle", [cycle("a"), cycle("a"), cycle("a"), cycle()], []],
    ["one good cycle in the window", [cycle("a"), cycle(), cycle("a")], []],
    ["failing since the window began", [cycle(), cycle("a"), cycle("a"), cycle("a")], ["poll source a"]],
    ["two sources, one failing throughout", [cycle("a", "b"), cycle("a"), cycle("a", "b")], ["poll source a"]],
    ["the poller itself", [cycle("*"), cycle("*"), cycle("*")], ["the poller"]],
  ])("%s", (_, cycles, subjects) => {
    const problems = failingSourceProblems(cycles);
    expect(problems.map((p) => p.message.split(" failed")[0])).toEqual(subjects);
    for (const p of problems) {
      expect(p.code).toBe("poll-source-failing");
      expect(p.message).toMatch(/broke$/);
    }
  });
});

describe("damagedFileProblems", () => {
  it("names the file, why, and the kind's remedy", () => {
    expect(damagedFileProblems([{ kind: "session record", file: "/s/sessions/ab.json", reason: "not valid JSON", remedy: "move it aside" }])).toEqual([
      { code: "damaged-file", message: "session record /s/sessions/ab.json is damaged: not valid JSON", fix: "move it aside" },
    ]);
  });
});

describe("pendingStartProblems", () => {
  const start = { ref: "local:demo#1", requestedAt: "2025-01-01T10:00:00.000Z" };
  const failure = (at: string, ref = "local:demo#1") => ({ ref, at, error: `boom at ${at}` });
  it.each<[string, ReturnType<typeof failure>[], number]>([
    ["no failure", [], 0],
    ["one failure", [failure("2025-01-01T10:00:01.000Z")], 0],
    ["two failures", [failure("2025-01-01T10:00:01.000Z"), failure("2025-01-01T10:05:00.000Z")], 1],
    ["two failures, one before the request", [failure("2025-01-01T09:00:00.000Z"), failure("2025-01-01T10:05:00.000Z")], 0],
    ["two failures of another item", [failure("2025-01-01T10:00:01.000Z", "local:demo#2"), failure("2025-01-01T10:05:00.000Z", "local:demo#2")], 0],
  ])("%s → %i problems", (_, failures, count) => {
    const problems = pendingStartProblems([start], failures);
    expect(problems).toHaveLength(count);
    for (const p of problems) {
      expect(p.message).toContain("local:demo#1");
      expect(p.message).toContain("boom at 2025-01-01T10:05:00.000Z");
      expect(p.fix).toContain("the-loop sessions stop --work-item local:demo#1");
    }
  });
});

describe("hookServerProblems", () => {
  it.each<[string, { name: string; origin: string; error?: string }[], number]>([
    ["answering", [{ name: "gate", origin: "https://h.example" }], 0],
    ["down", [{ name: "gate", origin: "https://h.example", error: "ECONNREFUSED" }], 1],
  ])("%s", (_, probes, count) => {
    const problems = hookServerProblems(probes);
    expect(problems).toHaveLength(count);
    for (const p of problems) {
      expect(p.message).toBe('the required hook "gate" does not answer at https://h.example: ECONNREFUSED');
      expect(p.fix).toContain("required: false");
    }
  });
});

describe("statusProblems", () => {
  const healthy: StatusFacts = {
    services: [{ name: "poller", enabled: true, running: true }],
    daemonLog: "/r/logs/daemon.out",
    token: { neededBy: [], found: true, tokenEnv: ["GH_TOKEN"], host: "github.com", daemonReachedGitHub: false },
    cycles: [],
    damaged: [],
    pending: [],
    spawnFailures: [],
    hooks: [],
  };
  it("finds nothing wrong with a healthy daemon", () => {
    expect(statusProblems(healthy)).toEqual([]);
  });

  it("says a missing token once, not again as the GitHub source it fails", () => {
    const tokenless = "octo/repo: no GitHub token: set GH_TOKEN";
    const cycles: PollCycle[] = Array.from({ length: 3 }, () => ({
      at: "now",
      failures: new Map([
        ["github:octo/repo", tokenless],
        ["local:*", "journal broke"],
      ]),
    }));
    const problems = statusProblems({ ...healthy, cycles, token: { ...healthy.token, neededBy: ["the poll source octo/repo"], found: false } });
    expect(problems.map((p) => p.code)).toEqual(["github-token-missing", "poll-source-failing"]);
    expect(problems[1]?.message).toContain("local:*");
  });

  it("puts a stopped service first", () => {
    const problems = statusProblems({
      ...healthy,
      services: [{ name: "poller", enabled: true, running: false }],
      damaged: [{ kind: "control record", file: "/c.json", reason: "r", remedy: "x" }],
    });
    expect(problems.map((p) => p.code)).toEqual(["service-stopped", "damaged-file"]);
    expect(statusExitCode(problems)).toBe(EXIT_STATUS_NOT_RUNNING);
  });
});
