import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import type { EventFields, EventType } from "../../src/events/index.js";
import { Poller } from "../../src/ingress/poller.js";
import type { EventHandler, HandleResult, SourceBatch } from "../../src/ingress/poller.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { GitHubFeed } from "../../src/ingress/github-feed/index.js";
import type { GitHubReader } from "../../src/ingress/github-feed/index.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { LABEL, REPO, ids, setup, startOfSecond } from "./github-feed-fixture.js";

function summary(batch: SourceBatch): [string, string, string | undefined, string | null][] {
  return batch.items.map(({ id, event }) => [id, event.kind, event.workItems.at(-1)?.ref, event.actor]);
}

describe("GitHubFeed", () => {
  it("takes existing history as read on first sight", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    s.gh.addComment(REPO, issue, { user: "alice", body: "an old request" });
    const pr = s.gh.addPullRequest(REPO, { title: "fix", body: `Fixes #${issue}`, user: "bob", head: "fix", labels: [LABEL] });
    s.gh.addReview(REPO, pr, { user: "alice", body: "old review" });
    s.gh.addReviewComment(REPO, pr, { user: "alice", body: "old remark" });
    const closed = s.gh.addIssue(REPO, { title: "done", user: "alice" });
    s.gh.closeItem(REPO, closed);
    s.watched.add(s.ref(closed));

    const first = await s.cycle();
    expect(first.items).toEqual([]);
    expect(JSON.parse(first.cursor).repos[REPO].armed).toEqual([issue, pr]);
    expect((await s.cycle()).items).toEqual([]);
    expect((await s.cycle()).items).toEqual([]);
  });

  it("hands out a new comment on a labelled issue within one cycle", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    await s.settle();

    const comment = s.gh.addComment(REPO, issue, { user: "alice", body: "please fix" });
    const batch = await s.cycle();
    expect(summary(batch)).toEqual([[`comment-${comment.id}`, "commented", s.ref(issue), "alice"]]);
    expect(batch.items[0]?.event).toMatchObject({
      source: "poll",
      deliveryId: `poll-comment-${comment.id}`,
      body: "please fix",
      labels: [LABEL],
      itemState: "open",
      commentId: String(comment.id),
      commentKind: "comment",
      occurredAt: comment.created_at,
    });
    expect((await s.cycle()).items).toEqual([]);
  });

  it("costs three conditional requests per repository, all 304, in an idle cycle", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    s.gh.addComment(REPO, issue, { user: "alice", body: "hello" });
    await s.settle();

    const used = s.gh.rateLimitUsed();
    const requests = await s.requestsOf(() => s.cycle());
    expect(requests.map((request) => [request.path, request.status, request.ifNoneMatch !== undefined])).toEqual([
      [`/repos/${REPO}/issues`, 304, true],
      [`/repos/${REPO}/issues/comments`, 304, true],
      [`/repos/${REPO}/pulls/comments`, 304, true],
    ]);
    expect(s.gh.rateLimitUsed()).toBe(used);

    // After a change, the cycle that reads it pays; the one after is free again.
    s.gh.addComment(REPO, issue, { user: "alice", body: "one more" });
    expect((await s.cycle()).items).toHaveLength(1);
    expect((await s.requestsOf(() => s.cycle())).map((request) => request.status)).toEqual([304, 304, 304]);
  });

  it("does not take an edited old comment for a new one", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const old = s.gh.addComment(REPO, issue, { user: "alice", body: "first words" });
    await s.settle();
    s.gh.advance(5);
    s.gh.editComment(REPO, old.id, "second thoughts");
    expect((await s.cycle()).items).toEqual([]);
  });

  it("delivers every comment of one second once, across cycles and across first sight", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    await startOfSecond();
    const before = s.gh.addComment(REPO, issue, { user: "alice", body: "before first sight" });
    await s.cycle();
    const a = s.gh.addComment(REPO, issue, { user: "alice", body: "A" });
    const first = await s.cycle();
    const b = s.gh.addComment(REPO, issue, { user: "alice", body: "B" });
    const second = await s.cycle();
    const third = await s.cycle();
    // The point of the test: all three share one second.
    expect(new Set([before.created_at, a.created_at, b.created_at]).size).toBe(1);
    expect(first.items.map((item) => item.id)).toEqual([`comment-${a.id}`]);
    expect(second.items.map((item) => item.id)).toEqual([`comment-${b.id}`]);
    expect(third.items).toEqual([]);
  });

  it("hands out a review and a review comment on a PR that closes a labelled issue, with both work items", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const pr = s.gh.addPullRequest(REPO, { title: "the fix", body: `Fixes #${issue}`, user: "bob", head: `issue-${issue}` });
    await s.settle();

    // A review shows through the PR's updated_at, which must move (see the feed on reviews).
    s.gh.advance(1);
    const review = s.gh.addReview(REPO, pr, { user: "alice", body: "please rename", state: "CHANGES_REQUESTED" });
    const reviewed = await s.cycle();
    expect(summary(reviewed)).toEqual([[`review-${review.id}`, "reviewed", s.ref(pr), "alice"]]);
    expect(reviewed.items[0]?.event.workItems.map((item) => item.ref)).toEqual([s.ref(issue), s.ref(pr)]);
    expect(reviewed.items[0]?.event).toMatchObject({
      deliveryId: `poll-review-${review.id}`,
      body: "please rename",
      reviewState: "changes_requested",
      pullRequest: { ref: s.ref(pr), headBranch: `issue-${issue}`, headInRepository: true },
    });

    const remark = s.gh.addReviewComment(REPO, pr, { user: "alice", body: "typo here", path: "src/a.ts", line: 3 });
    const conversation = s.gh.addComment(REPO, pr, { user: "alice", body: "and on the PR" });
    const batch = await s.cycle();
    expect(summary(batch)).toEqual([
      [`comment-${conversation.id}`, "commented", s.ref(pr), "alice"],
      [`review-comment-${remark.id}`, "review_commented", s.ref(pr), "alice"],
    ]);
    for (const item of batch.items) expect(item.event.workItems.map((work) => work.ref)).toEqual([s.ref(issue), s.ref(pr)]);
    expect(batch.items[1]?.event).toMatchObject({ deliveryId: `poll-review-comment-${remark.id}`, commentKind: "review_comment" });
    expect((await s.cycle()).items).toEqual([]);
  });

  it("hands out the closing of an item with a live session, and only of such items", async () => {
    const s = await setup();
    const live = s.gh.addIssue(REPO, { title: "has a session", user: "alice" });
    const other = s.gh.addIssue(REPO, { title: "no session", user: "alice", labels: [LABEL] });
    s.watched.add(s.ref(live));
    await s.settle();

    s.gh.closeItem(REPO, live);
    s.gh.closeItem(REPO, other);
    const batch = await s.cycle();
    const closedAt = s.gh.item(REPO, live).closed_at;
    expect(summary(batch)).toEqual([[`closed-${s.ref(live)}-${closedAt}`, "closed", s.ref(live), null]]);
    expect(batch.items[0]?.event).toMatchObject({ deliveryId: `poll-closed-${s.ref(live)}-${closedAt}`, itemState: "closed" });
    expect((await s.cycle()).items).toEqual([]);
  });

  it("hands out the merge of a PR that closes a live session's item, naming the merger, and no other PR's closing", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "has a session", user: "alice" });
    const idle = s.gh.addIssue(REPO, { title: "no session", user: "alice" });
    const pr = s.gh.addPullRequest(REPO, { title: "the fix", body: `Fixes #${issue}`, user: "bob", head: "fix" });
    const unrelated = s.gh.addPullRequest(REPO, { title: "another", body: `Fixes #${idle}`, user: "bob", head: "other" });
    s.watched.add(s.ref(issue));
    await s.settle();

    s.gh.closeItem(REPO, pr, { merged: true, actor: "carol" });
    s.gh.closeItem(REPO, unrelated, { actor: "carol" });
    const batch = await s.cycle();
    const closedAt = s.gh.pull(REPO, pr).closed_at;
    expect(summary(batch)).toEqual([[`closed-${s.ref(pr)}-${closedAt}`, "closed", s.ref(pr), "carol"]]);
    expect(batch.items[0]?.event.workItems.map((item) => item.ref)).toEqual([s.ref(issue), s.ref(pr)]);
    expect(batch.items[0]?.event).toMatchObject({
      deliveryId: `poll-closed-${s.ref(pr)}-${closedAt}`,
      pullRequest: { ref: s.ref(pr), merged: true },
      contentKey: `github:${s.gh.host}/${REPO}:closed:pull_request:${pr}:${closedAt}`,
    });
    expect((await s.cycle()).items).toEqual([]);
  });

  it("hands out a bound PR closed without merging, naming no one: the listing does not say who closed it", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "has a session", user: "alice" });
    const pr = s.gh.addPullRequest(REPO, { title: "abandoned", user: "bob", head: "try" });
    // Bound with `sessions link-pr`: the runtime's isWatched says so for the PR itself.
    s.watched.add(s.ref(issue));
    s.watched.add(s.ref(pr));
    await s.settle();

    s.gh.closeItem(REPO, pr, { actor: "carol" });
    const batch = await s.cycle();
    expect(summary(batch)).toEqual([[`closed-${s.ref(pr)}-${s.gh.pull(REPO, pr).closed_at}`, "closed", s.ref(pr), null]]);
    expect(batch.items[0]?.event.pullRequest).toMatchObject({ ref: s.ref(pr), merged: false });
  });

  it("hands out a label once, with who added it", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "not yet", user: "bob" });
    await s.settle();

    s.gh.addLabel(REPO, issue, LABEL, { actor: "alice" });
    const batch = await s.cycle();
    const updatedAt = s.gh.item(REPO, issue).updated_at;
    expect(summary(batch)).toEqual([[`labeled-${s.ref(issue)}-${updatedAt}`, "labeled", s.ref(issue), "alice"]]);
    expect(batch.items[0]?.event).toMatchObject({ deliveryId: `poll-labeled-${s.ref(issue)}-${updatedAt}`, label: LABEL });

    // Still labelled: a later change is not a second `labeled`.
    s.gh.advance(2);
    const comment = s.gh.addComment(REPO, issue, { user: "alice", body: "go" });
    expect((await s.cycle()).items.map((item) => item.id)).toEqual([`comment-${comment.id}`]);

    // Taken off and put back: that is a new arming.
    s.gh.advance(2);
    s.gh.removeLabel(REPO, issue, LABEL);
    expect((await s.cycle()).items).toEqual([]);
    s.gh.advance(2);
    s.gh.addLabel(REPO, issue, LABEL, { actor: "carol" });
    expect(summary(await s.cycle()).map(([, kind, , actor]) => [kind, actor])).toEqual([["labeled", "carol"]]);
  });

  it("carries each review's state, as GitHub's REST answer spells it, in the webhook's vocabulary", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const pr = s.gh.addPullRequest(REPO, { title: "the fix", body: `Fixes #${issue}`, user: "bob", head: `issue-${issue}` });
    await s.settle();

    s.gh.advance(1);
    const approved = s.gh.addReview(REPO, pr, { user: "alice", body: "", state: "APPROVED" });
    const changes = s.gh.addReview(REPO, pr, { user: "carol", body: "not yet", state: "CHANGES_REQUESTED" });
    const remark = s.gh.addReview(REPO, pr, { user: "dave", body: "a thought", state: "COMMENTED" });
    s.gh.addReview(REPO, pr, { user: "erin", body: "draft", state: "PENDING" });
    const batch = await s.cycle();
    expect(batch.items.map(({ id, event }) => [id, event.kind, event.reviewState])).toEqual([
      [`review-${approved.id}`, "reviewed", "approved"],
      [`review-${changes.id}`, "reviewed", "changes_requested"],
      [`review-${remark.id}`, "reviewed", "commented"],
    ]);
  });

  it("hands out nothing about items nobody watches, and reads no reviews for them", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "unlabelled", user: "alice" });
    const pr = s.gh.addPullRequest(REPO, { title: "unrelated", body: "Fixes #999", user: "bob", head: "x" });
    await s.settle();

    s.gh.addComment(REPO, issue, { user: "alice", body: "hello?" });
    s.gh.addReview(REPO, pr, { user: "alice", body: "lgtm", state: "APPROVED" });
    s.gh.addReviewComment(REPO, pr, { user: "alice", body: "nit" });
    s.gh.closeItem(REPO, issue);
    const requests = await s.requestsOf(async () => expect((await s.cycle()).items).toEqual([]));
    expect(requests.some((request) => request.path.endsWith("/reviews"))).toBe(false);
  });

  it("watches every item when there is no label", async () => {
    const s = await setup({ label: null });
    const issue = s.gh.addIssue(REPO, { title: "anything", user: "alice" });
    await s.settle();
    const comment = s.gh.addComment(REPO, issue, { user: "alice", body: "hi" });
    expect((await s.cycle()).items.map((item) => item.id)).toEqual([`comment-${comment.id}`]);
  });

  it("hands out the same changes again when read again from the same cursor", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const baseline = await s.feed.read(undefined);
    const settled = await s.feed.read(baseline.cursor);
    const comment = s.gh.addComment(REPO, issue, { user: "alice", body: "not settled the first time" });
    const once = await s.feed.read(settled.cursor);
    const again = await s.feed.read(settled.cursor);
    expect(once.items.map((item) => item.id)).toEqual([`comment-${comment.id}`]);
    expect(again.items).toEqual(once.items);
  });

  it("keeps a failing repository's cursor while the others progress", async () => {
    const s = await setup({ repos: [REPO, "octo/later"] });
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const first = await s.cycle();
    expect(first.errors).toEqual([expect.stringMatching(/^octo\/later: .*not found/)]);
    expect(Object.keys(JSON.parse(first.cursor).repos)).toEqual([REPO]);

    const comment = s.gh.addComment(REPO, issue, { user: "alice", body: "still heard" });
    const second = await s.cycle();
    expect(second.items.map((item) => item.id)).toEqual([`comment-${comment.id}`]);
    expect(second.errors).toHaveLength(1);

    // Once it can be read, the repository is taken as read from then on, like a new source.
    s.gh.addRepo("octo/later");
    const late = s.gh.addIssue("octo/later", { title: "armed", user: "alice", labels: [LABEL] });
    s.gh.addComment("octo/later", late, { user: "alice", body: "before it was first seen" });
    const third = await s.cycle();
    expect(third.items).toEqual([]);
    expect(third.errors).toBeUndefined();
    const lateComment = s.gh.addComment("octo/later", late, { user: "alice", body: "after" });
    expect((await s.cycle()).items.map((item) => item.id)).toEqual([`comment-${lateComment.id}`]);

    // A server error on one repository's listing holds that one back for a cycle, not the other.
    const comments = [s.gh.addComment(REPO, issue, { user: "alice", body: "one" }), s.gh.addComment("octo/later", late, { user: "alice", body: "two" })];
    s.gh.failNext(500);
    const partial = await s.cycle();
    expect(partial.items.map((item) => item.id)).toEqual([`comment-${comments[1]?.id}`]);
    expect(partial.errors).toEqual([expect.stringMatching(/^octo\/repo: /)]);
    expect((await s.cycle()).items.map((item) => item.id)).toEqual([`comment-${comments[0]?.id}`]);
  });

  it("passes X-Poll-Interval on as the batch's notBefore", async () => {
    const clock = Date.parse("2026-01-01T00:00:00Z");
    const s = await setup({ now: () => new Date(clock) });
    s.gh.pollInterval = 30;
    expect(await s.cycle()).toMatchObject({ notBefore: new Date(clock + 30_000), notBeforeReason: "poll-interval" });
  });

  it("throws a rate limit met before anything was read", async () => {
    const s = await setup({ repos: [REPO, "octo/other"], addRepos: [REPO, "octo/other"] });
    await s.settle();

    s.gh.rateLimitNext({ resetInSeconds: 30 });
    const error = await s.cycle().catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: "GitHubRateLimitError", resetAt: expect.any(Date), secondary: false });
  });

  it("stops at a rate limit met after a repository was read, keeping that one's progress", async () => {
    const s = await setup({ repos: [REPO, "octo/other"], addRepos: [REPO, "octo/other"] });
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const resetAt = new Date(Date.now() + 60_000);
    let limitOther = true;
    const reader: GitHubReader = {
      host: s.client.host,
      list: (route, params, options) =>
        limitOther && params.repo === "other"
          ? Promise.reject(Object.assign(new Error("limited"), { resetAt, secondary: true }))
          : s.client.list(route, params, options),
      get: (route, params, options) => s.client.get(route, params, options),
    };
    const feed = new GitHubFeed({ key: "github:octo/other,octo/repo", client: reader, repos: [REPO, "octo/other"], label: LABEL, isWatched: () => false });
    const first = await feed.read(undefined);
    expect(first).toMatchObject({ items: [], notBefore: resetAt, notBeforeReason: "secondary-limit" });
    expect(Object.keys(JSON.parse(first.cursor).repos)).toEqual([REPO]);
    limitOther = false;
    const baseline = await feed.read(first.cursor);
    expect(baseline.items).toEqual([]);
    expect(Object.keys(JSON.parse(baseline.cursor).repos)).toEqual([REPO, "octo/other"]);
    const comment = s.gh.addComment(REPO, issue, { user: "alice", body: "heard despite the limit" });
    s.gh.addComment(REPO, issue, { user: "alice", body: "padding" });
    limitOther = true;
    const batch = await feed.read(baseline.cursor);
    expect(batch.items.map((item) => item.id)).toContain(`comment-${comment.id}`);
    expect(batch).toMatchObject({ notBefore: resetAt, notBeforeReason: "secondary-limit" });
    expect(JSON.parse(batch.cursor).repos["octo/other"]).toEqual(JSON.parse(baseline.cursor).repos["octo/other"]);
  });
});

