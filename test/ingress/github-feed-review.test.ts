import { afterEach, describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import type { SourceBatch } from "../../src/ingress/poller.js";
import { GitHubClient } from "../../src/trackers/github/client.js";
import { GitHubFeed } from "../../src/trackers/github/feed.js";
import type { GitHubFeedOptions, GitHubReader } from "../../src/trackers/github/feed.js";
import { FakeGitHub } from "../support/fake-github.js";
import { waitFor } from "../support/wait.js";

/**
 * Cases found in review of the GitHub poll path: each is a change the feed lost, handed out
 * twice, or handed out with an actor it could not vouch for.
 */

const TOKEN = "ghp_feedReviewToken_neverPrinted_71c3";
const LABEL = "the-loop";
const REPO = "octo/repo";
const fakes: FakeGitHub[] = [];

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.stop()));
});

interface Setup {
  readonly gh: FakeGitHub;
  readonly client: GitHubClient;
  readonly feed: GitHubFeed;
  readonly watched: Set<string>;
  readonly events: MemoryEventSink;
  ref(number: number): string;
  /** One read from the cursor of the previous one (the first is first sight). */
  cycle(): Promise<SourceBatch>;
  /** The cursor the next cycle reads from. */
  cursor(): string | undefined;
}

async function setup(options: Partial<GitHubFeedOptions> & { reader?: (client: GitHubClient, gh: FakeGitHub) => GitHubReader } = {}): Promise<Setup> {
  const gh = await FakeGitHub.start({ token: TOKEN });
  fakes.push(gh);
  gh.addRepo(REPO);
  const client = new GitHubClient({
    apiUrl: gh.apiUrl,
    tokens: { token: () => Promise.resolve(TOKEN) },
    spaceWrites: false,
    retries: 0,
    rateLimitWaitSeconds: 0,
  });
  const watched = new Set<string>();
  const events = new MemoryEventSink();
  const { reader, ...rest } = options;
  const feed = new GitHubFeed({
    key: `github:${REPO}`,
    client: reader ? reader(client, gh) : client,
    repos: [REPO],
    label: LABEL,
    isWatched: (ref) => watched.has(ref),
    events,
    ...rest,
  });
  let cursor: string | undefined;
  return {
    gh,
    client,
    feed,
    watched,
    events,
    ref: (number) => `github:${gh.host}/${REPO}#${number}`,
    async cycle() {
      const batch = await feed.read(cursor);
      cursor = batch.cursor;
      return batch;
    },
    cursor: () => cursor,
  };
}

function ids(batch: SourceBatch): string[] {
  return batch.items.map((item) => item.id);
}

/** Waits (bounded) until a fresh second has just begun, so what follows happens within one second. */
async function startOfSecond(): Promise<void> {
  await waitFor("the start of a second", () => (Date.now() % 1000 < 50 ? true : undefined), { timeoutMs: 3_000, intervalMs: 2 });
}

