import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { inboundFromGitHub } from "../../src/ingress/github-events.js";
import type { GitHubEventContext, NormalizeResult } from "../../src/ingress/github-events.js";
import { EXCERPT_FIELD_MAX, EXCERPT_TOTAL_MAX } from "../../src/routing/inbound.js";
import type { InboundEvent } from "../../src/routing/inbound.js";

const context: GitHubEventContext = { deliveryId: "d-1", source: "gh-webhook" };

interface ReviewExample {
  readonly source: string;
  readonly name: string;
  readonly payload: { readonly repository: { readonly html_url: string }; readonly review: { readonly id: number; readonly state: string } };
}

/** GitHub's own `pull_request_review` examples (see github-events-malformed.test.ts). */
const GITHUB_REVIEW_EXAMPLES = (
  JSON.parse(readFileSync(new URL("./fixtures/github-webhook-examples.json", import.meta.url), "utf8")) as { examples: ReviewExample[] }
).examples.filter((example) => example.name === "pull_request_review");

const repository = {
  id: 1,
  name: "Repo",
  full_name: "Octo/Repo",
  owner: { login: "Octo" },
  html_url: "https://github.com/Octo/Repo",
};
const sender = { login: "alice" };

function issue(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 1001,
    node_id: "I_kwDOissue12",
    number: 12,
    title: "Parser crashes",
    body: "It crashes on empty input.",
    state: "open",
    labels: [{ name: "bug" }, { name: "the-loop: auto-execute" }],
    html_url: "https://github.com/Octo/Repo/issues/12",
    updated_at: "2025-01-02T03:04:05Z",
    user: { login: "bob" },
    ...extra,
  };
}

function pull(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 2002,
    node_id: "PR_kwDOpull40",
    number: 40,
    title: "Fix the parser",
    body: "Fixes #12",
    state: "open",
    labels: [{ name: "review" }],
    html_url: "https://github.com/Octo/Repo/pull/40",
    updated_at: "2025-01-03T00:00:00Z",
    head: { ref: "issue-13-parser", repo: { full_name: "octo/repo" } },
    base: { ref: "main", repo: { full_name: "Octo/Repo" } },
    user: { login: "alice" },
    ...extra,
  };
}

function eventOf(result: NormalizeResult): InboundEvent {
  if (!("event" in result)) throw new Error(`not an event: ${JSON.stringify(result)}`);
  return result.event;
}

const issueItem = {
  ref: "github:octo/repo#12",
  tracker: "github",
  host: "github.com",
  repository: "octo/repo",
  number: 12,
  kind: "issue",
  url: "https://github.com/Octo/Repo/issues/12",
  id: "I_kwDOissue12",
};
const pullItem = {
  ref: "github:octo/repo#40",
  tracker: "github",
  host: "github.com",
  repository: "octo/repo",
  number: 40,
  kind: "pull_request",
  url: "https://github.com/Octo/Repo/pull/40",
  id: "PR_kwDOpull40",
};
const linked12 = { ...issueItem, url: "https://github.com/octo/repo/issues/12", id: "" };
const linked13 = { ...linked12, ref: "github:octo/repo#13", number: 13, url: "https://github.com/octo/repo/issues/13" };

describe("inboundFromGitHub: issues", () => {
  it.each<[string, string, Partial<InboundEvent>]>([
    ["opened", "opened", { excerpt: { title: "Parser crashes", body: "It crashes on empty input." } }],
    ["closed", "closed", { itemState: "closed" }],
    ["reopened", "reopened", {}],
    ["edited", "updated", { excerpt: { title: "Parser crashes" } }],
  ])("%s → %s", (action, kind, extra) => {
    const state = action === "closed" ? "closed" : "open";
    const event = eventOf(inboundFromGitHub("issues", { action, issue: issue({ state }), repository, sender }, context));
    expect(event).toMatchObject({
      source: "gh-webhook",
      deliveryId: "d-1",
      kind,
      trackerEvent: `issues.${action}`,
      workItems: [issueItem],
      actor: "alice",
      body: null,
      labels: ["bug", "the-loop: auto-execute"],
      itemState: "open",
      title: "Parser crashes",
      occurredAt: "2025-01-02T03:04:05Z",
      ...extra,
    });
    expect(event.pullRequest).toBeUndefined();
    expect(event.linkedBy).toBeUndefined();
  });

  it.each(["labeled", "unlabeled"])("%s carries the label", (action) => {
    const event = eventOf(inboundFromGitHub("issues", { action, issue: issue(), label: { name: "the-loop: auto-execute" }, repository, sender }, context));
    expect(event).toMatchObject({ kind: action, label: "the-loop: auto-execute", excerpt: { title: "Parser crashes", label: "the-loop: auto-execute" } });
  });

  it.each(["assigned", "deleted", "transferred", "milestoned", "pinned"])("ignores the action %s", (action) => {
    expect(inboundFromGitHub("issues", { action, issue: issue(), repository, sender }, context)).toEqual({
      ignored: `unsupported-action:${action}`,
    });
  });

  it("an issue that is a pull request is a pull_request work item", () => {
    const event = eventOf(inboundFromGitHub("issues", { action: "opened", issue: issue({ pull_request: { url: "x" } }), repository, sender }, context));
    expect(event.workItems[0]?.kind).toBe("pull_request");
  });
});