// ------------------------------------------------------------------------------------------------
// Changes the feed could lose, hand out twice, or hand out with an actor it cannot vouch for

describe("GitHubFeed: who added the label", () => {
  it("hands out no `labeled` without an actor when the item's events do not show the labelling", async () => {
    // The issue events listing can lag behind the label (or the label was renamed since): the
    // feed then does not know who armed the item, and an event without an actor passes
    // authorization, so it must not become one.
    const s = await setup({
      reader: (client) => ({
        host: client.host,
        get: (route, params, options) => client.get(route, params, options),
        list: async (route: string, params: Readonly<Record<string, string | number>>, options?: { etag?: string; maxPages?: number }) => {
          const result = await client.list(route, params, options);
          if (!route.endsWith("/events") || result.notModified) return result;
          return { ...result, items: result.items.filter((event) => (event as { event?: string }).event !== "labeled") };
        },
      }),
    });
    const issue = s.gh.addIssue(REPO, { title: "not yet", user: "bob" });
    await s.settle();
    s.gh.advance(1);
    s.gh.addLabel(REPO, issue, LABEL, { actor: "mallory" });
    const batch = await s.cycle();
    // Not in anyone's name: no `labeled` at all (an actor-less one would pass authorization).
    expect(batch.items.filter((item) => item.event.kind === "labeled")).toEqual([]);
    expect(s.events.events.filter((event) => event.type === "poll.provider_error").map((event) => event.fields)).toEqual([
      { poll_source: s.feed.key, error: expect.stringContaining(`${REPO}#${issue}`) },
    ]);
    // Read once: the next cycles neither ask again nor hand it out.
    s.gh.advance(1);
    s.gh.addComment(REPO, issue, { user: "mallory", body: "anyone?" });
    expect((await s.cycle()).items.map((item) => item.event.kind)).toEqual(["commented"]);
  });

  it("does not credit an older labelling when the events listing is longer than the pages read", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "busy", user: "bob" });
    // More than ten pages of events, all alice's: the newest labelling, mallory's, is beyond them.
    for (let i = 0; i < 520; i++) {
      s.gh.addLabel(REPO, issue, LABEL, { actor: "alice" });
      s.gh.removeLabel(REPO, issue, LABEL, { actor: "alice" });
    }
    await s.settle();
    s.gh.advance(1);
    s.gh.addLabel(REPO, issue, LABEL, { actor: "mallory" });
    const batch = await s.cycle();
    const actors = batch.items.filter((item) => item.event.kind === "labeled").map((item) => item.event.actor);
    expect(actors).not.toContain("alice");
    expect(actors).not.toContain(null);
  });

  it("does not take the reopening of a labelled item for a new labelling by its first labeller", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "bob" });
    s.gh.addLabel(REPO, issue, LABEL, { actor: "alice" });
    await s.settle();

    s.gh.advance(1);
    s.gh.closeItem(REPO, issue, { actor: "alice" });
    expect((await s.cycle()).items).toEqual([]);
    s.gh.advance(1);
    s.gh.reopenItem(REPO, issue, { actor: "mallory" });
    // Nobody labelled anything: alice's labelling of long ago must not arm it again in her name.
    expect((await s.cycle()).items).toEqual([]);

    // A real new labelling after the reopening is one.
    s.gh.advance(1);
    s.gh.removeLabel(REPO, issue, LABEL, { actor: "alice" });
    await s.cycle();
    s.gh.advance(1);
    s.gh.addLabel(REPO, issue, LABEL, { actor: "carol" });
    expect((await s.cycle()).items.map((item) => [item.event.kind, item.event.actor])).toEqual([["labeled", "carol"]]);
  });

  it("shows a comment the labels its item had when it was made: a label put on later does not arm it", async () => {
    // A start given while the item was not armed is refused on the webhook path, whose payload
    // carries the labels of that moment; the poller, reading later, must not see the later label.
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "not yet", user: "bob", labels: ["bug"] });
    await s.settle();
    s.gh.advance(1);
    const early = s.gh.addComment(REPO, issue, { user: "alice", body: "the-loop:start-execution" });
    s.gh.advance(2);
    s.gh.addLabel(REPO, issue, LABEL, { actor: "alice" });
    s.gh.advance(2);
    const late = s.gh.addComment(REPO, issue, { user: "alice", body: "the-loop:start-execution" });
    const from = s.cursor();
    const batch = await s.cycle();
    const seen = batch.items.map((item) => [item.id, item.event.kind, item.event.labels]);
    expect(seen).toEqual([
      [`comment-${early.id}`, "commented", ["bug"]],
      [expect.stringMatching(/^labeled-/), "labeled", ["bug", LABEL]],
      [`comment-${late.id}`, "commented", ["bug", LABEL]],
    ]);
    // Read again from the same cursor (nothing cached was changed), and in the next cycle.
    expect((await s.feed.read(from)).items.map((item) => [item.id, item.event.kind, item.event.labels])).toEqual(seen);
    s.gh.advance(1);
    const next = s.gh.addComment(REPO, issue, { user: "alice", body: "and now?" });
    expect((await s.cycle()).items.map((item) => [item.id, item.event.labels])).toEqual([[`comment-${next.id}`, ["bug", LABEL]]]);
  });

  it("shows a review and a review comment the labels their pull request had when they were made", async () => {
    const s = await setup();
    const pr = s.gh.addPullRequest(REPO, { title: "a fix", body: "no issue", user: "bob", head: "fix" });
    await s.settle();
    s.gh.advance(1);
    const review = s.gh.addReview(REPO, pr, { user: "alice", body: "the-loop:start-execution", state: "COMMENTED" });
    const remark = s.gh.addReviewComment(REPO, pr, { user: "alice", body: "the-loop:start-execution", path: "src/a.ts", line: 1 });
    s.gh.advance(2);
    s.gh.addLabel(REPO, pr, LABEL, { actor: "alice" });
    const batch = await s.cycle();
    expect(batch.items.map((item) => [item.id, item.event.labels])).toEqual([
      [`review-${review.id}`, []],
      [`review-comment-${remark.id}`, []],
      [expect.stringMatching(/^labeled-/), [LABEL]],
    ]);
  });

  it("gives a labelling the same id when it is read again from the same cursor after the item changed", async () => {
    // The poller reads from an unmoved cursor again while a batch is not settled (a failure, a
    // restart): a settled `labeled` must be recognised by its id then, not handed out again.
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "not yet", user: "bob" });
    await s.settle();
    const from = s.cursor();
    s.gh.advance(1);
    s.gh.addLabel(REPO, issue, LABEL, { actor: "alice" });
    const first = await s.feed.read(from);
    s.gh.advance(2);
    const comment = s.gh.addComment(REPO, issue, { user: "alice", body: "go" });
    const again = await s.feed.read(from);
    const labeled = first.items.filter((item) => item.event.kind === "labeled").map((item) => item.id);
    expect(labeled).toHaveLength(1);
    expect(ids(again)).toEqual([...labeled, `comment-${comment.id}`]);
  });
});

