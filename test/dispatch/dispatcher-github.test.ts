import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import type { HandleResult } from "../../src/ingress/poller.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { LinkedItemCheck } from "../../src/dispatch/pr-linkage.js";
import { SessionRegistry } from "../../src/registry/registry.js";
import type { TrackerSet } from "../../src/trackers/resolve.js";
import { WorkItemNotFoundError } from "../../src/trackers/tracker.js";
import type { Tracker, WorkItemState } from "../../src/trackers/tracker.js";
import { formatWorkItemRef, workItemSlug } from "../../src/workitem/index.js";
import type { WorkItem, WorkItemRef } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";
import { ARM, ISSUE, OTHER, PR, T0, ghEvent, ghItem, ghRef, githubSetup, overtake, routed, target, tracked } from "./fixture.js";
import { waitFor } from "../support/wait.js";

/**
 * The dispatcher on pull-request events: bindings between a PR and the work item it belongs to,
 * the existence check of items guessed from a branch name, reactions, and workspaces; which queue
 * an event on a pull request waits in, and what happens when another process closes a session in
 * the middle of a spawn or a delivery. GitHub is an in-memory tracker here; the registry and the
 * binding store are the real files. The CLI's `sessions close` is played by calling closeSession
 * directly, which is all the command does.
 */

/** A PR's closing as the GitHub normalizer gives it: linked to ISSUE by its description, keyed by its closing time. */
function prClosed(input: { readonly merged: boolean; readonly actor?: string | null; readonly at?: string }): InboundEvent {
  const base = ghEvent({ linked: [[ISSUE, "closing-reference"]], kind: "closed" });
  return {
    ...base,
    actor: input.actor === undefined ? "bob" : input.actor,
    pullRequest: { ref: PR.ref, merged: input.merged },
    contentKey: `github:github.com/octo/app:closed:pull_request:5:${input.at ?? T0.toISOString()}`,
  };
}

const PR_URL = "https://github.com/octo/app/pull/5";

