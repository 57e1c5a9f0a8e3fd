import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { GitHubChecksFeed, failuresOf, parseChecksCursor, watchedPull } from "../../src/ingress/github-feed/checks.js";
import type { GitHubReader } from "../../src/ingress/github-feed/conditional.js";

/**
 * The polled CI of watched pull requests: which pull requests are read, which of a commit's
 * checks fail, and a read that hands out each failure once, with every request conditional.
 */

const SHA = "d6fde92930d4715a2b49857d24b940956b26d2d3";

/** A pull request as `GET /repos/{owner}/{repo}/pulls` answers it (the fields the source reads). */
function pull(number: number, init: { body?: string; head?: string; headRepo?: string; state?: string; sha?: string } = {}) {
  return {
    number,
    state: init.state ?? "open",
    body: init.body ?? "",
    head: { ref: init.head ?? "feature", sha: init.sha ?? SHA, repo: { full_name: init.headRepo ?? "Octo/Repo" } },
    base: { ref: "main", repo: { full_name: "Octo/Repo" } },
  };
}

/** A check run as GitHub documents it (GET /repos/{owner}/{repo}/commits/{ref}/check-runs), trimmed to what varies. */
function checkRun(name: string, conclusion: string | null, status = "completed") {
  return {
    id: 4,
    head_sha: SHA,
    node_id: "MDg6Q2hlY2tSdW40",
    external_id: "",
    url: "https://api.github.com/repos/Octo/Repo/check-runs/4",
    html_url: "https://github.com/Octo/Repo/runs/4",
    details_url: "https://example.com",
    status,
    conclusion,
    started_at: "2018-05-04T01:14:52Z",
    completed_at: "2018-05-04T01:14:52Z",
    output: { title: "Mighty Readme report", summary: "There are 0 failures found", text: "", annotations_count: 2 },
    name,
    check_suite: { id: 5 },
    app: { id: 1, slug: "github-actions", name: "GitHub Actions" },
    pull_requests: [],
  };
}

function combined(statuses: Array<{ context: string; state: string }>) {
  return {
    state: statuses.some((s) => s.state === "failure" || s.state === "error") ? "failure" : "success",
    sha: SHA,
    total_count: statuses.length,
    statuses: statuses.map((s, i) => ({
      id: i + 1,
      state: s.state,
      context: s.context,
      target_url: "https://ci.example.com/1000/output",
      description: "Build",
    })),
  };
}

const repository = { full_name: "Octo/Repo", name: "Repo", owner: { login: "Octo" }, html_url: "https://github.com/Octo/Repo" };
const head = { ref: "github:octo/repo#7", owner: "Octo", repo: "Repo", number: 7, sha: SHA };

describe("which pull requests' CI is read", () => {
  const live = new Set(["github:octo/repo#1"]);
  const isLive = (ref: string): boolean => live.has(ref);
  it.each([
    ["bound to a live session", pull(7), new Set(["github:octo/repo#7"]), true],
    ["closing a live item", pull(7, { body: "Fixes #1" }), new Set<string>(), true],
    ["closing an item with no session", pull(7, { body: "Fixes #2" }), new Set<string>(), false],
    ["on a branch named after a live item", pull(7, { head: "issue-1-health" }), new Set<string>(), true],
    [
      "a fork's branch named after a live item (the fork names its branches)",
      pull(7, { head: "issue-1-health", headRepo: "mallory/Repo" }),
      new Set<string>(),
      false,
    ],
    ["a fork's, closing a live item", pull(7, { body: "Closes #1", headRepo: "mallory/Repo" }), new Set<string>(), true],
    ["closed", pull(7, { body: "Fixes #1", state: "closed" }), new Set(["github:octo/repo#7"]), false],
    ["nothing", pull(7), new Set<string>(), false],
  ])("%s: %s", (_name, raw, watched, read) => {
    const found = watchedPull(raw, "github.com", watched, isLive);
    expect(found !== undefined).toBe(read);
    if (read) expect(found).toEqual({ ref: "github:octo/repo#7", owner: "Octo", repo: "Repo", number: 7, sha: SHA });
  });

  it("passes over what is not a pull request with a head commit", () => {
    expect(watchedPull({ number: 7, state: "open" }, "github.com", new Set(["github:octo/repo#7"]), isLive)).toBeUndefined();
    expect(watchedPull(null, "github.com", new Set(), isLive)).toBeUndefined();
  });
});

describe("which of a commit's checks fail", () => {
  it.each([
    ["failure", "completed", true],
    ["timed_out", "completed", true],
    ["startup_failure", "completed", true],
    ["cancelled", "completed", false],
    ["action_required", "completed", false],
    ["success", "completed", false],
    [null, "in_progress", false],
  ])("a check run concluding %s (%s): %s", (conclusion, status, fails) => {
    const found = failuresOf(head, { total_count: 1, check_runs: [checkRun("test", conclusion, status)] }, undefined, repository);
    expect(found.length).toBe(fails ? 1 : 0);
    if (fails) {
      expect(found[0]).toMatchObject({ id: `checks:github:octo/repo#7@${SHA}:run:test`, name: "check_run" });
      expect(found[0]?.payload).toMatchObject({ action: "completed", check_run: { name: "test" }, repository, sender: null });
    }
  });

  it.each([
    ["failure", true],
    ["error", true],
    ["pending", false],
    ["success", false],
  ])("a status %s: %s", (state, fails) => {
    const found = failuresOf(head, undefined, combined([{ context: "ci/jenkins", state }]), repository);
    expect(found.length).toBe(fails ? 1 : 0);
    if (fails) {
      expect(found[0]).toMatchObject({ id: `checks:github:octo/repo#7@${SHA}:status:ci/jenkins`, name: "status" });
      expect(found[0]?.payload).toEqual({
        id: 1,
        sha: SHA,
        state,
        context: "ci/jenkins",
        target_url: "https://ci.example.com/1000/output",
        repository,
        sender: null,
      });
    }
  });

  it("passes over a run of another commit and answers not shaped as documented", () => {
    const other = { ...checkRun("test", "failure"), head_sha: "0".repeat(40) };
    expect(failuresOf(head, { check_runs: [other, { name: 3 }, null] }, { statuses: "no" }, repository)).toEqual([]);
    expect(failuresOf(head, "nonsense", [], repository)).toEqual([]);
  });

  it("reads a damaged cursor as the empty one", () => {
    expect(parseChecksCursor("{")).toEqual({ v: 1, seen: [] });
    expect(parseChecksCursor('{"v":2,"seen":[]}')).toEqual({ v: 1, seen: [] });
    expect(parseChecksCursor('{"v":1,"seen":["a"]}')).toEqual({ v: 1, seen: ["a"] });
  });
});

