import { afterEach, describe, expect, it } from "vitest";
import { GitHubClient } from "../../../src/trackers/github/client.js";
import { GitHubError, UnsupportedGitHubHostError } from "../../../src/trackers/github/errors.js";
import { GitHubTracker } from "../../../src/trackers/github/tracker.js";
import type { GitHubTrackerOptions } from "../../../src/trackers/github/tracker.js";
import { WorkItemNotFoundError } from "../../../src/trackers/tracker.js";
import type { TrackerChangeFeed } from "../../../src/trackers/tracker.js";
import { parseWorkItemRef } from "../../../src/workitem/index.js";
import type { WorkItemRef } from "../../../src/workitem/index.js";
import { FakeGitHub } from "../../support/fake-github.js";

const TOKEN = "ghp_trackerTestToken_neverPrinted_41b2";
const fakes: FakeGitHub[] = [];

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.stop()));
});

async function setup(options: GitHubTrackerOptions = {}): Promise<{ gh: FakeGitHub; tracker: GitHubTracker; ref: (n: number, repo?: string) => WorkItemRef }> {
  const gh = await FakeGitHub.start({ token: TOKEN });
  fakes.push(gh);
  gh.addRepo("octo/repo", { defaultBranch: "trunk", cloneUrl: "https://git.example/octo/repo.git" });
  const client = new GitHubClient({
    apiUrl: gh.apiUrl,
    tokens: { token: () => Promise.resolve(TOKEN) },
    spaceWrites: false,
    retries: 0,
  });
  const tracker = new GitHubTracker(client, options);
  const ref = (n: number, repo = "octo/repo"): WorkItemRef => parseWorkItemRef(`github:${gh.host}/${repo}#${n}`);
  return { gh, tracker, ref };
}

