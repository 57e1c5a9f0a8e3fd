import { createServer } from "node:http";
import type { IncomingHttpHeaders } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { verify } from "@octokit/webhooks-methods";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeGitHub, sendWebhook } from "../support/fake-github.js";
import type { FakeComment, FakeIssue, FakePull, FakeReviewComment } from "../support/fake-github.js";
import { waitFor } from "../support/wait.js";

const TOKEN = "test-token-123";
const REPO = "octo/repo";

let gh: FakeGitHub;

beforeEach(async () => {
  gh = await FakeGitHub.start({ token: TOKEN });
  gh.addRepo(REPO);
});

afterEach(async () => {
  await gh.stop();
});

function api(path: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<Response> {
  const url = path.startsWith("http") ? path : `${gh.apiUrl}${path}`;
  return fetch(url, { ...init, headers: { authorization: `token ${TOKEN}`, ...init.headers } });
}

async function json<T>(path: string): Promise<T> {
  const response = await api(path);
  expect(response.status, path).toBe(200);
  return (await response.json()) as T;
}

function post(path: string, body: unknown, method = "POST"): Promise<Response> {
  return api(path, { method, body: JSON.stringify(body), headers: { "content-type": "application/json" } });
}

function numbers(items: Array<{ number: number }>): number[] {
  return items.map((i) => i.number);
}

describe("issue listing", () => {
  it("filters by state and labels, newest first by default", async () => {
    const bug = gh.addIssue(REPO, { title: "bug", user: "alice", labels: ["bug", "agent"] });
    const plain = gh.addIssue(REPO, { title: "plain", user: "alice" });
    const closed = gh.addIssue(REPO, { title: "done", user: "bob", labels: ["agent"] });
    gh.closeItem(REPO, closed);

    expect(numbers(await json<FakeIssue[]>(`/repos/${REPO}/issues`))).toEqual([plain, bug]);
    expect(numbers(await json<FakeIssue[]>(`/repos/${REPO}/issues?state=closed`))).toEqual([closed]);
    expect(numbers(await json<FakeIssue[]>(`/repos/${REPO}/issues?state=all&labels=agent`))).toEqual([closed, bug]);
    expect(numbers(await json<FakeIssue[]>(`/repos/${REPO}/issues?state=all&labels=agent,bug`))).toEqual([bug]);
    expect(numbers(await json<FakeIssue[]>(`/repos/${REPO}/issues?labels=AGENT`))).toEqual([bug]);

    const issue = (await json<FakeIssue[]>(`/repos/${REPO}/issues?state=closed`))[0];
    expect(issue).toMatchObject({
      number: closed,
      state: "closed",
      state_reason: "completed",
      user: { login: "bob" },
      labels: [{ name: "agent" }],
      html_url: `http://${gh.host}/${REPO}/issues/${closed}`,
      repository_url: `${gh.apiUrl}/repos/${REPO}`,
      comments: 0,
    });
    expect(issue?.closed_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(issue?.node_id).toMatch(/^I_/);
  });

  it("since keeps items updated at or after it, and sort=updated&direction=asc orders by the last change", async () => {
    const first = gh.addIssue(REPO, { title: "first", user: "alice" });
    const second = gh.addIssue(REPO, { title: "second", user: "alice" });
    gh.advance(60);
    const cut = gh.now();
    gh.addComment(REPO, first, { user: "alice", body: "bump" });
    gh.advance(60);
    const third = gh.addIssue(REPO, { title: "third", user: "alice" });

    const since = await json<FakeIssue[]>(`/repos/${REPO}/issues?since=${cut}&sort=updated&direction=asc`);
    expect(numbers(since)).toEqual([first, third]);
    expect(since[0]?.updated_at).toBe(cut);
    expect(since[0]?.comments).toBe(1);

    const all = await json<FakeIssue[]>(`/repos/${REPO}/issues?sort=updated&direction=asc`);
    expect(numbers(all)).toEqual([second, first, third]);

    const bad = await api(`/repos/${REPO}/issues?since=not-a-date`);
    expect(bad.status).toBe(422);
  });

  it("a pull request shares the number sequence and lists among the issues with a pull_request key", async () => {
    const issue = gh.addIssue(REPO, { title: "issue", user: "alice" });
    const pr = gh.addPullRequest(REPO, { title: "pr", user: "bob", head: "fix-it", labels: ["agent"] });
    expect(pr).toBe(issue + 1);

    const listed = await json<FakeIssue[]>(`/repos/${REPO}/issues`);
    const asIssue = listed.find((i) => i.number === pr);
    expect(asIssue?.pull_request).toEqual({
      url: `${gh.apiUrl}/repos/${REPO}/pulls/${pr}`,
      html_url: `http://${gh.host}/${REPO}/pull/${pr}`,
      diff_url: `http://${gh.host}/${REPO}/pull/${pr}.diff`,
      patch_url: `http://${gh.host}/${REPO}/pull/${pr}.patch`,
      merged_at: null,
    });
    expect(asIssue?.html_url).toBe(`http://${gh.host}/${REPO}/pull/${pr}`);
    expect(listed.find((i) => i.number === issue)?.pull_request).toBeUndefined();

    const pull = await json<FakePull>(`/repos/${REPO}/pulls/${pr}`);
    expect(pull).toMatchObject({
      number: pr,
      state: "open",
      merged: false,
      merged_at: null,
      user: { login: "bob" },
      labels: [{ name: "agent" }],
      head: { ref: "fix-it", repo: { full_name: REPO, clone_url: `http://${gh.host}/${REPO}.git` } },
      base: { ref: "main", repo: { full_name: REPO } },
    });
    expect(pull.head.sha).toMatch(/^[0-9a-f]{40}$/);
    expect((await api(`/repos/${REPO}/pulls/${issue}`)).status).toBe(404);
    expect((await api(`/repos/${REPO}/issues/99`)).status).toBe(404);

    // The fake's clock is the wall clock in whole seconds: the merge time lies between the two readings.
    const beforeMerge = gh.now();
    gh.closeItem(REPO, pr, { merged: true });
    const afterMerge = gh.now();
    expect(await json<FakePull>(`/repos/${REPO}/pulls/${pr}`)).toMatchObject({ state: "closed", merged: true });
    expect([beforeMerge, afterMerge]).toContain(gh.item(REPO, pr).pull_request?.merged_at);
  });

  it("serves the repository, and a fork as the head repository", async () => {
    gh.addRepo("octo/other", { defaultBranch: "trunk", cloneUrl: "file:///tmp/other.git" });
    const repo = await json<Record<string, unknown>>("/repos/OCTO/Other");
    expect(repo).toMatchObject({
      name: "other",
      full_name: "octo/other",
      owner: { login: "octo" },
      html_url: `http://${gh.host}/octo/other`,
      clone_url: "file:///tmp/other.git",
      default_branch: "trunk",
      private: false,
    });
    const pr = gh.addPullRequest("octo/other", { title: "from a fork", user: "eve", head: "feature", headRepo: "eve/other" });
    expect(gh.pull("octo/other", pr)).toMatchObject({
      head: { ref: "feature", label: "eve:feature", repo: { full_name: "eve/other" } },
      base: { ref: "trunk", repo: { full_name: "octo/other" } },
    });
    expect((await api("/repos/octo/missing")).status).toBe(404);
  });
});

describe("comments, reviews and labels", () => {
  it("lists repository-wide comments oldest first, filtered by since", async () => {
    const a = gh.addIssue(REPO, { title: "a", user: "alice" });
    const b = gh.addIssue(REPO, { title: "b", user: "alice" });
    const old = gh.addComment(REPO, a, { user: "alice", body: "old" });
    gh.advance(30);
    const cut = gh.now();
    const c1 = gh.addComment(REPO, b, { user: "bob", body: "one" });
    const c2 = gh.addComment(REPO, a, { user: "alice", body: "two" });

    const all = await json<FakeComment[]>(`/repos/${REPO}/issues/comments`);
    expect(all.map((c) => c.id)).toEqual([old.id, c1.id, c2.id]);
    const recent = await json<FakeComment[]>(`/repos/${REPO}/issues/comments?since=${cut}`);
    expect(recent.map((c) => c.body)).toEqual(["one", "two"]);
    const desc = await json<FakeComment[]>(`/repos/${REPO}/issues/comments?sort=created&direction=desc`);
    expect(desc.map((c) => c.id)).toEqual([c2.id, c1.id, old.id]);

    expect(c1).toMatchObject({
      body: "one",
      user: { login: "bob" },
      html_url: `http://${gh.host}/${REPO}/issues/${b}#issuecomment-${c1.id}`,
      issue_url: `${gh.apiUrl}/repos/${REPO}/issues/${b}`,
      created_at: cut,
      updated_at: cut,
    });
    expect(c1.node_id).toMatch(/^IC_/);
    const onA = await json<FakeComment[]>(`/repos/${REPO}/issues/${a}/comments?since=${cut}`);
    expect(onA.map((c) => c.id)).toEqual([c2.id]);
  });

  it("a comment posted through the API is the bot's and bumps the item's updated_at", async () => {
    const n = gh.addIssue(REPO, { title: "a", user: "alice" });
    gh.advance(120);
    const response = await post(`/repos/${REPO}/issues/${n}/comments`, { body: "on it" });
    expect(response.status).toBe(201);
    const comment = (await response.json()) as FakeComment;
    expect(comment.user.login).toBe("the-loop-bot");
    expect(gh.comments(REPO, n)).toEqual([comment]);
    expect(gh.item(REPO, n).updated_at).toBe(gh.now());
    expect(gh.item(REPO, n).comments).toBe(1);
    expect((await post(`/repos/${REPO}/issues/${n}/comments`, {})).status).toBe(422);
    expect((await post(`/repos/${REPO}/issues/404/comments`, { body: "x" })).status).toBe(404);
  });

  it("model mutations bump updated_at to now()", async () => {
    const n = gh.addIssue(REPO, { title: "a", user: "alice" });
    const created = gh.item(REPO, n).updated_at;
    for (const mutate of [
      () => gh.addLabel(REPO, n, "agent"),
      () => gh.removeLabel(REPO, n, "agent"),
      () => gh.closeItem(REPO, n),
      () => gh.reopenItem(REPO, n),
      () => gh.addComment(REPO, n, { user: "bob", body: "hi" }),
    ]) {
      gh.advance(10);
      mutate();
      expect(gh.item(REPO, n).updated_at).toBe(gh.now());
    }
    expect(gh.item(REPO, n).created_at).toBe(created);
    expect(gh.item(REPO, n).state_reason).toBe("reopened");
    expect(gh.events(REPO, n).map((e) => e.event)).toEqual(["labeled", "unlabeled", "closed", "reopened"]);
  });

  it("adds and removes labels; removing one the item lacks is a 404", async () => {
    const n = gh.addIssue(REPO, { title: "a", user: "alice", labels: ["bug"] });
    const added = await post(`/repos/${REPO}/issues/${n}/labels`, { labels: ["agent", "BUG"] });
    expect(added.status).toBe(200);
    expect(((await added.json()) as Array<{ name: string }>).map((l) => l.name)).toEqual(["bug", "agent"]);

    const removed = await api(`/repos/${REPO}/issues/${n}/labels/${encodeURIComponent("agent")}`, { method: "DELETE" });
    expect(removed.status).toBe(200);
    expect(gh.item(REPO, n).labels.map((l) => l.name)).toEqual(["bug"]);

    const missing = await api(`/repos/${REPO}/issues/${n}/labels/agent`, { method: "DELETE" });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ message: "Label does not exist" });

    gh.addLabel(REPO, n, "agent: working");
    const spaced = await api(`/repos/${REPO}/issues/${n}/labels/${encodeURIComponent("agent: working")}`, { method: "DELETE" });
    expect(spaced.status).toBe(200);
    expect(gh.requests.at(-1)?.path).toBe(`/repos/${REPO}/issues/${n}/labels/agent: working`);
  });

  it("lists reviews oldest first, hiding other people's pending ones, and review comments repository-wide", async () => {
    const pr = gh.addPullRequest(REPO, { title: "pr", user: "bob", head: "x" });
    const approved = gh.addReview(REPO, pr, { user: "alice", body: "lgtm", state: "APPROVED" });
    const pending = gh.addReview(REPO, pr, { user: "carol", body: "draft", state: "PENDING" });
    expect(pending.submitted_at).toBeUndefined();
    expect(approved).toMatchObject({
      state: "APPROVED",
      submitted_at: gh.now(),
      pull_request_url: `${gh.apiUrl}/repos/${REPO}/pulls/${pr}`,
      html_url: `http://${gh.host}/${REPO}/pull/${pr}#pullrequestreview-${approved.id}`,
    });
    expect(approved.node_id).toMatch(/^PRR_/);
    const reviews = await json<Array<{ id: number }>>(`/repos/${REPO}/pulls/${pr}/reviews`);
    expect(reviews.map((r) => r.id)).toEqual([approved.id]);

    const rc = gh.addReviewComment(REPO, pr, { user: "alice", body: "nit", path: "src/a.ts", line: 3 });
    expect(rc).toMatchObject({
      path: "src/a.ts",
      line: 3,
      pull_request_url: `${gh.apiUrl}/repos/${REPO}/pulls/${pr}`,
      html_url: `http://${gh.host}/${REPO}/pull/${pr}#discussion_r${rc.id}`,
    });
    expect(rc.node_id).toMatch(/^PRRC_/);
    expect(rc.diff_hunk).toContain("@@");
    const listed = await json<FakeReviewComment[]>(`/repos/${REPO}/pulls/comments?since=${gh.now()}`);
    expect(listed.map((c) => c.id)).toEqual([rc.id]);
  });

  it("records reactions and refuses unknown content with 422", async () => {
    const n = gh.addIssue(REPO, { title: "a", user: "alice" });
    const pr = gh.addPullRequest(REPO, { title: "pr", user: "bob", head: "x" });
    const comment = gh.addComment(REPO, n, { user: "alice", body: "go" });
    const rc = gh.addReviewComment(REPO, pr, { user: "alice", body: "nit" });

    expect((await post(`/repos/${REPO}/issues/comments/${comment.id}/reactions`, { content: "eyes" })).status).toBe(201);
    expect((await post(`/repos/${REPO}/issues/comments/${comment.id}/reactions`, { content: "eyes" })).status).toBe(200);
    expect((await post(`/repos/${REPO}/pulls/comments/${rc.id}/reactions`, { content: "rocket" })).status).toBe(201);
    expect((await post(`/repos/${REPO}/issues/${n}/reactions`, { content: "+1" })).status).toBe(201);
    expect((await post(`/repos/${REPO}/issues/${n}/reactions`, { content: "thumbsup" })).status).toBe(422);
    expect((await post(`/repos/${REPO}/issues/comments/${rc.id}/reactions`, { content: "eyes" })).status).toBe(404);

    expect(gh.reactions()).toEqual([
      { subject: "issue_comment", repo: REPO, id: comment.id, content: "eyes", user: "the-loop-bot" },
      { subject: "review_comment", repo: REPO, id: rc.id, content: "rocket", user: "the-loop-bot" },
      { subject: "issue", repo: REPO, id: n, content: "+1", user: "the-loop-bot" },
    ]);
  });
});