describe("inboundFromGitHub: issue_comment", () => {
  const comment = {
    id: 555,
    node_id: "IC_555",
    body: "please handle the empty case",
    user: { login: "carol" },
    html_url: "https://github.com/Octo/Repo/issues/12#issuecomment-555",
    created_at: "2025-01-04T00:00:00Z",
  };

  it("created on an issue → commented, by the comment's author", () => {
    const event = eventOf(inboundFromGitHub("issue_comment", { action: "created", issue: issue(), comment, repository, sender }, context));
    expect(event).toMatchObject({
      kind: "commented",
      trackerEvent: "issue_comment.created",
      workItems: [issueItem],
      actor: "carol",
      body: "please handle the empty case",
      commentId: "555",
      commentKind: "comment",
      commentUrl: comment.html_url,
      occurredAt: "2025-01-04T00:00:00Z",
      excerpt: { title: "Parser crashes", comment: "please handle the empty case" },
    });
    expect(event.pullRequest).toBeUndefined();
  });

  it("on a pull request the event is PR-shaped: closing references first, then the PR; no head branch known", () => {
    const prIssue = issue({
      number: 40,
      node_id: "PR_kwDOpull40",
      title: "Fix the parser",
      body: "Fixes #12",
      html_url: "https://github.com/Octo/Repo/pull/40",
      pull_request: { url: "https://api.github.com/repos/Octo/Repo/pulls/40" },
    });
    const event = eventOf(inboundFromGitHub("issue_comment", { action: "created", issue: prIssue, comment, repository, sender }, context));
    expect(event.workItems).toEqual([linked12, { ...pullItem, url: "https://github.com/Octo/Repo/pull/40" }]);
    expect(event.linkedBy).toEqual({ "github:octo/repo#12": "closing-reference" });
    expect(event.pullRequest).toEqual({ ref: "github:octo/repo#40" });
  });

  it.each(["edited", "deleted"])("ignores %s comments", (action) => {
    expect(inboundFromGitHub("issue_comment", { action, issue: issue(), comment, repository, sender }, context)).toEqual({
      ignored: `unsupported-action:${action}`,
    });
  });

  it("a comment by a deleted account is GitHub's ghost, not an event without an actor (which the router lets through)", () => {
    const event = eventOf(
      inboundFromGitHub("issue_comment", { action: "created", issue: issue(), comment: { ...comment, user: null }, repository, sender }, context),
    );
    expect(event.actor).toBe("ghost");
  });
});