describe("Dispatcher: pull request bindings", () => {
  it("sends a PR's events to the explicitly bound item's session, over a closing reference to another item", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    await t.live(d, OTHER);
    expect(await t.links.bind(PR.ref, ISSUE, "explicit", T0)).toBe(true);
    t.events.events.length = 0;

    const event = ghEvent({ linked: [[OTHER, "closing-reference"]], commentId: "c-1" });
    expect(await d.handle(event)).toEqual({ settled: true });

    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
    expect(t.runner.inputsOf(target(OTHER))).toEqual([]);
    // Queued on the bound item, so it keeps its place among that item's own events.
    expect(t.emitted("dispatch.queued")).toEqual([{ work_item: ISSUE.ref, delivery_id: event.deliveryId, action: "deliver" }]);
    expect(t.emitted("dispatch.succeeded")).toMatchObject([{ work_item: ISSUE.ref }]);
    expect(t.record(ISSUE).pullRequests).toEqual([{ ref: PR.ref, source: "explicit", linkedAt: T0.toISOString() }]);
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: ISSUE, source: "explicit" });
    // The binding was there already: nothing new to announce.
    expect(t.emitted("session.pr_linked")).toEqual([]);
  });

  it("records an inferred binding once, and later events that no longer name the item follow it", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);

    for (const commentId of ["c-1", "c-2"]) {
      expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId }))).toEqual({ settled: true });
    }
    expect(t.emitted("session.pr_linked")).toEqual([{ work_item: ISSUE.ref, pull_request: PR.ref, linked_by: "closing-reference" }]);
    expect(t.links.get(PR.ref)).toEqual({ pullRequest: PR.ref, workItem: ISSUE, source: "closing-reference", linkedAt: T0.toISOString() });
    expect(t.record(ISSUE).pullRequests).toEqual([{ ref: PR.ref, source: "closing-reference", linkedAt: T0.toISOString() }]);

    // A review comment names only the PR; the stored binding brings it to the issue's session.
    const review = ghEvent({ commentId: "r-1", commentKind: "review_comment", kind: "review_commented" });
    expect(await d.handle(review)).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(3);
    expect(t.runner.stateOf(target(PR))).toBe("absent");
    expect(t.emitted("dispatch.queued").at(-1)).toMatchObject({ work_item: ISSUE.ref, delivery_id: review.deliveryId });
  });

  it("binds the PR to the item a spawn was for", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]] }))).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.record(ISSUE).pullRequests).toEqual([{ ref: PR.ref, source: "closing-reference", linkedAt: T0.toISOString() }]);
    expect(t.emitted("session.pr_linked")).toEqual([{ work_item: ISSUE.ref, pull_request: PR.ref, linked_by: "closing-reference" }]);
  });

  it("binds nothing when the PR's own session takes the event", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, PR);
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(PR))).toHaveLength(1);
    expect(t.links.get(PR.ref)).toBeUndefined();
    expect(t.emitted("session.pr_linked")).toEqual([]);
  });

  it("never lets an inference replace an explicit binding", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, OTHER);
    await t.links.bind(PR.ref, ISSUE, "explicit", T0);
    // The bound item has no session, the inferred one has: the event still goes the explicit way (a spawn for ISSUE).
    expect(await d.handle(ghEvent({ linked: [[OTHER, "closing-reference"]] }))).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.runner.inputsOf(target(OTHER))).toEqual([]);
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: { ref: ISSUE.ref }, source: "explicit" });
  });

  it("drops an item guessed from the branch that does not exist, and the event falls back to the PR", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    const ghost = ghItem(99);
    const first = ghEvent({ linked: [[ghost, "branch"]] });
    expect(await d.handle(first)).toEqual({ settled: true });

    expect(t.emitted("routing.linkage_dropped")).toEqual([{ pull_request: PR.ref, work_item: ghost.ref, reason: "not-found" }]);
    expect(t.runner.stateOf(target(PR))).toBe("live");
    expect(t.runner.stateOf(target(ghost))).toBe("absent");
    expect(t.emitted("routing.routed")).toMatchObject([{ work_item: PR.ref, decision: "spawn" }]);
    expect(t.links.get(PR.ref)).toBeUndefined();

    // The next event on the PR asks the tracker no more: the outcome is remembered.
    expect(await d.handle(ghEvent({ linked: [[ghost, "branch"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.github.lookups).toEqual([ghost.ref]);
    expect(t.runner.inputsOf(target(PR))).toHaveLength(1);
    expect(t.emitted("routing.linkage_dropped")).toHaveLength(2);
  });

  it("keeps an item guessed from the branch once the tracker confirms it, asking once", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "branch"]], headBranch: "issue-12" }))).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: { ref: ISSUE.ref }, source: "branch" });
    expect(t.record(ISSUE).pullRequests).toMatchObject([{ ref: PR.ref, source: "branch" }]);
    // The item has a live session now, and a stored binding: neither needs the tracker again.
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "branch"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.github.lookups).toEqual([ISSUE.ref]);
    expect(t.emitted("routing.linkage_dropped")).toEqual([]);
  });

  it("keeps a guessed item when the tracker cannot be asked: the check is best-effort", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    t.github.lookupError = new Error("GitHub API answered 502");
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "branch"]] }))).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.emitted("routing.linkage_dropped")).toEqual([]);
  });

  it("reports a damaged binding file and routes the event as if it were absent", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    const path = t.links.pathFor(PR.ref);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, "{ not json");
    const event = ghEvent({ linked: [[ISSUE, "closing-reference"]] });
    expect(await d.handle(event)).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.emitted("dispatch.failed")).toEqual([
      expect.objectContaining({ work_item: PR.ref, delivery_id: event.deliveryId, action: "link", will_retry: false }),
    ]);
    expect(String(t.emitted("dispatch.failed")[0]?.error)).toContain("is damaged");
    // Binding the delivery repaired the file.
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: { ref: ISSUE.ref } });
  });

  it("ends only the PR's own session when the PR closes, never the session of the item it was for", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    await t.live(d, PR);
    expect(await d.handle(prClosed({ merged: true }))).toEqual({ settled: true });
    expect(t.record(PR).status).toBe("closed");
    expect(t.record(ISSUE).status).toBe("active");
    // The PR's own session took the closing: the issue's agent is not told twice over.
    expect(t.runner.inputsOf(target(ISSUE))).toEqual([]);
  });
  it("leaves PR events alone without a binding store", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ links: undefined });
    await t.live(d, ISSUE);
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.record(ISSUE).pullRequests).toMatchObject([{ ref: PR.ref, source: "closing-reference" }]);
    expect(t.emitted("session.pr_linked")).toHaveLength(1);
  });
});

