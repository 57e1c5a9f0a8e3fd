import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { inboundFromGitHub } from "../../src/ingress/github-events.js";
import type { GitHubEventContext, NormalizeResult } from "../../src/ingress/github-events.js";
import { isGitHubWebUrl } from "../../src/ingress/github-payloads.js";
import { LABEL, REPO, setup } from "./github-feed-fixture.js";

/**
 * A signed payload that is not what GitHub sends is refused, never acted on (issue 15, item 4):
 * the normalizer rejects it with the field that does not match, and both paths record that.
 */

const context: GitHubEventContext = { deliveryId: "d-1", source: "gh-webhook" };
const repository = { full_name: "octo/repo", name: "repo", owner: { login: "octo" }, html_url: "https://github.com/octo/repo" };
const sender = { login: "alice" };

function issue(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 1001,
    node_id: "I_12",
    number: 12,
    title: "Parser crashes",
    body: "",
    state: "open",
    labels: [{ name: LABEL }],
    html_url: "https://github.com/octo/repo/issues/12",
    updated_at: "2025-01-02T03:04:05Z",
    ...extra,
  };
}

function pull(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 2002,
    number: 40,
    title: "Fix",
    body: "",
    state: "open",
    labels: [],
    html_url: "https://github.com/octo/repo/pull/40",
    head: { ref: "fix", repo: { full_name: "octo/repo" } },
    base: { ref: "main", repo: { full_name: "octo/repo" } },
    ...extra,
  };
}

function comment(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 555,
    body: "please start",
    user: { login: "alice" },
    html_url: "https://github.com/octo/repo/issues/12#issuecomment-555",
    created_at: "2025-01-04T00:00:00Z",
    ...extra,
  };
}

const review = {
  id: 777,
  body: "ok",
  state: "APPROVED",
  user: sender,
  html_url: "https://github.com/octo/repo/pull/40#pullrequestreview-777",
  submitted_at: "2025-01-05T00:00:00Z",
};

const labeledIssue = (extra: Record<string, unknown>) => ({ action: "labeled", issue: issue(extra), label: { name: LABEL }, repository, sender });
const issueComment = (issueExtra: Record<string, unknown>, commentExtra: Record<string, unknown> = {}) => ({
  action: "created",
  issue: issue(issueExtra),
  comment: comment(commentExtra),
  repository,
  sender,
});

function rejectedOf(result: NormalizeResult): string {
  if (!("rejected" in result)) throw new Error(`not rejected: ${JSON.stringify(result)}`);
  return result.rejected;
}