describe("inboundFromGitHub: pull_request", () => {
  it.each<[string, string]>([
    ["opened", "opened"],
    ["closed", "closed"],
    ["reopened", "reopened"],
    ["synchronize", "updated"],
    ["edited", "updated"],
    ["ready_for_review", "updated"],
  ])("%s → %s", (action, kind) => {
    const event = eventOf(inboundFromGitHub("pull_request", { action, number: 40, pull_request: pull(), repository, sender }, context));
    expect(event).toMatchObject({ kind, trackerEvent: `pull_request.${action}`, actor: "alice", body: null, labels: ["review"], title: "Fix the parser" });
  });

  it("links closing references and the head branch, the PR itself last", () => {
    const event = eventOf(inboundFromGitHub("pull_request", { action: "opened", pull_request: pull(), repository, sender }, context));
    expect(event.workItems).toEqual([linked12, linked13, pullItem]);
    expect(event.linkedBy).toEqual({ "github:octo/repo#12": "closing-reference", "github:octo/repo#13": "branch" });
    expect(event.pullRequest).toEqual({ ref: "github:octo/repo#40", headBranch: "issue-13-parser", headInRepository: true });
    expect(event.excerpt).toEqual({ title: "Fix the parser", body: "Fixes #12" });
  });

  it("a closing reference beats the branch when both name one item", () => {
    const event = eventOf(
      inboundFromGitHub(
        "pull_request",
        { action: "opened", pull_request: pull({ head: { ref: "issue/12", repo: { full_name: "Octo/Repo" } } }), repository, sender },
        context,
      ),
    );
    expect(event.workItems.map((item) => item.ref)).toEqual(["github:octo/repo#12", "github:octo/repo#40"]);
    expect(event.linkedBy).toEqual({ "github:octo/repo#12": "closing-reference" });
  });

  it("a fork's branch names nothing in this repository", () => {
    const event = eventOf(
      inboundFromGitHub(
        "pull_request",
        { action: "opened", pull_request: pull({ body: null, head: { ref: "issue-13", repo: { full_name: "mallory/repo" } } }), repository, sender },
        context,
      ),
    );
    expect(event.workItems).toEqual([pullItem]);
    expect(event.linkedBy).toBeUndefined();
    expect(event.pullRequest).toEqual({ ref: "github:octo/repo#40", headBranch: "issue-13", headInRepository: false });
  });

  it("a head whose repository is gone is not in the repository", () => {
    const event = eventOf(
      inboundFromGitHub(
        "pull_request",
        { action: "closed", pull_request: pull({ state: "closed", head: { ref: "issue-13", repo: null } }), repository, sender },
        context,
      ),
    );
    expect(event.pullRequest?.headInRepository).toBe(false);
    expect(event.linkedBy).toEqual({ "github:octo/repo#12": "closing-reference" });
    expect(event.itemState).toBe("closed");
  });

  describe("closed", () => {
    const closedAt = "2025-01-04T00:00:00Z";
    const merger = { login: "carol" };
    const mergedPull = pull({ state: "closed", closed_at: closedAt, merged: true, merged_at: closedAt, merged_by: merger });
    const abandonedPull = pull({ state: "closed", closed_at: closedAt, merged: false, merged_at: null, merged_by: null });
    const contentKey = `github:github.com/octo/repo:closed:pull_request:40:${closedAt}`;

    // The webhook names the closer as the sender; the poller's payload has none (GitHub's listing
    // does not say who closed an item), but a merged PR names its merger itself.
    it.each<[string, Record<string, unknown>, unknown, boolean, string | null]>([
      ["a webhook merge", mergedPull, { login: "bob" }, true, "bob"],
      ["a webhook close without merging", abandonedPull, { login: "bob" }, false, "bob"],
      ["a polled merge: the merger", mergedPull, null, true, "carol"],
      ["a polled close without merging: no one", abandonedPull, null, false, null],
      ["merged told by merged_at alone", pull({ state: "closed", closed_at: closedAt, merged_at: closedAt }), null, true, null],
    ])("%s", (_name, pullRequest, closer, merged, actor) => {
      const event = eventOf(
        inboundFromGitHub("pull_request", { action: "closed", number: 40, pull_request: pullRequest, repository, sender: closer }, context),
      );
      expect(event).toMatchObject({ kind: "closed", actor, body: null, itemState: "closed", contentKey });
      expect(event.pullRequest).toEqual({ ref: "github:octo/repo#40", headBranch: "issue-13-parser", headInRepository: true, merged });
    });

    it("keeps the items the PR is linked to, so its closing can reach their sessions", () => {
      const event = eventOf(inboundFromGitHub("pull_request", { action: "closed", pull_request: mergedPull, repository, sender }, context));
      expect(event.workItems).toEqual([linked12, linked13, pullItem]);
      expect(event.linkedBy).toEqual({ "github:octo/repo#12": "closing-reference", "github:octo/repo#13": "branch" });
    });

    it("is keyed by the closing's own time: the same on both paths, and new after a reopen", () => {
      const webhook = eventOf(inboundFromGitHub("pull_request", { action: "closed", pull_request: mergedPull, repository, sender }, context));
      const polled = eventOf(
        inboundFromGitHub(
          "pull_request",
          { action: "closed", pull_request: mergedPull, repository, sender: null },
          { deliveryId: "poll-closed", source: "poll" },
        ),
      );
      expect(polled.contentKey).toBe(webhook.contentKey);
      const again = pull({ state: "closed", closed_at: "2025-02-01T00:00:00Z", merged: false });
      expect(eventOf(inboundFromGitHub("pull_request", { action: "closed", pull_request: again, repository, sender }, context)).contentKey).not.toBe(
        contentKey,
      );
    });

    it("has no content key without a closing time", () => {
      const event = eventOf(inboundFromGitHub("pull_request", { action: "closed", pull_request: pull({ state: "closed" }), repository, sender }, context));
      expect(event.contentKey).toBeUndefined();
      expect(event.pullRequest?.merged).toBe(false);
    });

    it("only a closing says whether the PR merged", () => {
      const event = eventOf(inboundFromGitHub("pull_request", { action: "reopened", pull_request: pull({ merged: false }), repository, sender }, context));
      expect(event.pullRequest).not.toHaveProperty("merged");
      expect(event.contentKey).toBeUndefined();
    });
  });

  it("labeled carries the label", () => {
    const event = eventOf(
      inboundFromGitHub("pull_request", { action: "labeled", pull_request: pull(), label: { name: "review" }, repository, sender }, context),
    );
    expect(event).toMatchObject({ kind: "labeled", label: "review" });
  });

  it.each(["assigned", "review_requested", "converted_to_draft", "locked"])("ignores %s", (action) => {
    expect(inboundFromGitHub("pull_request", { action, pull_request: pull(), repository, sender }, context)).toEqual({
      ignored: `unsupported-action:${action}`,
    });
  });
});