describe("GitHubFeed: changes it must not lose", () => {
  it("hands out the closing of a watched item talked about after another item closed", async () => {
    // The listing is in order of last update, not of closing: the other item's later closing
    // comes first and must not hide this one's.
    const s = await setup();
    const live = s.gh.addIssue(REPO, { title: "has a session", user: "alice" });
    const other = s.gh.addIssue(REPO, { title: "someone else's", user: "bob" });
    s.watched.add(s.ref(live));
    await s.settle();

    s.gh.advance(1);
    s.gh.closeItem(REPO, live);
    s.gh.advance(1);
    s.gh.closeItem(REPO, other);
    s.gh.advance(1);
    const thanks = s.gh.addComment(REPO, live, { user: "bob", body: "thanks for closing it" });
    expect(ids(await s.cycle())).toEqual([`closed-${s.ref(live)}-${s.gh.item(REPO, live).closed_at}`, `comment-${thanks.id}`]);
    expect((await s.cycle()).items).toEqual([]);
  });

  it("reads the reviews of a pull request that closes an item armed later in the same listing", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "the bug", user: "bob" });
    const pr = s.gh.addPullRequest(REPO, { title: "the fix", body: `Fixes #${issue}`, user: "bob", head: "fix" });
    await s.settle();

    // Between two cycles: the issue is armed, the PR reviewed, then the issue talked about, so
    // the listing (oldest update first) has the PR before the issue.
    s.gh.advance(1);
    s.gh.addLabel(REPO, issue, LABEL, { actor: "alice" });
    s.gh.advance(1);
    const review = s.gh.addReview(REPO, pr, { user: "alice", body: "rename it", state: "CHANGES_REQUESTED" });
    s.gh.advance(1);
    s.gh.addComment(REPO, issue, { user: "bob", body: "thanks" });
    const batch = await s.cycle();
    expect(ids(batch)).toContain(`review-${review.id}`);
  });

  it("hands out a comment written meanwhile on an item armed between the item listing and the comment listing", async () => {
    let during: (() => void) | undefined;
    const s = await setup({
      reader: (client) => ({
        host: client.host,
        get: (route, params, options) => client.get(route, params, options),
        list: (route, params, options) => {
          if (route.endsWith("/issues/comments") && during) {
            during();
            during = undefined;
          }
          return client.list(route, params, options);
        },
      }),
    });
    const issue = s.gh.addIssue(REPO, { title: "the bug", user: "bob" });
    await s.settle();
    s.gh.advance(1);
    s.gh.addComment(REPO, issue, { user: "bob", body: "is anyone on this?" });
    let go: { id: number } | undefined;
    during = () => {
      s.gh.advance(1);
      s.gh.addLabel(REPO, issue, LABEL, { actor: "alice" });
      go = s.gh.addComment(REPO, issue, { user: "alice", body: "go" });
    };
    const batch = await s.cycle();
    expect(ids(batch)).toContain(`comment-${go?.id}`);
  });

  it("hands out a review comment written meanwhile on a pull request that came to close a live session's item", async () => {
    let during: (() => Promise<void>) | undefined;
    const s = await setup({
      reader: (client) => ({
        host: client.host,
        get: (route, params, options) => client.get(route, params, options),
        list: async (route: string, params: Readonly<Record<string, string | number>>, options?: { etag?: string; maxPages?: number }) => {
          if (route.endsWith("/pulls/comments") && during) {
            const run = during;
            during = undefined;
            await run();
          }
          return client.list(route, params, options);
        },
      }),
    });
    const issue = s.gh.addIssue(REPO, { title: "the bug", user: "bob" });
    s.watched.add(s.ref(issue));
    const pr = s.gh.addPullRequest(REPO, { title: "a fix", body: "work in progress", user: "bob", head: "wip" });
    await s.settle();
    s.gh.advance(1);
    s.gh.addComment(REPO, pr, { user: "bob", body: "pushed something" });
    let remark: { id: number } | undefined;
    during = async () => {
      s.gh.advance(1);
      await s.client.request("PATCH /repos/{owner}/{repo}/issues/{issue_number}", { owner: "octo", repo: "repo", issue_number: pr, body: `Fixes #${issue}` });
      remark = s.gh.addReviewComment(REPO, pr, { user: "alice", body: "this line is wrong" });
    };
    const batch = await s.cycle();
    expect(ids(batch)).toContain(`review-comment-${remark?.id}`);
  });

  it("after a restart, knows a pull request closing an armed item of another repository of the source", async () => {
    const s = await setup({ repos: ["octo/web", REPO] });
    s.gh.addRepo("octo/web");
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const pr = s.gh.addPullRequest("octo/web", { title: "the fix", body: `Fixes ${REPO}#${issue}`, user: "bob", head: "fix" });
    await s.settle();

    // A new process: the same cursor, a new feed.
    const restarted = new GitHubFeed({ key: s.feed.key, client: s.client, repos: ["octo/web", REPO], label: LABEL, isWatched: () => false });
    s.gh.advance(1);
    const review = s.gh.addReview("octo/web", pr, { user: "alice", body: "almost" });
    const remark = s.gh.addReviewComment("octo/web", pr, { user: "alice", body: "this line" });
    expect(ids(await restarted.read(s.cursor()))).toEqual([`review-${review.id}`, `review-comment-${remark.id}`]);
  });

  it("hands out a new comment after a listing longer than one page whose first page did not change", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const noise = s.gh.addIssue(REPO, { title: "busy", user: "bob" });
    await s.settle();
    s.gh.advance(1);
    // A bot writes more than a page of comments within one second.
    await startOfSecond();
    for (let i = 0; i < 120; i++) s.gh.addComment(REPO, noise, { user: "bot", body: `finding ${i}` });
    await s.settle();

    s.gh.advance(2);
    const comment = s.gh.addComment(REPO, issue, { user: "alice", body: "please look" });
    const seen = await s.idsOver(2);
    expect(seen).toContain(`comment-${comment.id}`);
  });

  it("hands out a new review of a pull request with more than a page of reviews", async () => {
    const s = await setup();
    const pr = s.gh.addPullRequest(REPO, { title: "big", user: "bob", head: "big", labels: [LABEL] });
    for (let i = 0; i < 105; i++) s.gh.addReview(REPO, pr, { user: "bot", body: `pass ${i}` });
    await s.cycle();
    s.gh.advance(1);
    s.gh.addReview(REPO, pr, { user: "bot", body: "one more" });
    await s.cycle();

    s.gh.advance(1);
    const review = s.gh.addReview(REPO, pr, { user: "alice", body: "now this" });
    expect(ids(await s.cycle())).toContain(`review-${review.id}`);
  });

  // More than ten pages through the fake GitHub: seconds on a loaded machine, past the unit default.
  it("hands out a comment edited before it was read when the listing was cut at its page bound", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const noise = s.gh.addIssue(REPO, { title: "busy", user: "bob" });
    await s.settle();

    // A backlog (the daemon was stopped): a request, then more than ten pages of other talk,
    // then the request's typo fixed.
    s.gh.advance(1);
    const request = s.gh.addComment(REPO, issue, { user: "alice", body: "plesae fix" });
    for (let i = 0; i < 1_100; i++) {
      if (i % 100 === 0) s.gh.advance(1);
      s.gh.addComment(REPO, noise, { user: "bob", body: `chatter ${i}` });
    }
    s.gh.advance(1);
    s.gh.editComment(REPO, request.id, "please fix");

    const seen = await s.idsOver(4);
    expect(seen).toEqual([`comment-${request.id}`]);
  }, 20_000);

  it("hands out the closing of a watched item updated again beyond a cut listing", async () => {
    const s = await setup();
    const live = s.gh.addIssue(REPO, { title: "has a session", user: "alice" });
    s.watched.add(s.ref(live));
    await s.settle();

    s.gh.advance(1);
    s.gh.closeItem(REPO, live);
    // Closings of items nobody watches, later than the one that matters.
    for (let i = 0; i < 1_050; i++) {
      if (i % 100 === 0) s.gh.advance(1);
      s.gh.closeItem(REPO, s.gh.addIssue(REPO, { title: `noise ${i}`, user: "bob" }));
    }
    s.gh.advance(1);
    s.gh.addComment(REPO, live, { user: "bob", body: "closing remark" });

    const seen = await s.idsOver(4);
    expect(seen.filter((id) => id.startsWith("closed-"))).toEqual([`closed-${s.ref(live)}-${s.gh.item(REPO, live).closed_at}`]);
  });

  it("hands out a review of a new pull request updated again beyond a cut listing", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    await s.settle();

    s.gh.advance(1);
    const pr = s.gh.addPullRequest(REPO, { title: "the fix", body: `Fixes #${issue}`, user: "bob", head: "fix" });
    const review = s.gh.addReview(REPO, pr, { user: "alice", body: "looks wrong" });
    for (let i = 0; i < 1_050; i++) {
      if (i % 100 === 0) s.gh.advance(1);
      s.gh.addIssue(REPO, { title: `noise ${i}`, user: "bob" });
    }
    s.gh.advance(1);
    s.gh.addComment(REPO, pr, { user: "bob", body: "pushed" });

    const seen = await s.idsOver(4);
    expect(seen).toContain(`review-${review.id}`);
  });
});