describe("Dispatcher: a pull request's merge or close, told to the linked item's session", () => {
  it.each<[string, boolean, string]>([
    ["merged", true, `Pull request #5 (${PR_URL}) was merged by bob.`],
    ["closed without merging", false, `Pull request #5 (${PR_URL}) was closed without merging by bob.`],
  ])("delivers the PR %s into the linked item's session as input, and the session stays live", async (_name, merged, text) => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    t.events.events.length = 0;

    const closed = prClosed({ merged });
    expect(await d.handle(closed)).toEqual({ settled: true });
    const [input, ...more] = t.runner.inputsOf(target(ISSUE));
    expect(more).toEqual([]);
    expect(input?.startsWith(`${text}\nIt is linked to ${ISSUE.ref}. This session stays open until ${ISSUE.ref} itself is closed.`)).toBe(true);
    expect(t.emitted("routing.routed")).toMatchObject([{ work_item: ISSUE.ref, decision: "deliver", kind: "closed" }]);
    expect(t.emitted("dispatch.succeeded")).toMatchObject([{ work_item: ISSUE.ref, delivery_id: closed.deliveryId }]);
    expect(t.emitted("session.closed")).toEqual([]);
    expect(t.record(ISSUE).status).toBe("active");
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.runner.terminated).toEqual([]);
    // Nothing was started for the PR, and the closing is on the record, so a redelivery after a restart is known.
    expect(t.runner.stateOf(target(PR))).toBe("absent");
    expect(t.record(ISSUE).recentDeliveries).toEqual(expect.arrayContaining([closed.deliveryId, closed.contentKey]));
  });

  it("follows a stored binding: a closing that names only the PR reaches the bound item's session", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    await t.links.bind(PR.ref, ISSUE, "explicit", T0);
    const closed = { ...prClosed({ merged: true }), workItems: [PR], linkedBy: undefined } satisfies InboundEvent;
    expect(await d.handle(closed)).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
    expect(t.runner.inputsOf(target(ISSUE))[0]).toContain(`Pull request #5 (${PR_URL}) was merged by bob.`);
    expect(t.record(ISSUE).status).toBe("active");
  });

  it("tells the closing once when both ingress paths see it, under different delivery ids", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    const webhook = prClosed({ merged: true });
    const polled = { ...prClosed({ merged: true, actor: "bob" }), source: "poll", deliveryId: "poll-closed-5" } satisfies InboundEvent;
    expect(await d.handle(webhook)).toEqual({ settled: true });
    expect(await d.handle(polled)).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
    // After a restart (no in-memory dedupe) the record still knows it.
    expect(await t.dispatcher().handle({ ...polled, deliveryId: "poll-closed-5-again" })).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
    expect(t.emitted("routing.dropped").map((fields) => fields.reason)).toEqual(["duplicate-delivery", "duplicate-delivery"]);
  });

  it("tells a PR closed again after a reopen again", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    expect(await d.handle(prClosed({ merged: false }))).toEqual({ settled: true });
    expect(await d.handle(prClosed({ merged: true, at: "2025-03-02T10:00:00.000Z" }))).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE)).map((text) => text.split("\n")[0])).toEqual([
      `Pull request #5 (${PR_URL}) was closed without merging by bob.`,
      `Pull request #5 (${PR_URL}) was merged by bob.`,
    ]);
  });

  it("delivers a closing by someone outside authorizedUsers, as information: it asks nothing of the agent", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    expect(await d.handle(prClosed({ merged: false, actor: "mallory" }))).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))[0]).toContain(`Pull request #5 (${PR_URL}) was closed without merging by mallory.`);
    // No one named (a poll of an unmerged PR): the notice says what happened, without a "by".
    expect(await d.handle(prClosed({ merged: false, actor: null, at: "2025-03-03T10:00:00.000Z" }))).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))[1]?.split("\n")[0]).toBe(`Pull request #5 (${PR_URL}) was closed without merging.`);
  });

  it("never starts a session: a closing with no live session anywhere is dropped, naming the PR", async () => {
    const t = await githubSetup({ spawnOnUnmatched: "always" });
    const d = t.dispatcher();
    expect(await d.handle(prClosed({ merged: true }))).toEqual({ settled: true });
    expect(t.emitted("session.spawned")).toEqual([]);
    expect(t.runner.stateOf(target(ISSUE))).toBe("absent");
    expect(t.runner.stateOf(target(PR))).toBe("absent");
    expect(t.emitted("routing.dropped")).toMatchObject([{ reason: "no-session", work_item: PR.ref, kind: "closed" }]);
  });

  it("drops the closing for a paused session, like any other input", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    await t.registry.setStatus(ISSUE.ref, ["active"], "paused", T0);
    t.events.events.length = 0;
    const closed = prClosed({ merged: true });
    expect(await d.handle(closed)).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toEqual([]);
    expect(t.emitted("dispatch.dropped")).toEqual([{ work_item: ISSUE.ref, delivery_id: closed.deliveryId, reason: "session-paused" }]);
    expect(t.record(ISSUE).status).toBe("paused");
  });

  it("names the PR's number and URL in a review delivered into the linked item's session", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    const review = {
      ...ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "r-1", commentKind: "review", kind: "reviewed" }),
      excerpt: { review: "Rename it." },
    };
    const remark = { ...ghEvent({ commentId: "rc-1", commentKind: "review_comment", kind: "review_commented" }), excerpt: { comment: "typo" } };
    expect(await d.handle(review)).toEqual({ settled: true });
    // The review comment names only the PR: the binding the review recorded brings it here.
    expect(await d.handle(remark)).toEqual({ settled: true });
    const [reviewed, remarked] = t.runner.inputsOf(target(ISSUE));
    expect(reviewed).toContain(`New event on ${ISSUE.ref} (reviewed by alice):\npull_request: #5 (${PR_URL})\nreview: Rename it.`);
    expect(remarked).toContain(`New event on ${ISSUE.ref} (review_commented by alice):\npull_request: #5 (${PR_URL})\ncomment: typo`);
  });
});