describe("inboundFromGitHub: reviews", () => {
  const review = {
    id: 777,
    body: "Looks fine, one nit.",
    state: "APPROVED",
    user: { login: "dave" },
    html_url: "https://github.com/Octo/Repo/pull/40#pullrequestreview-777",
    submitted_at: "2025-01-05T00:00:00Z",
  };

  it("submitted → reviewed, with the state in the excerpt", () => {
    const event = eventOf(inboundFromGitHub("pull_request_review", { action: "submitted", review, pull_request: pull(), repository, sender }, context));
    expect(event).toMatchObject({
      kind: "reviewed",
      trackerEvent: "pull_request_review.submitted",
      actor: "dave",
      body: "Looks fine, one nit.",
      commentId: "777",
      commentKind: "review",
      commentUrl: review.html_url,
      occurredAt: "2025-01-05T00:00:00Z",
      reviewState: "approved",
      excerpt: { title: "Fix the parser", state: "approved", review: "Looks fine, one nit." },
      pullRequest: { ref: "github:octo/repo#40", headBranch: "issue-13-parser", headInRepository: true },
    });
    expect(event.workItems.map((item) => item.ref)).toEqual(["github:octo/repo#12", "github:octo/repo#13", "github:octo/repo#40"]);
  });

  it("keeps a review without words: the router decides", () => {
    const event = eventOf(
      inboundFromGitHub("pull_request_review", { action: "submitted", review: { ...review, body: null }, pull_request: pull(), repository, sender }, context),
    );
    expect(event.body).toBeNull();
    expect(event.excerpt).toEqual({ title: "Fix the parser", state: "approved" });
  });

  const submitted = (state: unknown): InboundEvent =>
    eventOf(inboundFromGitHub("pull_request_review", { action: "submitted", review: { ...review, state }, pull_request: pull(), repository, sender }, context));

  // The webhook spells a state in lower case, the REST answers the poller forwards in upper case.
  it.each([
    ["approved", "approved"],
    ["APPROVED", "approved"],
    ["changes_requested", "changes_requested"],
    ["CHANGES_REQUESTED", "changes_requested"],
    ["commented", "commented"],
    ["COMMENTED", "commented"],
    ["dismissed", "dismissed"],
    ["DISMISSED", "dismissed"],
  ])("carries the review state %s as %s", (state, reviewState) => {
    expect(submitted(state).reviewState).toBe(reviewState);
  });

  // Nothing may read an approval into a state it does not know.
  it.each([["PENDING"], ["approve"], ["changes-requested"], ["constructor"], [""], [null], [undefined]])(
    "leaves the review state out for %j, and still hands the review on",
    (state) => {
      const event = submitted(state);
      expect(event.kind).toBe("reviewed");
      expect(event).not.toHaveProperty("reviewState");
    },
  );

  it.each(
    GITHUB_REVIEW_EXAMPLES.flatMap((example) =>
      ["approved", "changes_requested"].map((state) => [`${example.source} #${example.payload.review.id}`, state, example] as const),
    ),
  )("GitHub's own example review from %s, %s, carries its state", (_name, state, example) => {
    const host = new URL(example.payload.repository.html_url).host;
    const payload = { ...example.payload, review: { ...example.payload.review, state } };
    expect(eventOf(inboundFromGitHub("pull_request_review", payload, { ...context, defaultHost: host })).reviewState).toBe(state);
  });

  it.each(["edited", "dismissed"])("ignores %s reviews", (action) => {
    expect(inboundFromGitHub("pull_request_review", { action, review, pull_request: pull(), repository, sender }, context)).toEqual({
      ignored: `unsupported-action:${action}`,
    });
  });

  it("a review comment → review_commented, with path and line", () => {
    const comment = {
      id: 888,
      body: "off by one here",
      path: "src/parser.ts",
      line: 42,
      user: { login: "erin" },
      html_url: "https://github.com/Octo/Repo/pull/40#discussion_r888",
      created_at: "2025-01-06T00:00:00Z",
    };
    const event = eventOf(inboundFromGitHub("pull_request_review_comment", { action: "created", comment, pull_request: pull(), repository, sender }, context));
    expect(event).toMatchObject({
      kind: "review_commented",
      trackerEvent: "pull_request_review_comment.created",
      actor: "erin",
      body: "off by one here",
      commentId: "888",
      commentKind: "review_comment",
      occurredAt: "2025-01-06T00:00:00Z",
      excerpt: { title: "Fix the parser", path: "src/parser.ts", line: "42", comment: "off by one here" },
    });
    expect(event).not.toHaveProperty("reviewState");
    expect(inboundFromGitHub("pull_request_review_comment", { action: "edited", comment, pull_request: pull(), repository, sender }, context)).toEqual({
      ignored: "unsupported-action:edited",
    });
  });
});

