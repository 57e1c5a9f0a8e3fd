import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";
import { jsonOf } from "../support/cli.js";
import { paneState } from "../support/e2e.js";
import { sendWebhook } from "../support/fake-github.js";
import { TOKEN, bareRepository, startWebhookDaemon } from "../support/github-project.js";
import { waitFor } from "../support/wait.js";

const SECRET = "webhook-secret-for-the-test";

describe("GitHub through the webhook receiver, end to end (fake GitHub, real tmux, real git)", () => {
  it("spawns in a fresh worktree, delivers a linked PR's review comment, refuses bad signatures and redeliveries, closes and cleans up", async () => {
    const bare = await bareRepository();
    const { gh, issue, ref, p, url } = await startWebhookDaemon({
      secret: SECRET,
      repo: { defaultBranch: "main", cloneUrl: `file://${bare}` },
    });

    // A signed comment by an authorized person on the labelled issue starts a session.
    const first = gh.addComment("octo/repo", issue, { user: "alice", body: "Please start with the endpoint." });
    const delivery = await sendWebhook(url, { event: "issue_comment", payload: gh.payload.issueComment("octo/repo", issue, first), secret: SECRET });
    expect(delivery.status).toBe(202);
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    expect(spawned.work_item).toBe(ref);
    const checkout = String(spawned.cwd);
    expect(checkout.startsWith(join(p.root, "workspaces"))).toBe(true);
    expect(existsSync(join(checkout, "README.md"))).toBe(true);
    const prepared = await p.waitForEvent("the workspace", (r) => r.event === "workspace.prepared");
    expect(prepared.checkout).toBe(checkout);
    const boot = await waitFor("the boot prompt", async () => (await p.transcript()).find((e) => e.type === "boot"));
    expect(boot.argv?.at(-1)).toContain(ref);

    // The announcement is posted on the issue, marked so it never comes back as input.
    await p.waitForEvent("the announcement", (r) => r.event === "session.announced");
    expect(gh.comments("octo/repo", issue).some((c) => c.body.includes(SELF_COMMENT_MARKER))).toBe(true);

    // A review comment on a PR that says "Fixes #N" reaches issue N's session.
    const pr = gh.addPullRequest("octo/repo", { title: "Health check", body: `Fixes #${issue}`, user: "alice", head: "health" });
    const review = gh.addReviewComment("octo/repo", pr, { user: "alice", body: "Rename handler to healthz." });
    const reviewDelivery = await sendWebhook(url, {
      event: "pull_request_review_comment",
      payload: gh.payload.pullRequestReviewComment("octo/repo", pr, review),
      secret: SECRET,
    });
    expect(reviewDelivery.status).toBe(202);
    const delivered = await p.waitForEvent(
      "the review comment's delivery",
      (r) => r.event === "dispatch.succeeded" && r.delivery_id === reviewDelivery.deliveryId,
    );
    expect(delivered.work_item).toBe(ref);
    const input = await waitFor("the delivered review comment", async () => (await p.transcript()).find((e) => e.type === "input"));
    expect(input.text).toContain("Rename handler to healthz.");
    await p.waitForEvent("the PR binding", (r) => r.event === "session.pr_linked" && r.work_item === ref);

    // A bad signature is refused and dispatches nothing.
    const forged = gh.addComment("octo/repo", issue, { user: "alice", body: "forged instruction" });
    const bad = await sendWebhook(url, {
      event: "issue_comment",
      payload: gh.payload.issueComment("octo/repo", issue, forged),
      signature: `sha256=${"0".repeat(64)}`,
    });
    expect(bad.status).toBe(401);
    await p.waitForEvent("the rejection", (r) => r.event === "webhook.rejected" && r.reason === "invalid-signature");

    // A redelivery of the first delivery id is acknowledged and ignored.
    const again = await sendWebhook(url, {
      event: "issue_comment",
      payload: gh.payload.issueComment("octo/repo", issue, first),
      secret: SECRET,
      deliveryId: delivery.deliveryId,
    });
    expect(again.status).toBe(202);
    await p.waitForEvent("the duplicate", (r) => r.event === "webhook.rejected" && r.reason === "duplicate-delivery");

    // Closing the issue closes the session and removes its worktree.
    gh.closeItem("octo/repo", issue);
    const close = await sendWebhook(url, { event: "issues", payload: gh.payload.issues("octo/repo", issue, "closed", "alice"), secret: SECRET });
    expect(close.status).toBe(202);
    const closed = await p.waitForEvent("the close", (r) => r.event === "session.closed");
    expect(closed.work_item).toBe(ref);
    await p.waitForEvent("the cleanup", (r) => r.event === "workspace.cleaned");
    expect(existsSync(checkout)).toBe(false);

    // Nothing but the two authorized deliveries reached the agent: not the forgery, not the redelivery.
    const inputs = (await p.transcript()).filter((e) => e.type === "input");
    expect(inputs.map((e) => e.text ?? "").some((text) => text.includes("forged instruction"))).toBe(false);
    expect(inputs).toHaveLength(1);
    const events = await p.events();
    expect(events.filter((r) => r.event === "session.spawned")).toHaveLength(1);
    // Reactions were added to the comments that reached the session.
    await waitFor("the reactions", async () =>
      gh.reactions().some((r) => r.subject === "issue_comment" && r.id === first.id && r.content === "eyes") ? true : undefined,
    );
    // The token never reaches the event log.
    expect(JSON.stringify(events)).not.toContain(TOKEN);
  }, 90_000);

  it("tells the issue's session that its pull requests merged or closed, names the PR in a review, and keeps the session live", async () => {
    const { gh, issue, ref, p, env, deliver, inputs } = await startWebhookDaemon({
      secret: SECRET,
      routing: { workspace: { enabled: false }, announce: { enabled: false } },
    });

    const start = gh.addComment("octo/repo", issue, { user: "alice", body: "Please start." });
    await deliver("issue_comment", gh.payload.issueComment("octo/repo", issue, start));
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === ref);

    // Two pull requests for the one issue: a review on the second says which one it is on.
    const first = gh.addPullRequest("octo/repo", { title: "Health check, take one", body: `Fixes #${issue}`, user: "alice", head: "take-one" });
    const second = gh.addPullRequest("octo/repo", { title: "Health check, take two", body: `Closes #${issue}`, user: "alice", head: "take-two" });
    const firstUrl = gh.pull("octo/repo", first).html_url;
    const secondUrl = gh.pull("octo/repo", second).html_url;
    const review = gh.addReview("octo/repo", second, { user: "alice", body: "Rename the route to /healthz.", state: "CHANGES_REQUESTED" });
    const reviewed = await deliver("pull_request_review", gh.payload.pullRequestReview("octo/repo", second, review));
    await p.waitForEvent("the review's delivery", (r) => r.event === "dispatch.succeeded" && r.delivery_id === reviewed);
    // Delivered is pasted into the pane; the agent records the input once it has read it.
    await waitFor("the review in the agent's input", async () => ((await inputs()).at(-1)?.includes("Rename the route") ? true : undefined));
    expect((await inputs()).at(-1)).toContain(`pull_request: #${second} (${secondUrl})\n`);

    // The first is closed without merging by alice; the second is merged by bob, who is not in
    // authorizedUsers: a merge is a fact about the repository, told whoever made it.
    gh.closeItem("octo/repo", first, { actor: "alice" });
    const abandoned = await deliver("pull_request", gh.payload.pullRequest("octo/repo", first, "closed", "alice"));
    await p.waitForEvent("the abandoned PR's delivery", (r) => r.event === "dispatch.succeeded" && r.delivery_id === abandoned && r.work_item === ref);
    gh.closeItem("octo/repo", second, { merged: true, actor: "bob" });
    const merged = await deliver("pull_request", gh.payload.pullRequest("octo/repo", second, "closed", "bob"));
    await p.waitForEvent("the merge's delivery", (r) => r.event === "dispatch.succeeded" && r.delivery_id === merged && r.work_item === ref);
    await waitFor("the merge in the agent's input", async () => ((await inputs()).at(-1)?.includes("was merged by bob") ? true : undefined));

    const told = (await inputs()).slice(-2);
    expect(told[0]).toContain(`Pull request #${first} (${firstUrl}) was closed without merging by alice.`);
    expect(told[1]).toContain(`Pull request #${second} (${secondUrl}) was merged by bob.`);
    expect(told[1]).toContain(`This session stays open until ${ref} itself is closed.`);
    // Nothing the PRs' authors wrote rides along with the notice.
    expect(told.join("\n")).not.toContain("Health check, take");

    // The session is still live, its harness still running.
    expect((await p.events()).filter((r) => r.event === "session.closed")).toEqual([]);
    const live = jsonOf<{ sessions: { workItem: { ref: string }; status: string }[] }>(await p.cli(["sessions", "list", "--json", "--status", "live"], env));
    expect(live.sessions.map((session) => [session.workItem.ref, session.status])).toEqual([[ref, "active"]]);
    expect(await paneState(p.socketName, String(spawned.tmux_target))).toBe("alive");

    // The issue closing is what ends it.
    gh.closeItem("octo/repo", issue, { actor: "alice" });
    await deliver("issues", gh.payload.issues("octo/repo", issue, "closed", "alice"));
    await p.waitForEvent("the close", (r) => r.event === "session.closed" && r.work_item === ref);
  }, 90_000);
});