describe("Dispatcher: reactions", () => {
  it("reacts started then completed on the comment a delivered event came from", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, PR);
    await d.drain();
    t.github.reactions.length = 0;
    t.events.events.length = 0;

    const d2 = t.dispatcher();
    const event = ghEvent({ commentId: "c-1" });
    expect(await d2.handle(event)).toEqual({ settled: true });
    await d2.drain();
    const onComment = { workItem: ghRef(5), commentId: "c-1", commentKind: "comment" };
    expect(t.github.reactions).toEqual([
      { target: onComment, content: "eyes" },
      { target: onComment, content: "hooray" },
    ]);
    expect(t.emitted("reaction.added")).toEqual([
      { work_item: PR.ref, content: "eyes", target: "comment:c-1", delivery_id: event.deliveryId },
      { work_item: PR.ref, content: "hooray", target: "comment:c-1", delivery_id: event.deliveryId },
    ]);
  });

  it("reacts on the item itself when the event carries no comment (a spawn)", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, PR);
    await d.drain();
    expect(t.github.reactions).toEqual([
      { target: { workItem: ghRef(5) }, content: "eyes" },
      { target: { workItem: ghRef(5) }, content: "hooray" },
    ]);
    expect(t.emitted("reaction.added").map((fields) => fields.target)).toEqual(["item", "item"]);
  });

  it("reacts on the PR's review comment even when the event goes to a linked item's session", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    await d.drain();
    t.github.reactions.length = 0;
    const d2 = t.dispatcher();
    const event = ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "77", commentKind: "review_comment", kind: "review_commented" });
    expect(await d2.handle(event)).toEqual({ settled: true });
    await d2.drain();
    expect(t.github.reactions.map((reaction) => reaction.target)).toEqual([
      { workItem: ghRef(5), commentId: "77", commentKind: "review_comment" },
      { workItem: ghRef(5), commentId: "77", commentKind: "review_comment" },
    ]);
  });

  it("reacts failed when the delivery fails", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, PR);
    await d.drain();
    t.github.reactions.length = 0;
    const d2 = t.dispatcher();
    t.runner.failDeliver(target(PR), new Error("tmux paste-buffer failed"));
    expect(await d2.handle(ghEvent({ commentId: "c-1" }))).toEqual({ settled: false });
    await d2.drain();
    expect(t.emitted("dispatch.failed")).toHaveLength(1);
    expect(t.github.reactions.map((reaction) => reaction.content)).toEqual(["eyes", "confused"]);
  });

  it("reacts failed when the spawn fails", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    t.runner.failSpawn(target(PR));
    expect(await d.handle(ghEvent())).toEqual({ settled: false });
    await d.drain();
    expect(t.github.reactions.map((reaction) => reaction.content)).toEqual(["eyes", "confused"]);
  });

  it("does not react to an event it drops", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    expect(await d.handle(ghEvent({ actor: "mallory", commentId: "c-1" }))).toEqual({ settled: true });
    expect(await d.handle(ghEvent({ labels: [] }))).toEqual({ settled: true });
    await d.drain();
    expect(t.emitted("routing.dropped").map((fields) => fields.reason)).toEqual(["unauthorized-actor", "spawn-policy"]);
    expect(t.github.reactions).toEqual([]);
    expect(t.emitted("reaction.added")).toEqual([]);
  });

  it("does not react when reactions are disabled, and skips a moment whose content is empty", async () => {
    const off = await githubSetup({ reactions: { enabled: false } });
    const d = off.dispatcher();
    await off.live(d, PR);
    await d.drain();
    expect(off.github.reactions).toEqual([]);

    const quiet = await githubSetup({ reactions: { started: "" } });
    const q = quiet.dispatcher();
    await quiet.live(q, PR);
    await q.drain();
    expect(quiet.github.reactions.map((reaction) => reaction.content)).toEqual(["hooray"]);
  });

  it("never lets a failing reaction break a delivery, and does not wait for a slow one", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, PR);
    await d.drain();
    t.events.events.length = 0;

    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    t.github.reactImpl = (_target, content) =>
      content === "eyes" ? slow.then(() => Promise.reject(new Error("GitHub API answered 403: Resource not accessible"))) : Promise.reject(new Error("boom"));
    const d2 = t.dispatcher();
    const event = ghEvent({ commentId: "c-1" });
    expect(await d2.handle(event)).toEqual({ settled: true });
    expect(t.emitted("dispatch.succeeded")).toHaveLength(1);
    release();
    await d2.drain();
    expect(t.emitted("reaction.failed")).toEqual(
      expect.arrayContaining([
        { work_item: PR.ref, content: "eyes", target: "comment:c-1", error: "GitHub API answered 403: Resource not accessible", delivery_id: event.deliveryId },
        { work_item: PR.ref, content: "hooray", target: "comment:c-1", error: "boom", delivery_id: event.deliveryId },
      ]),
    );

    // A react that throws before returning a promise is caught as well.
    t.github.reactImpl = () => {
      throw new Error("synchronous failure");
    };
    const d3 = t.dispatcher();
    expect(await d3.handle(ghEvent({ commentId: "c-2" }))).toEqual({ settled: true });
    await d3.drain();
    expect(t.emitted("dispatch.succeeded")).toHaveLength(2);
  });

  it("sends none through a tracker that cannot react", async () => {
    const t = await githubSetup();
    const item = await t.trackers.local.openItem({ project: "demo", title: "Local", labels: [ARM], actor: "alice" });
    const d = t.dispatcher();
    const event: InboundEvent = { ...ghEvent(), workItems: [item.item], trackerEvent: "local:opened" };
    const { pullRequest: _pr, ...withoutPr } = event;
    expect(await d.handle(withoutPr)).toEqual({ settled: true });
    await d.drain();
    expect(t.emitted("session.spawned")).toHaveLength(1);
    expect(t.emitted("reaction.added")).toEqual([]);
    expect(t.emitted("reaction.failed")).toEqual([]);
  });
});

