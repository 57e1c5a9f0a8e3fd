import { describe, expect, it } from "vitest";
import { GitHubClient } from "../../../src/trackers/github/client.js";
import { GitHubError } from "../../../src/trackers/github/errors.js";
import { GitHubTracker } from "../../../src/trackers/github/tracker.js";
import { parseWorkItemRef } from "../../../src/workitem/index.js";

// A proxy, an Enterprise version or a fault may answer something that is not what GitHub sends:
// the tracker says which route answered what, rather than failing later with a TypeError.

const ref = parseWorkItemRef("github:github.com/octo/repo#7");

/** A tracker whose every request is answered 200 with `body` (as JSON) and `headers`. */
function answering(body: unknown, headers: Record<string, string> = {}): GitHubTracker {
  const client = new GitHubClient({
    apiUrl: "https://api.github.com",
    tokens: { token: () => Promise.resolve("ghp_answersTest") },
    spaceWrites: false,
    retries: 0,
    fetch: () => Promise.resolve(new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json", ...headers } })),
  });
  return new GitHubTracker(client);
}

const issue = {
  number: 7,
  node_id: "I_7",
  html_url: "https://github.com/octo/repo/issues/7",
  title: "seven",
  body: null,
  user: { login: "alice" },
  state: "open",
  labels: ["loop", { name: "bug" }],
  created_at: "2026-01-01T00:00:00Z",
  updated_at: "2026-01-01T00:00:00Z",
  closed_at: null,
};

describe("GitHubTracker: what GitHub answers is parsed", () => {
  it("reads a well-formed issue as before", async () => {
    const state = await answering(issue).getItem(ref);
    expect(state).toMatchObject({ title: "seven", author: "alice", labels: ["loop", "bug"], state: "open", closedAt: null });
  });

  it.each<[string, unknown, RegExp]>([
    ["null", null, /GET \/repos\/\{owner\}\/\{repo\}\/issues\/\{issue_number\}: the answer is not an issue/],
    ["labels as text", { ...issue, labels: "loop" }, /not an issue as GitHub sends one .* at labels/],
    ["a label that is null", { ...issue, labels: [null] }, /at labels\.0/],
    ["a user without a login", { ...issue, user: {} }, /at user\.login/],
  ])("refuses an issue with %s with a GitHubError naming the route", async (_name, body, message) => {
    const error = await answering(body)
      .getItem(ref)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GitHubError);
    expect((error as Error).message).toMatch(message);
  });

  it("refuses a pull request without a head", async () => {
    const error = await answering({ state: "open", base: { ref: "main" } })
      .pullRequest(ref)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GitHubError);
    expect((error as Error).message).toMatch(/pulls\/\{pull_number\}: the answer is not a pull request .* at head/);
  });

  it("refuses a repository without a clone URL", async () => {
    const error = await answering({ default_branch: "main" })
      .repository(ref)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GitHubError);
    expect((error as Error).message).toMatch(/GET \/repos\/\{owner\}\/\{repo\}: the answer is not a repository .* at clone_url/);
  });

  it("refuses a posted comment's answer without an id", async () => {
    const error = await answering({ body: "hi" })
      .postComment(ref, "hi")
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GitHubError);
    expect((error as Error).message).toMatch(/comments: the answer is not a comment .* at id/);
  });

  it("takes an answer to GET /user that is not an object for no login", async () => {
    expect(await answering(null).selfLogin()).toMatchObject({ kind: "unknown", permanent: true });
    expect(await answering(["alice"]).selfLogin()).toMatchObject({ kind: "unknown", permanent: true });
  });
});

describe("GitHubClient: response headers are read by shape", () => {
  it("reads ETag and X-Poll-Interval, and ignores a poll interval that is not a number", async () => {
    const client = (headers: Record<string, string>): GitHubClient =>
      new GitHubClient({
        apiUrl: "https://api.github.com",
        tokens: { token: () => Promise.resolve("ghp_answersTest") },
        retries: 0,
        fetch: () => Promise.resolve(new Response("[]", { status: 200, headers: { "content-type": "application/json", ...headers } })),
      });
    const read = await client({ etag: 'W/"1"', "x-poll-interval": "60" }).list("GET /repos/{owner}/{repo}/issues", { owner: "octo", repo: "repo" });
    expect(read).toMatchObject({ notModified: false, etag: 'W/"1"', pollIntervalSeconds: 60, items: [] });
    const odd = await client({ "x-poll-interval": "soon" }).list("GET /repos/{owner}/{repo}/issues", { owner: "octo", repo: "repo" });
    expect(odd).toMatchObject({ notModified: false, pollIntervalSeconds: undefined });
  });
});
