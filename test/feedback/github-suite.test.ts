import { afterEach, describe, expect, it } from "vitest";
import { resolveGitHubCheck } from "../../src/feedback/index.js";
import { inboundFromGitHub } from "../../src/ingress/github-events.js";
import { GitHubClient } from "../../src/trackers/github/client.js";
import { GitHubTracker } from "../../src/trackers/github/tracker.js";
import { FakeGitHub } from "../support/fake-github.js";

/**
 * A failed check suite is read as its failing runs (docs/github.md#ci-failures), every page of
 * them: a matrix build's suite has more runs than one page holds.
 */

const started: FakeGitHub[] = [];

afterEach(async () => {
  for (const gh of started.splice(0)) await gh.stop();
});

describe("a failed check suite's runs", () => {
  it("finds the failing run of a suite of 150 on the second page, and only it", async () => {
    const gh = await FakeGitHub.start();
    started.push(gh);
    gh.addRepo("octo/repo");
    const pr = gh.addPullRequest("octo/repo", { title: "Matrix", user: "alice", head: "matrix" });
    const sha = gh.pull("octo/repo", pr).head.sha;
    // Newest first: the oldest run, the failing one, is the last of 150 — on the second page of 100.
    const failing = await gh.addCheckRun("octo/repo", { sha, name: "test (node 0)", conclusion: "failure" });
    for (let n = 1; n < 150; n++) await gh.addCheckRun("octo/repo", { sha, name: `test (node ${String(n)})`, conclusion: "success" });
    const payload = gh.checkSuitePayload("octo/repo", failing, [pr]);
    expect(payload.check_suite).toMatchObject({ conclusion: "failure", latest_check_runs_count: 150 });
    const normalized = inboundFromGitHub("check_suite", payload, { deliveryId: "d-1", source: "gh-webhook", defaultHost: gh.host });
    if (!("event" in normalized)) throw new Error(JSON.stringify(normalized));

    const client = new GitHubClient({
      apiUrl: gh.apiUrl,
      tokens: { token: () => Promise.resolve("ghp_suite") },
      spaceWrites: false,
      retries: 0,
      rateLimitWaitSeconds: 0,
    });
    const resolved = await resolveGitHubCheck(normalized.event, {
      tracker: new GitHubTracker(client, { selfLogin: "the-loop-bot" }),
      authorizedUsers: new Set(["alice"]),
    });

    expect(resolved.map((event) => event.check)).toEqual([
      expect.objectContaining({ source: "check_run", name: "test (node 0)", conclusion: "failure", jobId: failing.id, headSha: sha, logAllowed: true }),
    ]);
    const suitePath = `/repos/octo/repo/check-suites/${String((failing.check_suite as { id: number }).id)}/check-runs`;
    expect(gh.requests.filter((request) => request.path === suitePath)).toHaveLength(2);
  });
});