describe("Dispatcher: workspaces", () => {
  it("prepares the checkout after the claim, runs the session in it and records it", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    const event = ghEvent({ linked: [[ISSUE, "closing-reference"]], headBranch: "fix-parser", headInRepository: true });
    expect(await d.handle(event)).toEqual({ settled: true });

    expect(t.workspaces.prepared).toEqual([{ ref: ISSUE.ref, request: { branch: "fix-parser", headInRepository: true }, claimedBefore: true }]);
    const checkout = join(t.dir, "workspaces", workItemSlug(ISSUE.ref));
    expect(t.runner.spawnsOf(target(ISSUE))[0]?.cwd).toBe(checkout);
    expect(t.record(ISSUE)).toMatchObject({ cwd: checkout, workspace: { checkout, strategy: "worktree", branch: "fix-parser" } });
    expect(t.emitted("session.spawned")).toMatchObject([{ work_item: ISSUE.ref, cwd: checkout }]);
  });

  it("asks for the default branch for an item without a pull request, or one in another repository", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    await t.live(d, ISSUE);
    const elsewhere = ghItem(3, "issue", "docs");
    t.github.add(elsewhere);
    expect(await d.handle(ghEvent({ linked: [[elsewhere, "explicit"]], headBranch: "fix-parser" }))).toEqual({ settled: true });
    expect(t.workspaces.prepared.map((call) => [call.ref, call.request])).toEqual([
      [ISSUE.ref, {}],
      [elsewhere.ref, {}],
    ]);
  });

  it("starts in spawnCwd when the provider gives the item no checkout, or workspaces are off", async () => {
    const t = await githubSetup();
    t.workspaces.none = true;
    await t.live(t.dispatcher({ workspaces: t.workspaces }), PR);
    expect(t.record(PR).cwd).toBe(t.spawnCwd);
    expect(t.record(PR).workspace).toBeUndefined();

    const off = await githubSetup({ workspace: { enabled: false } });
    await off.live(off.dispatcher({ workspaces: off.workspaces }), PR);
    expect(off.workspaces.prepared).toEqual([]);
    expect(off.record(PR).cwd).toBe(off.spawnCwd);
  });

  it("closes the claim and asks for a retry when the checkout fails; the retry spawns", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    t.workspaces.failWith = new Error("git fetch timed out after 600s");
    const event = ghEvent({ headBranch: "fix-parser" });
    expect(await d.handle(event)).toEqual({ settled: false });

    expect(t.record(PR)).toMatchObject({ status: "closed", closeReason: "spawn-failed" });
    expect(t.runner.spawnRequests).toEqual([]);
    expect(t.emitted("session.spawn_failed")).toEqual([
      { work_item: PR.ref, harness: "fake", error: "its checkout could not be prepared: git fetch timed out after 600s", delivery_id: event.deliveryId },
    ]);

    t.workspaces.failWith = undefined;
    expect(await d.handle(event)).toEqual({ settled: true });
    expect(t.record(PR)).toMatchObject({ status: "active", workspace: { branch: "fix-parser" } });
    expect(t.runner.stateOf(target(PR))).toBe("live");
  });

  it("releases the checkout when the session closes, after the harness is ended", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    await t.live(d, PR);
    const workspace = t.record(PR).workspace;
    expect(workspace).toBeDefined();

    expect(await d.handle(ghEvent({ kind: "closed" }))).toEqual({ settled: true });
    expect(t.record(PR).status).toBe("closed");
    expect(t.workspaces.released).toEqual([{ ref: PR.ref, workspace, terminatedBefore: 1 }]);
    expect(t.emitted("session.closed")).toHaveLength(1);
  });

  it("keeps the checkout of a harness left running on close", async () => {
    const t = await githubSetup({}, { killHarnessOnClose: false });
    const d = t.dispatcher({ workspaces: t.workspaces });
    await t.live(d, PR);
    expect(await d.handle(ghEvent({ kind: "closed" }))).toEqual({ settled: true });
    expect(t.workspaces.released).toEqual([]);
    expect(t.emitted("workspace.kept")).toEqual([{ work_item: PR.ref, checkout: t.record(PR).workspace?.checkout }]);
  });
});