describe("HTTP behaviour", () => {
  it("paginates with a Link header that walks every page", async () => {
    for (let i = 0; i < 7; i++) gh.addIssue(REPO, { title: `i${i}`, user: "alice" });
    const seen: number[] = [];
    let url: string | undefined = `${gh.apiUrl}/repos/${REPO}/issues?per_page=3&direction=asc`;
    let pages = 0;
    while (url) {
      const response = await api(url);
      const page = (await response.json()) as FakeIssue[];
      seen.push(...numbers(page));
      pages++;
      const link = response.headers.get("link") ?? "";
      if (pages === 1) {
        expect(link).toContain(`<${gh.apiUrl}/repos/${REPO}/issues?per_page=3&direction=asc&page=3>; rel="last"`);
      }
      url = /<([^>]+)>;\s*rel="next"/.exec(link)?.[1];
      expect(pages).toBeLessThan(10);
    }
    expect(pages).toBe(3);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7]);

    const single = await api(`/repos/${REPO}/issues?per_page=100`);
    expect(single.headers.get("link")).toBeNull();
  });

  it("answers 304 to a matching If-None-Match without charging the rate limit", async () => {
    gh.addIssue(REPO, { title: "a", user: "alice" });
    const first = await api(`/repos/${REPO}/issues`);
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^W\/"[0-9a-f]{40}"$/);
    expect(gh.rateLimitUsed()).toBe(1);
    expect(first.headers.get("x-ratelimit-remaining")).toBe("4999");

    const again = await api(`/repos/${REPO}/issues`, { headers: { "if-none-match": etag ?? "" } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    expect(again.headers.get("etag")).toBe(etag);
    expect(again.headers.get("x-ratelimit-remaining")).toBe("4999");
    expect(gh.rateLimitUsed()).toBe(1);
    expect(gh.requests.at(-1)).toMatchObject({ status: 304, ifNoneMatch: etag });

    gh.addComment(REPO, 1, { user: "bob", body: "changed" });
    const changed = await api(`/repos/${REPO}/issues`, { headers: { "if-none-match": etag ?? "" } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
    expect(gh.rateLimitUsed()).toBe(2);
  });

  it("sends rate-limit headers on every response and exempts /rate_limit", async () => {
    const response = await api("/repos/octo/repo");
    expect(response.headers.get("x-ratelimit-limit")).toBe("5000");
    expect(response.headers.get("x-ratelimit-used")).toBe("1");
    expect(response.headers.get("x-ratelimit-resource")).toBe("core");
    expect(Number(response.headers.get("x-ratelimit-reset"))).toBeGreaterThan(Date.now() / 1000);
    const rate = await json<{ resources: { core: { remaining: number; used: number } } }>("/rate_limit");
    expect(rate.resources.core).toMatchObject({ remaining: 4999, used: 1 });
    expect(gh.rateLimitUsed()).toBe(1);
  });

  it("a scripted primary limit answers 403 until its reset passes, then recovers", async () => {
    gh.rateLimitNext({ resetInSeconds: 1 });
    const limited = await api(`/repos/${REPO}`);
    expect(limited.status).toBe(403);
    expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
    const reset = Number(limited.headers.get("x-ratelimit-reset"));
    expect(reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));
    expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 2);
    expect(((await limited.json()) as { message: string }).message).toMatch(/^API rate limit exceeded for /);
    expect((await api("/rate_limit")).status).toBe(200);

    const statuses: number[] = [];
    const recovered = await waitFor(
      "the rate limit to reset",
      async () => {
        const response = await api(`/repos/${REPO}`);
        statuses.push(response.status);
        return response.status === 200 ? response : undefined;
      },
      { timeoutMs: 5_000, intervalMs: 100 },
    );
    expect(Date.now()).toBeGreaterThanOrEqual(reset * 1000);
    expect(recovered.headers.get("x-ratelimit-remaining")).toBe("4999");
    expect(statuses.slice(0, -1).every((s) => s === 403)).toBe(true);
    expect(gh.rateLimitUsed()).toBe(1);
  });

  it("a primary limit whose reset already passed still limits `count` requests", async () => {
    gh.rateLimitNext({ count: 2, resetInSeconds: 0 });
    const reset = Number((await api("/rate_limit")).headers.get("x-ratelimit-reset"));
    await waitFor("the reset time to pass", () => (Date.now() >= reset * 1000 ? true : undefined), { timeoutMs: 3_000 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await api(`/repos/${REPO}`)).status);
    expect(statuses).toEqual([403, 403, 200]);
  });

  it("a secondary limit answers 403 with retry-after for `count` requests", async () => {
    gh.rateLimitNext({ secondary: true, count: 2, resetInSeconds: 60, retryAfterSeconds: 7 });
    const first = await api(`/repos/${REPO}`);
    expect(first.status).toBe(403);
    expect(first.headers.get("retry-after")).toBe("7");
    expect(first.headers.get("x-ratelimit-remaining")).not.toBe("0");
    expect(((await first.json()) as { message: string }).message).toContain("You have exceeded a secondary rate limit");
    expect((await api(`/repos/${REPO}`)).status).toBe(403);
    expect((await api(`/repos/${REPO}`)).status).toBe(200);
  });

  it("failNext injects server errors for the next requests", async () => {
    gh.failNext(502, 2);
    expect((await api(`/repos/${REPO}`)).status).toBe(502);
    expect((await api(`/repos/${REPO}`)).status).toBe(502);
    expect((await api(`/repos/${REPO}`)).status).toBe(200);
    expect(gh.requests.map((r) => r.status)).toEqual([502, 502, 200]);
    expect(gh.rateLimitUsed()).toBe(1);
  });

  it("refuses a missing or wrong token with 401 and never logs the token", async () => {
    const none = await fetch(`${gh.apiUrl}/repos/${REPO}`);
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ message: "Bad credentials" });
    const wrong = await fetch(`${gh.apiUrl}/repos/${REPO}`, { headers: { authorization: "token nope" } });
    expect(wrong.status).toBe(401);
    const bearer = await fetch(`${gh.apiUrl}/repos/${REPO}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(bearer.status).toBe(200);
    expect(gh.requests.map((r) => [r.status, r.authorized])).toEqual([
      [401, false],
      [401, false],
      [200, true],
    ]);
    expect(JSON.stringify(gh.requests)).not.toContain(TOKEN);
    expect(gh.rateLimitUsed()).toBe(1);
  });

  it("logs requests without the prefix or query, serves unprefixed paths, and 404s unknown routes", async () => {
    gh.pollInterval = 60;
    const unprefixed = await api(`http://${gh.host}/repos/${REPO}/issues?state=all`);
    expect(unprefixed.status).toBe(200);
    expect(unprefixed.headers.get("x-poll-interval")).toBe("60");
    const unknown = await api("/nope/nothing");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ message: "Not Found" });
    const badJson = await api(`/repos/${REPO}/issues/1/comments`, { method: "POST", body: "{" });
    expect(badJson.status).toBe(400);
    expect(gh.requests.map((r) => [r.method, r.path, r.query, r.status])).toEqual([
      ["GET", `/repos/${REPO}/issues`, { state: "all" }, 200],
      ["GET", "/nope/nothing", {}, 404],
      ["POST", `/repos/${REPO}/issues/1/comments`, {}, 400],
    ]);
    gh.clearRequests();
    expect(gh.requests).toEqual([]);
  });

  it("survives a client that hangs up mid-request", async () => {
    await new Promise<void>((resolve, reject) => {
      const socket = connect(gh.port, "127.0.0.1", () => {
        socket.write(`POST /api/v3/repos/${REPO}/issues/1/comments HTTP/1.1\r\nHost: ${gh.host}\r\nContent-Length: 100\r\n\r\n{"bo`);
        socket.destroy();
        resolve();
      });
      socket.on("error", reject);
    });
    expect((await api(`/repos/${REPO}`)).status).toBe(200);
    expect((await json<{ login: string }>("/user")).login).toBe("the-loop-bot");
  });

  it("serves hundreds of concurrent requests", async () => {
    gh.addIssue(REPO, { title: "a", user: "alice" });
    const statuses = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        i % 3 === 0 ? post(`/repos/${REPO}/issues/1/comments`, { body: `c${i}` }).then((r) => r.status) : api(`/repos/${REPO}/issues/1`).then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(100);
    expect(statuses.filter((s) => s === 200)).toHaveLength(200);
    expect(gh.comments(REPO, 1)).toHaveLength(100);
    expect(gh.requests).toHaveLength(300);
    expect(gh.rateLimitUsed()).toBe(300);
  });
});