describe("inboundFromGitHub: hosts", () => {
  it.each<[string, Record<string, unknown>, string | undefined, string]>([
    ["github.com: no host in the ref", { html_url: "https://github.com/Octo/Repo" }, undefined, "github:octo/repo#12"],
    ["an Enterprise host", { html_url: "https://GHE.Example.com/Octo/Repo" }, "ghe.example.com", "github:ghe.example.com/octo/repo#12"],
    [
      "a host with a port, on this machine (plain http)",
      { html_url: "http://127.0.0.1:8123/Octo/Repo" },
      "127.0.0.1:8123",
      "github:127.0.0.1:8123/octo/repo#12",
    ],
    ["the item's URL when the repository has none", { html_url: undefined }, "ghe.example.com", "github:ghe.example.com/octo/repo#12"],
    ["the configured host when nothing says", { html_url: undefined }, "ghe.other.org", "github:ghe.other.org/octo/repo#12"],
  ])("%s", (_name, repoExtra, defaultHost, ref) => {
    const itemUrl = _name.startsWith("the item") ? "https://ghe.example.com/Octo/Repo/issues/12" : undefined;
    const payload = {
      action: "opened",
      issue: issue({ html_url: itemUrl }),
      repository: { ...repository, ...repoExtra },
      sender,
    };
    const event = eventOf(inboundFromGitHub("issues", payload, { ...context, ...(defaultHost ? { defaultHost } : {}) }));
    expect(event.workItems[0]?.ref).toBe(ref);
  });

  it("linked issues on an Enterprise host keep it, in ref and URL", () => {
    const payload = {
      action: "opened",
      pull_request: pull({ html_url: "https://ghe.example.com/Octo/Repo/pull/40" }),
      repository: { ...repository, html_url: "https://ghe.example.com/Octo/Repo" },
      sender,
    };
    const event = eventOf(inboundFromGitHub("pull_request", payload, { ...context, defaultHost: "ghe.example.com" }));
    expect(event.workItems.map((item) => [item.ref, item.url, item.host])).toEqual([
      ["github:ghe.example.com/octo/repo#12", "https://ghe.example.com/octo/repo/issues/12", "ghe.example.com"],
      ["github:ghe.example.com/octo/repo#13", "https://ghe.example.com/octo/repo/issues/13", "ghe.example.com"],
      ["github:ghe.example.com/octo/repo#40", "https://ghe.example.com/Octo/Repo/pull/40", "ghe.example.com"],
    ]);
    expect(event.pullRequest?.ref).toBe("github:ghe.example.com/octo/repo#40");
  });
});