describe("Dispatcher: the queue an event on a pull request waits in", () => {
  it("keeps a PR event delivered into the PR's own session ahead of the PR's close that arrived after it", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    await t.live(d, PR);

    // Names ISSUE first (no session), so it reaches the PR's own session.
    const gate = t.runner.holdDeliver(target(PR));
    const comment = tracked(d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "c-1" })));
    const close = ghEvent({ kind: "closed" });
    const closed = tracked(d.handle(close));
    await gate.entered;
    await overtake(d);
    // The close waits for the comment that arrived before it.
    expect(routed(t.events, close)).toBe(false);
    expect(closed.done()).toBe(false);
    expect(t.record(PR).status).toBe("active");

    gate.release();
    expect(await comment.promise).toEqual({ settled: true });
    expect(await closed.promise).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(PR))).toHaveLength(1);
    expect(t.emitted("session.respawned")).toEqual([]);
    expect(t.runner.spawnsOf(target(PR))).toHaveLength(1);
    expect(t.record(PR).status).toBe("closed");
  });

  it("never starts a session for the PR while an event of the same PR is starting one for its linked issue", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    const spawn = t.runner.holdSpawn(target(ISSUE));
    // Same poll cycle: the PR's own event names issue-12 through its branch; a conversation
    // comment on the PR carries no branch, so it names the PR alone.
    const opened = tracked(d.handle(ghEvent({ linked: [[ISSUE, "branch"]], headBranch: "issue-12", headInRepository: true })));
    const onPr = ghEvent({ commentId: "c-1" });
    const comment = tracked(d.handle(onPr));
    await spawn.entered;
    await overtake(d);
    expect(routed(t.events, onPr)).toBe(false);
    expect(t.runner.spawnsOf(target(PR))).toEqual([]);

    spawn.release();
    expect(await opened.promise).toEqual({ settled: true });
    expect(await comment.promise).toEqual({ settled: true });
    expect(t.runner.spawnsOf(target(PR))).toEqual([]);
    expect(t.registry.get(PR.ref)).toBeUndefined();
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
    expect(t.emitted("session.spawned")).toMatchObject([{ work_item: ISSUE.ref }]);
  });

  it("delivers an event that a binding sends elsewhere in the queue of the session it reaches", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, PR);
    await t.live(d, ISSUE);
    // Two comments on the PR, queued on the PR while its session takes the first.
    const holdPr = t.runner.holdDeliver(target(PR));
    const first = tracked(d.handle(ghEvent({ commentId: "c-1" })));
    await holdPr.entered;
    const secondEvent = ghEvent({ commentId: "c-2" });
    const second = tracked(d.handle(secondEvent));
    // Before the second's turn the PR is bound to ISSUE, whose session is busy with its own event.
    await t.links.bind(PR.ref, ISSUE, "explicit", T0);
    const holdIssue = t.runner.holdDeliver(target(ISSUE));
    const own = tracked(d.handle(ghEvent({ on: ISSUE, commentId: "c-own" })));
    await holdIssue.entered;

    holdPr.release();
    expect(await first.promise).toEqual({ settled: true });
    await overtake(d);
    // The second comment now goes to ISSUE's session: it waits for the delivery already there.
    expect(routed(t.events, secondEvent)).toBe(false);
    expect(second.done()).toBe(false);
    holdIssue.release();
    expect(await own.promise).toEqual({ settled: true });
    expect(await second.promise).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(2);
    expect(t.runner.inputsOf(target(PR))).toHaveLength(1);
    expect(t.runner.log.filter((line) => line.startsWith("paste"))).toEqual([`paste ${target(PR)}`, `paste ${target(ISSUE)}`, `paste ${target(ISSUE)}`]);
  });

  it("settles a batch of events naming overlapping items in any order, each session taking its events in arrival order", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    const PR2 = ghItem(6, "pull_request");
    t.github.add(PR2);
    await t.live(d, PR);
    await t.live(d, PR2);
    // PR names ISSUE, PR2 names OTHER then ISSUE; neither issue has a session, so each PR's own takes its events.
    const onPr = (commentId: string): InboundEvent => ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId });
    const onPr2 = (commentId: string): InboundEvent => ({
      ...ghEvent({
        on: PR2,
        linked: [
          [OTHER, "closing-reference"],
          [ISSUE, "closing-reference"],
        ],
        commentId,
      }),
      excerpt: { comment: commentId },
    });
    const batch = [
      { ...onPr("a1"), excerpt: { comment: "a1" } },
      onPr2("b1"),
      { ...ghEvent({ commentId: "a2" }), excerpt: { comment: "a2" } },
      onPr2("b2"),
      { ...onPr("a3"), excerpt: { comment: "a3" } },
      onPr2("b3"),
    ];
    const results = await Promise.all(batch.map((event) => d.handle(event)));
    expect(results).toEqual(batch.map(() => ({ settled: true })));
    const order = (item: WorkItem): string[] =>
      t.runner.inputsOf(target(item)).map((text) => ["a1", "a2", "a3", "b1", "b2", "b3"].find((id) => text.includes(id)) ?? "?");
    expect(order(PR)).toEqual(["a1", "a2", "a3"]);
    expect(order(PR2)).toEqual(["b1", "b2", "b3"]);
  });

  it("reports the events still queued, not the queues they wait in, when draining", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    const spawn = t.runner.holdSpawn(target(ISSUE));
    const opened = tracked(
      d.handle(
        ghEvent({
          linked: [
            [ISSUE, "closing-reference"],
            [OTHER, "closing-reference"],
          ],
        }),
      ),
    );
    await spawn.entered;
    const drained = tracked(d.drain());
    spawn.release();
    expect(await opened.promise).toEqual({ settled: true });
    expect(await drained.promise).toBe(1);
  });
});