describe("webhooks", () => {
  interface Received {
    headers: IncomingHttpHeaders;
    body: string;
  }

  async function receiver(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
    const received: Received[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        res.writeHead(202, { "content-type": "text/plain" });
        res.end("accepted");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}/gh-webhook`,
      received,
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    };
  }

  it("sendWebhook delivers as GitHub does, with a verifiable signature", async () => {
    const sink = await receiver();
    try {
      const n = gh.addIssue(REPO, { title: "a", user: "alice" });
      const payload = gh.payload.issues(REPO, n, "opened", "alice");
      const result = await sendWebhook(sink.url, { event: "issues", payload, secret: "s3cret" });
      expect(result).toMatchObject({ status: 202, body: "accepted" });
      expect(result.deliveryId).toMatch(/^[0-9a-f-]{36}$/);

      const got = sink.received[0];
      expect(got?.headers).toMatchObject({
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": result.deliveryId,
      });
      expect(got?.headers["user-agent"]).toMatch(/^GitHub-Hookshot\//);
      expect(JSON.parse(got?.body ?? "")).toEqual(payload);
      const signature = String(got?.headers["x-hub-signature-256"]);
      expect(await verify("s3cret", got?.body ?? "", signature)).toBe(true);
      expect(await verify("other", got?.body ?? "", signature)).toBe(false);

      await sendWebhook(sink.url, { event: "ping", payload: {}, deliveryId: "d-1", signature: "sha256=bad", body: "{ raw }" });
      expect(sink.received[1]).toMatchObject({ body: "{ raw }", headers: { "x-github-delivery": "d-1", "x-hub-signature-256": "sha256=bad" } });

      await sendWebhook(sink.url, { event: "ping", payload: { zen: "hi" } });
      expect(sink.received[2]?.headers["x-hub-signature-256"]).toBeUndefined();
    } finally {
      await sink.close();
    }
  });

  it("payload builders carry the fields GitHub sends", () => {
    const n = gh.addIssue(REPO, { title: "a", user: "alice", labels: ["agent"] });
    const pr = gh.addPullRequest(REPO, { title: "pr", user: "bob", head: "fix" });

    const labeled = gh.payload.issues(REPO, n, "labeled", "alice", "agent");
    expect(labeled).toMatchObject({
      action: "labeled",
      issue: { number: n, labels: [{ name: "agent" }], user: { login: "alice" } },
      label: { name: "agent" },
      repository: { full_name: REPO, html_url: `http://${gh.host}/${REPO}` },
      sender: { login: "alice" },
    });
    expect(() => gh.payload.issues(REPO, n, "labeled", "alice")).toThrow(/label/);

    const onIssue = gh.addComment(REPO, n, { user: "alice", body: "hi" });
    expect(gh.payload.issueComment(REPO, n, onIssue)).toMatchObject({
      action: "created",
      comment: { id: onIssue.id, body: "hi" },
      sender: { login: "alice" },
    });
    expect(gh.payload.issueComment(REPO, n, onIssue).issue.pull_request).toBeUndefined();

    const onPr = gh.addComment(REPO, pr, { user: "carol", body: "@the-loop go" });
    const prComment = gh.payload.issueComment(REPO, pr, onPr);
    expect(prComment.issue.pull_request?.url).toBe(`${gh.apiUrl}/repos/${REPO}/pulls/${pr}`);
    expect(prComment.issue.html_url).toBe(`http://${gh.host}/${REPO}/pull/${pr}`);

    gh.closeItem(REPO, pr, { merged: true });
    expect(gh.payload.pullRequest(REPO, pr, "closed", "octo")).toMatchObject({
      action: "closed",
      number: pr,
      pull_request: { number: pr, state: "closed", merged: true, head: { ref: "fix" } },
      sender: { login: "octo" },
    });

    const review = gh.addReview(REPO, pr, { user: "alice", body: "please fix", state: "CHANGES_REQUESTED" });
    expect(gh.payload.pullRequestReview(REPO, pr, review)).toMatchObject({
      action: "submitted",
      review: { id: review.id, state: "CHANGES_REQUESTED", body: "please fix" },
      pull_request: { number: pr },
      sender: { login: "alice" },
    });

    const rc = gh.addReviewComment(REPO, pr, { user: "alice", body: "nit", path: "a.ts", line: 2 });
    expect(gh.payload.pullRequestReviewComment(REPO, pr, rc)).toMatchObject({
      action: "created",
      comment: { id: rc.id, path: "a.ts", line: 2 },
      pull_request: { number: pr },
      repository: { full_name: REPO },
      sender: { login: "alice" },
    });
  });
});