describe("inboundFromGitHub: what is not acted on", () => {
  it("ping and unknown events are ignored with a reason", () => {
    expect(inboundFromGitHub("ping", { zen: "Keep it logically awesome." }, context)).toEqual({ ignored: "ping" });
    expect(inboundFromGitHub("push", { ref: "refs/heads/main" }, context)).toEqual({ ignored: "unsupported-event" });
    expect(inboundFromGitHub("star", { action: "created", repository, sender }, context)).toEqual({ ignored: "unsupported-event" });
    expect(inboundFromGitHub("constructor", { action: "opened", repository, sender }, context)).toEqual({ ignored: "unsupported-event" });
    expect(inboundFromGitHub("issues", { action: "toString", issue: issue(), repository, sender }, context)).toEqual({
      ignored: "unsupported-action:toString",
    });
  });

  it.each<[string, string, unknown]>([
    ["not an object", "issues", "text"],
    ["null", "issues", null],
    ["an array", "issues", []],
    ["no action", "issues", { issue: issue(), repository, sender }],
    ["no repository", "issues", { action: "opened", issue: issue(), sender }],
    ["a repository without owner/repo", "issues", { action: "opened", issue: issue(), repository: { full_name: "nope" }, sender }],
    ["an invalid owner", "issues", { action: "opened", issue: issue(), repository: { full_name: "-bad/repo" }, sender }],
    ["no issue", "issues", { action: "opened", repository, sender }],
    ["a number that is text", "issues", { action: "opened", issue: issue({ number: "12" }), repository, sender }],
    ["a zero number", "issues", { action: "opened", issue: issue({ number: 0 }), repository, sender }],
    ["no state", "issues", { action: "opened", issue: issue({ state: undefined }), repository, sender }],
    ["a title that is a number", "issues", { action: "opened", issue: issue({ title: 5 }), repository, sender }],
    ["labels that are not a list", "issues", { action: "opened", issue: issue({ labels: "bug" }), repository, sender }],
    ["a labeled event without a label", "issues", { action: "labeled", issue: issue(), repository, sender }],
    ["a comment without an id", "issue_comment", { action: "created", issue: issue(), comment: { body: "x" }, repository, sender }],
    ["a comment body that is an object", "issue_comment", { action: "created", issue: issue(), comment: { id: 1, body: {} }, repository, sender }],
    ["no pull_request", "pull_request", { action: "opened", repository, sender }],
    ["no review", "pull_request_review", { action: "submitted", pull_request: pull(), repository, sender }],
  ])("a payload with %s is rejected as not what GitHub sends, never thrown", (_name, name, payload) => {
    const result = inboundFromGitHub(name, payload, context);
    expect("rejected" in result && result.rejected !== "").toBe(true);
  });

  it("bounds the excerpt", () => {
    const huge = "x".repeat(EXCERPT_FIELD_MAX * 3);
    const event = eventOf(inboundFromGitHub("issues", { action: "opened", issue: issue({ title: huge, body: huge }), repository, sender }, context));
    const total = Object.values(event.excerpt).reduce((sum, value) => sum + value.length, 0);
    expect(event.excerpt.title?.length).toBeLessThanOrEqual(EXCERPT_FIELD_MAX + 1);
    expect(total).toBeLessThanOrEqual(EXCERPT_TOTAL_MAX + 2);
  });

  it("takes the source and delivery id from the context", () => {
    const event = eventOf(inboundFromGitHub("issues", { action: "opened", issue: issue(), repository, sender }, { deliveryId: "poll-9", source: "poll" }));
    expect(event).toMatchObject({ source: "poll", deliveryId: "poll-9" });
  });

  it("stamps now when the payload carries no time", () => {
    const before = Date.now();
    const event = eventOf(inboundFromGitHub("issues", { action: "opened", issue: issue({ updated_at: undefined }), repository, sender }, context));
    expect(Date.parse(event.occurredAt)).toBeGreaterThanOrEqual(before - 1);
  });
});