describe("Dispatcher: a binding made during a delivery", () => {
  it("does not list a PR on a session when an explicit binding made meanwhile sends its events elsewhere", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    // While the PR's comment goes into ISSUE's session (its closing reference), someone runs
    // `the-loop sessions link-pr --work-item #13 --pull-request 5`.
    t.runner.beforeDeliver = async () => {
      expect(await t.links.bind(PR.ref, OTHER, "explicit", T0)).toBe(true);
    };
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: { ref: OTHER.ref }, source: "explicit" });
    expect(t.record(ISSUE).pullRequests).toBeUndefined();
    expect(t.emitted("session.pr_linked")).toEqual([]);
  });
});

describe("Dispatcher: a session closed by another process mid-way", () => {
  it("does not start the harness again for a session closed while an event was on its way in", async () => {
    const t = await githubSetup();
    const d = t.dispatcher();
    await t.live(d, PR);
    t.runner.beforeDeliver = async () => {
      expect(await t.cliClose(PR)).toBeDefined();
    };
    const result: HandleResult = await d.handle(ghEvent({ commentId: "c-1" }));
    expect(result).toEqual({ settled: true });
    expect(t.runner.spawnsOf(target(PR))).toHaveLength(1);
    expect(t.runner.stateOf(target(PR))).not.toBe("live");
    expect(t.emitted("session.respawned")).toEqual([]);
    expect(t.emitted("dispatch.succeeded")).toEqual([]);
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: PR.ref, reason: "session-closed" }]);
    expect(t.record(PR).status).toBe("closed");
  });

  it("releases a checkout prepared for a session that was closed before it was recorded, and starts no harness", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    const prepare = t.workspaces.holdPrepare();
    const opened = tracked(d.handle(ghEvent()));
    await prepare.entered;
    expect(await t.cliClose(PR)).toBeDefined();
    // The close saw no checkout yet: it released nothing.
    expect(t.workspaces.released).toEqual([]);

    prepare.release();
    expect(await opened.promise).toEqual({ settled: true });
    expect(t.runner.spawnRequests).toEqual([]);
    expect(t.record(PR)).toMatchObject({ status: "closed", closeReason: "cli" });
    expect(t.workspaces.released).toMatchObject([{ ref: PR.ref, workspace: { checkout: join(t.dir, "workspaces", workItemSlug(PR.ref)) } }]);
    expect(t.emitted("session.spawned")).toEqual([]);
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: PR.ref, reason: "session-closed" }]);
  });

  it("ends a harness whose session was closed while it was being started", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    const spawn = t.runner.holdSpawn(target(PR));
    const opened = tracked(d.handle(ghEvent()));
    await spawn.entered;
    expect(await t.cliClose(PR)).toBeDefined();
    // The close found the checkout on the record and released it; no harness was there to end yet.
    expect(t.workspaces.released).toHaveLength(1);

    spawn.release();
    expect(await opened.promise).toEqual({ settled: true });
    expect(t.runner.stateOf(target(PR))).not.toBe("live");
    expect(t.runner.terminated.map((entry) => entry.target)).toContain(target(PR));
    expect(t.record(PR).status).toBe("closed");
    expect(t.emitted("session.spawned")).toEqual([]);
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: PR.ref, reason: "session-closed" }]);
  });
});

describe("Dispatcher: checkouts of failed spawns", () => {
  it("releases the checkout a failed spawn left for its retry once the item closes", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    t.runner.failSpawn(target(PR));
    expect(await d.handle(ghEvent())).toEqual({ settled: false });
    const workspace = t.record(PR).workspace;
    expect(workspace).toBeDefined();
    expect(t.workspaces.released).toEqual([]);

    expect(await d.handle(ghEvent({ kind: "closed" }))).toEqual({ settled: true });
    expect(t.workspaces.released).toEqual([{ ref: PR.ref, workspace, terminatedBefore: expect.any(Number) }]);
    expect(t.record(PR).workspace).toBeUndefined();
    expect(t.record(PR).status).toBe("closed");
  });

  it("leaves the checkout of a failed spawn alone while the item stays open, for the retry to reuse", async () => {
    const t = await githubSetup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    t.runner.failSpawn(target(PR));
    const event = ghEvent();
    expect(await d.handle(event)).toEqual({ settled: false });
    expect(await d.handle(event)).toEqual({ settled: true });
    expect(t.workspaces.released).toEqual([]);
    expect(t.workspaces.prepared.map((call) => call.ref)).toEqual([PR.ref, PR.ref]);
    expect(t.record(PR).status).toBe("active");
  });
});