describe("GitHubTracker", () => {
  it("reads the title and the last comments of a thread, asking only for the pages that hold them", async () => {
    const { gh, tracker, ref } = await setup();
    const n = gh.addIssue("octo/repo", { title: "A long thread", body: "", user: "alice" });
    expect(await tracker.recentComments(ref(n), 200)).toEqual({ title: "A long thread", comments: [] });
    for (let index = 1; index <= 450; index++) gh.addComment("octo/repo", n, { user: "bob", body: `comment ${index}` });
    gh.requests.length = 0;
    const thread = await tracker.recentComments(ref(n), 200);
    expect(thread.title).toBe("A long thread");
    expect(thread.comments).toHaveLength(200);
    expect(thread.comments[0]).toMatchObject({ body: "comment 251", author: "bob", kind: "comment" });
    expect(thread.comments.at(-1)?.body).toBe("comment 450");
    // The issue (for its count), then pages 3 to 5 of 100: never the first two.
    const pages = gh.requests.filter((entry) => entry.path.endsWith(`/issues/${n}/comments`)).map((entry) => entry.query.page);
    expect(pages).toEqual(["3", "4", "5"]);
    await expect(tracker.recentComments(ref(999), 200)).rejects.toBeInstanceOf(WorkItemNotFoundError);
  });

  it("reads an issue", async () => {
    const { gh, tracker, ref } = await setup();
    const n = gh.addIssue("octo/repo", { title: "Fix it", body: "please", user: "alice", labels: ["bug", "the-loop"] });
    const state = await tracker.getItem(ref(n));
    const json = gh.item("octo/repo", n);
    expect(state).toEqual({
      item: {
        ref: `github:${gh.host}/octo/repo#${n}`,
        tracker: "github",
        host: gh.host,
        repository: "octo/repo",
        number: n,
        kind: "issue",
        url: json.html_url,
        id: json.node_id,
      },
      title: "Fix it",
      body: "please",
      author: "alice",
      state: "open",
      labels: ["bug", "the-loop"],
      createdAt: json.created_at,
      updatedAt: json.updated_at,
      closedAt: null,
    });
  });

  it("reads a pull request as kind pull_request, and a closed item as closed", async () => {
    const { gh, tracker, ref } = await setup();
    const n = gh.addPullRequest("octo/repo", { title: "Add it", user: "bob", head: "feature" });
    gh.closeItem("octo/repo", n);
    const state = await tracker.getItem(ref(n));
    expect(state.item.kind).toBe("pull_request");
    expect(state.item.url).toBe(gh.item("octo/repo", n).html_url);
    expect(state.body).toBe("");
    expect(state.state).toBe("closed");
    expect(state.closedAt).not.toBeNull();
  });

  it("a missing item, or repository, is WorkItemNotFoundError", async () => {
    const { tracker, ref } = await setup();
    await expect(tracker.getItem(ref(42))).rejects.toThrow(WorkItemNotFoundError);
    await expect(tracker.getItem(ref(1, "octo/missing"))).rejects.toThrow(WorkItemNotFoundError);
    await expect(tracker.postComment(ref(42), "hi")).rejects.toThrow(WorkItemNotFoundError);
  });

  it("posts a comment", async () => {
    const { gh, tracker, ref } = await setup();
    const n = gh.addIssue("octo/repo", { title: "t", user: "alice" });
    const comment = await tracker.postComment(ref(n), "on it\n<!-- the-loop -->");
    const stored = gh.comments("octo/repo", n);
    expect(stored).toHaveLength(1);
    expect(comment).toEqual({
      id: String(stored[0]?.id),
      author: stored[0]?.user.login,
      body: "on it\n<!-- the-loop -->",
      createdAt: stored[0]?.created_at,
      url: stored[0]?.html_url,
      kind: "comment",
    });
  });

  it("adds and removes labels; removing one the item lacks is fine", async () => {
    const { gh, tracker, ref } = await setup();
    const n = gh.addIssue("octo/repo", { title: "t", user: "alice" });
    await tracker.addLabel(ref(n), "needs: review");
    await tracker.addLabel(ref(n), "needs: review");
    expect(gh.item("octo/repo", n).labels.map((l) => l.name)).toEqual(["needs: review"]);
    await tracker.removeLabel(ref(n), "needs: review");
    expect(gh.item("octo/repo", n).labels).toEqual([]);
    await expect(tracker.removeLabel(ref(n), "never-there")).resolves.toBeUndefined();
    // On a missing item it is still an error.
    await expect(tracker.removeLabel(ref(99), "x")).rejects.toThrow(WorkItemNotFoundError);
    await expect(tracker.addLabel(ref(99), "x")).rejects.toThrow(WorkItemNotFoundError);
  });

  it("reacts to a comment, a review comment, and the item itself", async () => {
    const { gh, tracker, ref } = await setup();
    const pr = gh.addPullRequest("octo/repo", { title: "p", user: "alice", head: "feature" });
    const comment = gh.addComment("octo/repo", pr, { user: "alice", body: "hello" });
    const reviewComment = gh.addReviewComment("octo/repo", pr, { user: "alice", body: "nit" });
    await tracker.react({ workItem: ref(pr), commentId: String(comment.id), commentKind: "comment" }, "eyes");
    await tracker.react({ workItem: ref(pr), commentId: String(reviewComment.id), commentKind: "review_comment" }, "rocket");
    await tracker.react({ workItem: ref(pr), commentId: "123", commentKind: "review" }, "hooray");
    await tracker.react({ workItem: ref(pr) }, "+1");
    expect(gh.reactions().map(({ subject, id, content }) => ({ subject, id, content }))).toEqual([
      { subject: "issue_comment", id: comment.id, content: "eyes" },
      { subject: "review_comment", id: reviewComment.id, content: "rocket" },
      { subject: "issue", id: pr, content: "hooray" },
      { subject: "issue", id: pr, content: "+1" },
    ]);
  });

  it("reads the repository once per process", async () => {
    const { gh, tracker, ref } = await setup();
    const n = gh.addIssue("octo/repo", { title: "t", user: "alice" });
    expect(await tracker.repository(ref(n))).toEqual({ cloneUrl: "https://git.example/octo/repo.git", defaultBranch: "trunk" });
    expect(await tracker.repository(ref(n + 1))).toEqual({
      cloneUrl: "https://git.example/octo/repo.git",
      defaultBranch: "trunk",
    });
    expect(gh.requests.filter((r) => r.path === "/repos/octo/repo")).toHaveLength(1);
  });

  it("does not remember a failed repository read", async () => {
    const { gh, tracker, ref } = await setup();
    gh.failNext(500);
    await expect(tracker.repository(ref(1))).rejects.toThrow(GitHubError);
    expect((await tracker.repository(ref(1))).defaultBranch).toBe("trunk");
  });

  it("answers the login it posts as, asking GitHub once", async () => {
    const { gh, tracker, ref } = await setup();
    const n = gh.addIssue("octo/repo", { title: "t", user: "alice" });
    const posted = await tracker.postComment(ref(n), "hello");
    const [first, second] = await Promise.all([tracker.selfLogin(), tracker.selfLogin()]);
    expect(first).toEqual({ kind: "known", login: posted.author });
    expect(second).toEqual({ kind: "known", login: "the-loop-bot" });
    expect(await tracker.selfLogin()).toEqual({ kind: "known", login: "the-loop-bot" });
    expect(gh.requests.filter((r) => r.path === "/user")).toHaveLength(1);
  });

  it("answers integrations.github.selfLogin when it is set, and never asks GitHub", async () => {
    const { gh, tracker } = await setup({ selfLogin: "my-app[bot]" });
    expect(await tracker.selfLogin()).toEqual({ kind: "known", login: "my-app[bot]" });
    expect(gh.requests.filter((r) => r.path === "/user")).toHaveLength(0);
  });

  it("says a 403 (an app installation token) is permanent, with the fix, asks once, and asks again next time", async () => {
    const waits: number[] = [];
    const { gh, tracker } = await setup({ selfLoginRetry: { attempts: 3, backoffMs: 10, sleep: async (ms) => void waits.push(ms) } });
    gh.userFailure = 403;
    const answer = await tracker.selfLogin();
    expect(answer).toMatchObject({ kind: "unknown", permanent: true });
    expect(answer.kind === "unknown" && answer.fix).toContain("integrations.github.selfLogin");
    expect(waits).toEqual([]);
    gh.userFailure = undefined;
    expect(await tracker.selfLogin()).toEqual({ kind: "known", login: "the-loop-bot" });
    expect(gh.requests.filter((r) => r.path === "/user").map((r) => r.status)).toEqual([403, 200]);
  });

  it("retries a 5xx with backoff within its attempts, then says it is transient (not 'no login')", async () => {
    const waits: number[] = [];
    const { gh, tracker } = await setup({ selfLoginRetry: { attempts: 3, backoffMs: 10, sleep: async (ms) => void waits.push(ms) } });
    gh.userFailure = 500;
    expect(await tracker.selfLogin()).toMatchObject({ kind: "unknown", permanent: false });
    expect(waits).toEqual([10, 20]);
    expect(gh.requests.filter((r) => r.path === "/user").map((r) => r.status)).toEqual([500, 500, 500]);
    // A 5xx that clears within the attempts is a login.
    gh.userFailure = undefined;
    gh.failNext(502);
    expect(await tracker.selfLogin()).toEqual({ kind: "known", login: "the-loop-bot" });
  });

  it("takes a secondary rate limit for transient", async () => {
    const { gh, tracker } = await setup({ selfLoginRetry: { attempts: 1 } });
    gh.rateLimitNext({ secondary: true, resetInSeconds: 600 });
    expect(await tracker.selfLogin()).toMatchObject({ kind: "unknown", permanent: false });
  });

  it("says a token GitHub rejects (401) is permanent, and never throws", async () => {
    const gh = await FakeGitHub.start({ token: TOKEN });
    fakes.push(gh);
    const client = new GitHubClient({ apiUrl: gh.apiUrl, tokens: { token: () => Promise.resolve("ghp_wrong") }, spaceWrites: false, retries: 0 });
    const answer = await new GitHubTracker(client).selfLogin();
    expect(answer).toMatchObject({ kind: "unknown", permanent: true });
    expect(JSON.stringify(answer)).not.toContain("ghp_wrong");
  });

  it("reads a pull request's head, body and state", async () => {
    const { gh, tracker, ref } = await setup();
    const own = gh.addPullRequest("octo/repo", { title: "p", body: "Fixes #1", user: "alice", head: "fix-1" });
    const fork = gh.addPullRequest("octo/repo", { title: "q", user: "mallory", head: "main", headRepo: "mallory/repo" });
    expect(await tracker.pullRequest(ref(own))).toEqual({
      headBranch: "fix-1",
      headSha: gh.pull("octo/repo", own).head.sha,
      headInRepository: true,
      baseBranch: "trunk",
      body: "Fixes #1",
      state: "open",
      merged: false,
    });
    expect(await tracker.pullRequest(ref(fork))).toMatchObject({ headBranch: "main", headInRepository: false, body: "" });
    gh.closeItem("octo/repo", own, { merged: true });
    expect(await tracker.pullRequest(ref(own))).toMatchObject({ state: "closed", merged: true });
    const issue = gh.addIssue("octo/repo", { title: "i", user: "alice" });
    await expect(tracker.pullRequest(ref(issue))).rejects.toThrow(WorkItemNotFoundError);
  });

  it("refuses refs on another host, naming the setting", async () => {
    const { tracker } = await setup();
    const error = await tracker.getItem(parseWorkItemRef("github:octo/repo#1")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnsupportedGitHubHostError);
    expect((error as Error).message).toContain("integrations.github.apiUrl");
    expect((error as Error).message).toContain("https://api.github.com");
    await expect(tracker.repository(parseWorkItemRef("github:octo/repo#1"))).rejects.toThrow(UnsupportedGitHubHostError);
  });

  it("has no change feed: the GitHub poller reads its own (ingress/github-feed)", async () => {
    const { tracker } = await setup();
    expect("changesSince" in tracker).toBe(false);
    // @ts-expect-error: GitHubTracker does not claim TrackerChangeFeed.
    const feed: TrackerChangeFeed = tracker;
    expect(feed).toBe(tracker);
  });

  it("never lets the token into an error", async () => {
    const { gh, tracker, ref } = await setup();
    const n = gh.addIssue("octo/repo", { title: "t", user: "alice" });
    gh.rateLimitNext({ resetInSeconds: 900 });
    const errors = await Promise.all([tracker.getItem(ref(n)).catch((e: unknown) => e), tracker.getItem(ref(77)).catch((e: unknown) => e)]);
    gh.failNext(500);
    errors.push(await tracker.postComment(ref(n), "x").catch((e: unknown) => e));
    for (const error of errors) {
      expect(error).toBeInstanceOf(Error);
      expect(`${String(error)} ${JSON.stringify(error)} ${(error as Error).stack ?? ""}`).not.toContain(TOKEN);
    }
  });
});