// ------------------------------------------------------------------------------------------------
// With the poller

class RecordingHandler implements EventHandler {
  readonly events: InboundEvent[] = [];
  handle(event: InboundEvent): Promise<HandleResult> {
    this.events.push(event);
    return Promise.resolve({ settled: true });
  }
}

function emitted<T extends EventType>(events: MemoryEventSink, type: T): EventFields<T>[] {
  return events.events.filter((event) => event.type === type).map((event) => event.fields as EventFields<T>);
}

describe("GitHubFeed under the poller", () => {
  async function polled(options: { intervalMs?: number; now?: () => Date } = {}) {
    const s = await setup(options.now ? { now: options.now } : {});
    const dir = await tempDir();
    const events = new MemoryEventSink();
    const handler = new RecordingHandler();
    const poller = new Poller({
      sources: [s.feed],
      stateFile: join(dir, "poll-state.json"),
      statusFile: join(dir, "poll-status.json"),
      handler,
      events,
      intervalMs: options.intervalMs ?? 50,
      ...(options.now ? { now: options.now } : {}),
    });
    return { ...s, events, handler, poller };
  }

  it("waits out a rate limit until its reset, then delivers what came meanwhile", async () => {
    const p = await polled({ intervalMs: 50 });
    const issue = p.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const controller = new AbortController();
    const running = p.poller.run(controller.signal);
    try {
      await waitFor("a baseline and a cycle", () => (emitted(p.events, "poll.cycle").length >= 2 ? true : undefined));
      p.gh.rateLimitNext({ resetInSeconds: 2 });
      const comment = p.gh.addComment(REPO, issue, { user: "alice", body: "during the limit" });
      const limited = await waitFor("poll.rate_limited", () => emitted(p.events, "poll.rate_limited")[0]);
      expect(limited).toMatchObject({ poll_source: p.feed.key, reason: "rate-limit" });
      const resumeAt = Date.parse(limited.resume_at);

      const delivered = await waitFor("the comment delivered", () => p.handler.events[0], { timeoutMs: 15_000 });
      expect(delivered.deliveryId).toBe(`poll-comment-${comment.id}`);
      expect(Date.now()).toBeGreaterThanOrEqual(resumeAt);
      // One refused request: the poller did not ask again before the reset.
      expect(p.gh.requests.filter((request) => request.status === 403)).toHaveLength(1);
      expect(emitted(p.events, "poll.provider_error")).toEqual([]);
    } finally {
      controller.abort();
      await running;
    }
  });

  it("reports a secondary limit as such", async () => {
    const p = await polled();
    await p.poller.runOnce();
    p.gh.rateLimitNext({ resetInSeconds: 60, secondary: true });
    await p.poller.runOnce();
    expect(emitted(p.events, "poll.rate_limited")).toEqual([{ poll_source: p.feed.key, resume_at: expect.any(String), reason: "secondary-limit" }]);
    // Deferred: the next cycle does not ask GitHub at all.
    p.gh.clearRequests();
    await p.poller.runOnce();
    expect(p.gh.requests).toEqual([]);
  });

  it("respects X-Poll-Interval", async () => {
    let clock = Date.now();
    const p = await polled({ now: () => new Date(clock) });
    p.gh.pollInterval = 5;
    await p.poller.runOnce();
    expect(emitted(p.events, "poll.rate_limited")).toEqual([
      { poll_source: p.feed.key, resume_at: new Date(clock + 5_000).toISOString(), reason: "poll-interval" },
    ]);
    p.gh.clearRequests();
    clock += 4_000;
    await p.poller.runOnce();
    expect(p.gh.requests).toEqual([]);
    clock += 1_000;
    await p.poller.runOnce();
    expect(p.gh.requests.length).toBeGreaterThan(0);
    // The same interval again is not news.
    expect(emitted(p.events, "poll.rate_limited")).toHaveLength(1);
  });
});