describe("a routed payload that is not what GitHub sends is rejected with its reason", () => {
  it.each<[string, string, unknown, string]>([
    ["labels as plain strings", "issues", labeledIssue({ labels: ["bug", LABEL] }), "issue.labels.0"],
    [
      "a pull request's labels as plain strings",
      "pull_request",
      { action: "labeled", pull_request: pull({ labels: [LABEL] }), label: { name: LABEL }, repository, sender },
      "pull_request.labels.0",
    ],
    ["the event's label as a plain string", "issues", { ...labeledIssue({}), label: LABEL }, "label"],
    ["comment.id as a string", "issue_comment", issueComment({}, { id: "555" }), "comment.id"],
    [
      "review.id as a string",
      "pull_request_review",
      { action: "submitted", pull_request: pull(), review: { ...review, id: "777" }, repository, sender },
      "review.id",
    ],
    [
      "a review comment's id as a string",
      "pull_request_review_comment",
      { action: "created", pull_request: pull(), comment: comment({ id: "9", path: "a.ts" }), repository, sender },
      "comment.id",
    ],
    ['issue.pull_request: "yes"', "issue_comment", issueComment({ pull_request: "yes" }), "issue.pull_request"],
    ['issue.pull_request: "yes" on an issues event', "issues", labeledIssue({ pull_request: "yes" }), "issue.pull_request"],
    ["an html_url of javascript:", "issues", labeledIssue({ html_url: "javascript:alert(1)" }), "issue.html_url"],
    ["an html_url on another host", "issue_comment", issueComment({ html_url: "https://evil.example/octo/repo/issues/12" }), "issue.html_url"],
    ["an html_url over plain http", "issues", labeledIssue({ html_url: "http://github.com/octo/repo/issues/12" }), "issue.html_url"],
    ["an html_url with credentials", "issues", labeledIssue({ html_url: "https://user:pw@github.com/octo/repo/issues/12" }), "issue.html_url"],
    ["an html_url that is not a URL", "issues", labeledIssue({ html_url: "see the issue" }), "issue.html_url"],
    ["a comment's html_url on another host", "issue_comment", issueComment({}, { html_url: "https://evil.example/x" }), "comment.html_url"],
    [
      "a repository html_url on another host",
      "issues",
      { ...labeledIssue({}), repository: { ...repository, html_url: "https://evil.example/octo/repo" } },
      "repository.html_url",
    ],
    [
      "a pull request's html_url of javascript:",
      "pull_request",
      { action: "opened", pull_request: pull({ html_url: "javascript:alert(1)" }), repository, sender },
      "pull_request.html_url",
    ],
    [
      "a review's html_url on another host",
      "pull_request_review",
      { action: "submitted", pull_request: pull(), review: { ...review, html_url: "https://evil.example/r" }, repository, sender },
      "review.html_url",
    ],
    ["a sender without a login", "issues", { ...labeledIssue({}), sender: {} }, "sender.login"],
    ["a sender whose login is a number", "issues", { ...labeledIssue({}), sender: { login: 42 } }, "sender.login"],
    ["a comment author whose login is a number", "issue_comment", issueComment({}, { user: { login: 42 } }), "comment.user.login"],
    [
      "a review comment's line as text",
      "pull_request_review_comment",
      { action: "created", pull_request: pull(), comment: comment({ path: "a.ts", line: "5" }), repository, sender },
      "comment.line",
    ],
    ["a state GitHub does not have", "issues", labeledIssue({ state: "merged" }), "issue.state"],
    ["an action that is not text", "issues", { ...labeledIssue({}), action: 5 }, "action"],
  ])("%s", (_name, event, payload, field) => {
    const reason = rejectedOf(inboundFromGitHub(event, payload, context));
    expect(reason.startsWith(`${field}:`), reason).toBe(true);
    // The reason names the field, never what the sender put in it.
    expect(reason).not.toMatch(/javascript|evil|user:pw|see the issue/);
  });

  it("on an Enterprise host, a github.com URL is another host", () => {
    const ghes = { ...context, defaultHost: "ghe.example.com" };
    expect(rejectedOf(inboundFromGitHub("issues", labeledIssue({}), ghes))).toMatch(/^repository\.html_url: is not an https URL on ghe\.example\.com/);
    const onHost = {
      ...labeledIssue({ html_url: "https://GHE.example.com/octo/repo/issues/12" }),
      repository: { ...repository, html_url: "https://ghe.example.com/octo/repo" },
    };
    expect("event" in inboundFromGitHub("issues", onHost, ghes)).toBe(true);
  });

  it("what the-loop does not act on is ignored whatever its shape, not rejected", () => {
    expect(inboundFromGitHub("issues", { action: "assigned", issue: "yes", repository: 5 }, context)).toEqual({ ignored: "unsupported-action:assigned" });
    expect(inboundFromGitHub("push", { labels: ["x"] }, context)).toEqual({ ignored: "unsupported-event" });
  });

  it("plain http is a web address only on this machine, as for the API", () => {
    expect(isGitHubWebUrl("http://127.0.0.1:8123/octo/repo", "127.0.0.1:8123")).toBe(true);
    expect(isGitHubWebUrl("http://localhost:8123/octo/repo", "localhost:8123")).toBe(true);
    expect(isGitHubWebUrl("http://ghe.example.com/octo/repo", "ghe.example.com")).toBe(false);
    expect(isGitHubWebUrl("https://127.0.0.1:8124/octo/repo", "127.0.0.1:8123")).toBe(false);
  });
});

interface Example {
  readonly source: string;
  readonly name: string;
  readonly payload: { readonly action: string; readonly repository: { readonly html_url: string } };
}

const EXAMPLES = (JSON.parse(readFileSync(new URL("./fixtures/github-webhook-examples.json", import.meta.url), "utf8")) as { examples: Example[] }).examples;

describe("GitHub's own example payloads", () => {
  it("cover every routed event, on github.com and on GitHub Enterprise Server", () => {
    expect(new Set(EXAMPLES.map((example) => example.name))).toEqual(
      new Set(["issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment"]),
    );
    expect(new Set(EXAMPLES.map((example) => example.source))).toEqual(new Set(["api.github.com", "ghes-35"]));
  });

  it.each(EXAMPLES.map((example, index) => [`${example.source} ${example.name}.${example.payload.action} #${index}`, example]))(
    "%s is an event",
    (_name, example) => {
      const host = new URL(example.payload.repository.html_url).host;
      const result = inboundFromGitHub(example.name, example.payload, { ...context, defaultHost: host });
      expect(result, JSON.stringify(result)).toHaveProperty("event");
    },
  );
});

describe("the poller's path", () => {
  it("refuses a REST answer that is not what GitHub sends, with a poll.rejected naming the delivery and the reason", async () => {
    const s = await setup({
      reader: (client) => ({
        host: client.host,
        get: (route, params, options) => client.get(route, params, options),
        list: async (route: string, params: Readonly<Record<string, string | number>>, options?: { etag?: string; maxPages?: number }) => {
          const result = await client.list(route, params, options);
          if (!route.endsWith("/issues/comments") || result.notModified) return result;
          return { ...result, items: result.items.map((item) => ({ ...(item as object), html_url: "javascript:alert(1)" })) };
        },
      }),
    });
    const number = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    await s.settle();
    const posted = s.gh.addComment(REPO, number, { user: "alice", body: "please start" });
    const batch = await s.cycle();
    expect(batch.items).toEqual([]);
    expect(s.events.events.filter((event) => event.type === "poll.rejected").map((event) => event.fields)).toEqual([
      {
        poll_source: s.feed.key,
        delivery_id: `poll-comment-${posted.id}`,
        github_event: "issue_comment",
        reason: expect.stringMatching(/^comment\.html_url: /),
      },
    ]);
  });
});