describe("GitHubFeed review: who added the label", () => {
  it("hands out no `labeled` without an actor when the item's events do not show the labelling", async () => {
    // The issue events listing can lag behind the label (or the label was renamed since): the
    // feed then does not know who armed the item, and an event without an actor passes
    // authorization, so it must not become one.
    const s = await setup({
      reader: (client) => ({
        host: client.host,
        get: (route, params, options) => client.get(route, params, options),
        list: async <T>(route: string, params: Readonly<Record<string, string | number>>, options?: { etag?: string; maxPages?: number }) => {
          const result = await client.list<T>(route, params, options);
          if (!route.endsWith("/events") || result.notModified) return result;
          return { ...result, items: result.items.filter((event) => (event as { event?: string }).event !== "labeled") };
        },
      }),
    });
    const issue = s.gh.addIssue(REPO, { title: "not yet", user: "bob" });
    await s.cycle();
    await s.cycle();
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
    await s.cycle();
    await s.cycle();
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
    await s.cycle();
    await s.cycle();

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

  it("gives a labelling the same id when it is read again from the same cursor after the item changed", async () => {
    // The poller reads from an unmoved cursor again while a batch is not settled (a failure, a
    // restart): a settled `labeled` must be recognised by its id then, not handed out again.
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "not yet", user: "bob" });
    await s.cycle();
    await s.cycle();
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

describe("GitHubFeed review: changes that were lost", () => {
  it("hands out the closing of a watched item talked about after another item closed", async () => {
    // The listing is in order of last update, not of closing: the other item's later closing
    // comes first and must not hide this one's.
    const s = await setup();
    const live = s.gh.addIssue(REPO, { title: "has a session", user: "alice" });
    const other = s.gh.addIssue(REPO, { title: "someone else's", user: "bob" });
    s.watched.add(s.ref(live));
    await s.cycle();
    await s.cycle();

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
    await s.cycle();
    await s.cycle();

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
    await s.cycle();
    await s.cycle();
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
        list: async <T>(route: string, params: Readonly<Record<string, string | number>>, options?: { etag?: string; maxPages?: number }) => {
          if (route.endsWith("/pulls/comments") && during) {
            const run = during;
            during = undefined;
            await run();
          }
          return client.list<T>(route, params, options);
        },
      }),
    });
    const issue = s.gh.addIssue(REPO, { title: "the bug", user: "bob" });
    s.watched.add(s.ref(issue));
    const pr = s.gh.addPullRequest(REPO, { title: "a fix", body: "work in progress", user: "bob", head: "wip" });
    await s.cycle();
    await s.cycle();
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
    await s.cycle();
    await s.cycle();

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
    await s.cycle();
    await s.cycle();
    s.gh.advance(1);
    // A bot writes more than a page of comments within one second.
    await startOfSecond();
    for (let i = 0; i < 120; i++) s.gh.addComment(REPO, noise, { user: "bot", body: `finding ${i}` });
    await s.cycle();
    await s.cycle();

    s.gh.advance(2);
    const comment = s.gh.addComment(REPO, issue, { user: "alice", body: "please look" });
    const seen = [...ids(await s.cycle()), ...ids(await s.cycle())];
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

  it("hands out a comment edited before it was read when the listing was cut at its page bound", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const noise = s.gh.addIssue(REPO, { title: "busy", user: "bob" });
    await s.cycle();
    await s.cycle();

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

    const seen: string[] = [];
    for (let i = 0; i < 4; i++) seen.push(...ids(await s.cycle()));
    expect(seen).toEqual([`comment-${request.id}`]);
  });

  it("hands out the closing of a watched item updated again beyond a cut listing", async () => {
    const s = await setup();
    const live = s.gh.addIssue(REPO, { title: "has a session", user: "alice" });
    s.watched.add(s.ref(live));
    await s.cycle();
    await s.cycle();

    s.gh.advance(1);
    s.gh.closeItem(REPO, live);
    // Closings of items nobody watches, later than the one that matters.
    for (let i = 0; i < 1_050; i++) {
      if (i % 100 === 0) s.gh.advance(1);
      s.gh.closeItem(REPO, s.gh.addIssue(REPO, { title: `noise ${i}`, user: "bob" }));
    }
    s.gh.advance(1);
    s.gh.addComment(REPO, live, { user: "bob", body: "closing remark" });

    const seen: string[] = [];
    for (let i = 0; i < 4; i++) seen.push(...ids(await s.cycle()));
    expect(seen.filter((id) => id.startsWith("closed-"))).toEqual([`closed-${s.ref(live)}-${s.gh.item(REPO, live).closed_at}`]);
  });

  it("hands out a review of a new pull request updated again beyond a cut listing", async () => {
    const s = await setup();
    const issue = s.gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    await s.cycle();
    await s.cycle();

    s.gh.advance(1);
    const pr = s.gh.addPullRequest(REPO, { title: "the fix", body: `Fixes #${issue}`, user: "bob", head: "fix" });
    const review = s.gh.addReview(REPO, pr, { user: "alice", body: "looks wrong" });
    for (let i = 0; i < 1_050; i++) {
      if (i % 100 === 0) s.gh.advance(1);
      s.gh.addIssue(REPO, { title: `noise ${i}`, user: "bob" });
    }
    s.gh.advance(1);
    s.gh.addComment(REPO, pr, { user: "bob", body: "pushed" });

    const seen: string[] = [];
    for (let i = 0; i < 4; i++) seen.push(...ids(await s.cycle()));
    expect(seen).toContain(`review-${review.id}`);
  });
});