/** A GitHub that answers from `world`, 304 to an If-None-Match its answer still matches; it logs each request. */
function fakeReader(world: { pulls: unknown[]; runs: unknown[]; statuses: Array<{ context: string; state: string }> }) {
  const requests: Array<{ route: string; status: number }> = [];
  const answer = (route: string, data: unknown, etag: string | undefined) => {
    const tag = `"${createHash("sha1").update(JSON.stringify(data)).digest("hex")}"`;
    const status = etag === tag ? 304 : 200;
    requests.push({ route, status });
    return { tag, status };
  };
  const reader: GitHubReader = {
    host: "github.com",
    list: async (route, _params, options = {}) => {
      const { tag, status } = answer(route, world.pulls, options.etag);
      return status === 304 ? { notModified: true, etag: tag } : { notModified: false, items: [...world.pulls], etag: tag, truncated: false };
    },
    get: async (route, _params, options = {}) => {
      const data = route.endsWith("/check-runs")
        ? { total_count: world.runs.length, check_runs: world.runs }
        : route.endsWith("/status")
          ? combined(world.statuses)
          : undefined;
      const { tag, status } = answer(route, data, options.etag);
      return status === 304 ? { notModified: true, etag: tag } : { notModified: false, data, etag: tag };
    },
  };
  return { reader, requests };
}

describe("a read of the watched pull requests' CI", () => {
  it("hands out each failure once, answers an idle read with 304s, and tells a failure again once it passed and failed anew", async () => {
    const world = { pulls: [pull(7, { body: "Fixes #1" })], runs: [checkRun("test", "failure")], statuses: [{ context: "ci/x", state: "success" }] };
    const { reader, requests } = fakeReader(world);
    const feed = new GitHubChecksFeed({
      key: "github-checks",
      client: reader,
      repos: ["Octo/Repo"],
      watchedPullRequests: () => [],
      isLive: (ref) => ref === "github:octo/repo#1",
    });
    const first = await feed.read(undefined);
    expect(first.items).toEqual([]);
    expect(requests).toEqual([]);

    const second = await feed.read(first.cursor);
    expect(second.items.map((item) => item.id)).toEqual([`checks:github:octo/repo#7@${SHA}:run:test`]);
    expect(second.items[0]?.event).toMatchObject({
      kind: "check_failed",
      source: "poll",
      deliveryId: `poll-checks:github:octo/repo#7@${SHA}:run:test`,
      check: { source: "check_run", name: "test", conclusion: "failure", headSha: SHA, repository: "Octo/Repo", jobId: 4 },
    });

    requests.length = 0;
    const idle = await feed.read(second.cursor);
    expect(idle.items).toEqual([]);
    expect(requests.map((request) => request.status)).toEqual([304, 304, 304]);

    world.statuses = [{ context: "ci/x", state: "error" }];
    const status = await feed.read(idle.cursor);
    expect(status.items.map((item) => item.id)).toEqual([`checks:github:octo/repo#7@${SHA}:status:ci/x`]);

    world.runs = [checkRun("test", "success")];
    const passed = await feed.read(status.cursor);
    expect(passed.items).toEqual([]);
    world.runs = [checkRun("test", "failure")];
    const again = await feed.read(passed.cursor);
    expect(again.items.map((item) => item.id)).toEqual([`checks:github:octo/repo#7@${SHA}:run:test`]);
  });

  it("reads a bound pull request outside the polled repositories on its own, and none on another host", async () => {
    const world = { pulls: [], runs: [checkRun("test", "failure")], statuses: [] };
    const { reader, requests } = fakeReader(world);
    const elsewhere = { ...pull(9), base: { ref: "main", repo: { full_name: "Octo/Other" } }, head: { ref: "x", sha: SHA, repo: { full_name: "Octo/Other" } } };
    const get = reader.get;
    reader.get = async (route, params, options) => (route.includes("/pulls/") ? { notModified: false, data: elsewhere } : get(route, params, options));
    const feed = new GitHubChecksFeed({
      key: "github-checks",
      client: reader,
      repos: ["Octo/Repo"],
      watchedPullRequests: () => ["github:Octo/Other#9", "github:ghe.example.com/Octo/Far#3"],
      isLive: () => false,
    });
    const batch = await feed.read((await feed.read(undefined)).cursor);
    expect(batch.items.map((item) => item.id)).toEqual([`checks:github:octo/other#9@${SHA}:run:test`]);
    expect(requests.some((request) => request.route.includes("Far"))).toBe(false);
  });
});