describe("Dispatcher: reactions, with a session closed by another process", () => {
  it("does not react to a close that found no session left to close", async () => {
    const t = await githubSetup({ maxConcurrentDispatches: 1 });
    const d = t.dispatcher();
    await t.live(d, PR);
    await d.drain();
    t.github.reactions.length = 0;

    const d2 = t.dispatcher();
    // The only slot of the pool is taken by another item's spawn, so the close waits for it.
    const spawn = t.runner.holdSpawn(target(OTHER));
    const other = tracked(d2.handle(ghEvent({ on: OTHER })));
    await spawn.entered;
    const close = ghEvent({ kind: "closed" });
    const closed = tracked(d2.handle(close));
    // Decided as a close of the live session, it now waits for the pool's slot.
    await waitFor("the close's turn to begin", () => routed(t.events, close));
    // Meanwhile the CLI closes the session.
    expect(await t.cliClose(PR)).toBeDefined();
    spawn.release();
    expect(await other.promise).toEqual({ settled: true });
    expect(await closed.promise).toEqual({ settled: true });
    await d2.drain();
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: PR.ref, reason: "no-session" }]);
    expect(t.github.reactions.filter((reaction) => reaction.target.workItem.number === 5)).toEqual([]);
  });
});

/** The issue that a PR's head branch `issue-12` names. */
const GUESS = ISSUE;

function branchEvent(): InboundEvent {
  return {
    source: "gh-webhook",
    deliveryId: "d",
    kind: "commented",
    trackerEvent: "pull_request_review_comment",
    workItems: [GUESS, PR],
    actor: "alice",
    body: "hi",
    labels: [],
    itemState: "open",
    pullRequest: { ref: PR.ref, headBranch: "issue-12", headInRepository: true },
    linkedBy: { [GUESS.ref]: "branch" },
    occurredAt: "2025-03-01T10:00:00.000Z",
    excerpt: {},
  };
}

/** The existence check of an item guessed from a PR's head branch, answering getItem from `answer` and counting the calls. */
async function check(answer: () => Promise<WorkItemState>) {
  let clock = Date.parse("2025-03-01T10:00:00.000Z");
  const calls: string[] = [];
  const tracker = {
    getItem: async (ref: WorkItemRef) => {
      calls.push(formatWorkItemRef(ref));
      return answer();
    },
  } as unknown as Tracker;
  const trackers = { local: tracker, forRef: () => tracker } as unknown as TrackerSet;
  const events = new MemoryEventSink();
  const registry = new SessionRegistry({ dir: join(await tempDir(), "sessions") });
  const linkCheck = new LinkedItemCheck({ trackers, registry, events, now: () => new Date(clock) });
  return {
    calls,
    events,
    verify: () => linkCheck.verify(branchEvent()),
    advance: (ms: number) => (clock += ms),
  };
}

const found = (): Promise<WorkItemState> => Promise.resolve({ item: GUESS } as WorkItemState);
const missing = (): Promise<WorkItemState> => Promise.reject(new WorkItemNotFoundError(GUESS.ref));
const outage = (): Promise<WorkItemState> => Promise.reject(new Error("GitHub GET /repos/octo/app/issues/12: 502 Bad Gateway"));

describe("LinkedItemCheck: items guessed from a branch", () => {
  it("never remembers a failure to ask as a missing item: the next event asks again, and then believes the answer", async () => {
    let answer = outage;
    const t = await check(() => answer());
    expect((await t.verify()).workItems).toEqual([GUESS, PR]);
    answer = missing;
    expect((await t.verify()).workItems).toEqual([PR]);
    expect(t.calls).toHaveLength(2);
    expect(t.events.events.filter((event) => event.type === "routing.linkage_dropped")).toHaveLength(1);
  });

  it("asks once for an item that exists, however many events follow", async () => {
    const t = await check(found);
    for (let i = 0; i < 5; i++) expect((await t.verify()).workItems).toEqual([GUESS, PR]);
    t.advance(24 * 3600 * 1000);
    expect((await t.verify()).workItems).toEqual([GUESS, PR]);
    expect(t.calls).toHaveLength(1);
  });

  it("believes a missing item for ten minutes, then asks again (the issue may have been opened since)", async () => {
    let answer = missing;
    const t = await check(() => answer());
    expect((await t.verify()).workItems).toEqual([PR]);
    t.advance(9 * 60 * 1000);
    expect((await t.verify()).workItems).toEqual([PR]);
    expect(t.calls).toHaveLength(1);
    answer = found;
    t.advance(2 * 60 * 1000);
    expect((await t.verify()).workItems).toEqual([GUESS, PR]);
    expect(t.calls).toHaveLength(2);
  });
});
