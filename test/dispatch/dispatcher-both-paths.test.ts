import { describe, expect, it } from "vitest";
import { inboundFromGitHub } from "../../src/ingress/github-events.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { ISSUE, ghEvent, githubSetup, target } from "./fixture.js";

/**
 * The webhook receiver and the poller may both see one comment, each under its own delivery id.
 * The comment's own id (the content key) is the same on both, so it is carried out once — an
 * ordinary comment reaches the agent once, and a command is not taken a second time, even after
 * the daemon restarts or a newer command has replaced it.
 */

const START = "the-loop:start-execution";
const STOP = "the-loop:stop-execution";
const PAUSE = "the-loop:pause-execution";

/** The same comment as each path hands it in: a different delivery id, the same content key. */
function bothPaths(commentId: string, body: string): [InboundEvent, InboundEvent] {
  const base = ghEvent({ on: ISSUE, commentId });
  const key = `github:${ISSUE.host}/${ISSUE.repository}:commented:comment:${commentId}`;
  return [
    { ...base, body, deliveryId: `webhook-${commentId}`, source: "gh-webhook", contentKey: key },
    { ...base, body, deliveryId: `poll-comment-${commentId}`, source: "poll", contentKey: key },
  ];
}

describe("one comment seen by the webhook and by the poller", () => {
  it("reaches the session once, also after a restart", async () => {
    const t = await githubSetup();
    const first = t.dispatcher();
    await t.live(first, ISSUE);
    const [pushed, polled] = bothPaths("c-1", "Please also cover the empty case.");
    expect(await first.handle(pushed)).toEqual({ settled: true });
    expect(await first.handle(polled)).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);

    // A restarted daemon remembers nothing in memory: the session record knows the comment.
    const restarted = t.dispatcher();
    expect(await restarted.handle({ ...polled, deliveryId: "poll-comment-c-1-again" })).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
  });

  it("takes a command once: neither path replays a start after the stop that followed it", async () => {
    const t = await githubSetup({ control: { requireStartCommand: true } });
    const daemon = t.dispatcher();
    const [startPushed, startPolled] = bothPaths("c-start", START);
    const [stopPushed, stopPolled] = bothPaths("c-stop", STOP);

    expect(await daemon.handle(startPushed)).toEqual({ settled: true });
    expect(t.record(ISSUE).status).toBe("active");
    expect(await daemon.handle(stopPushed)).toEqual({ settled: true });
    expect(t.record(ISSUE).status).toBe("closed");

    // The poller's copies arrive a cycle later, at a restarted daemon.
    const restarted = t.dispatcher();
    expect(await restarted.handle(startPolled)).toEqual({ settled: true });
    expect(await restarted.handle(stopPolled)).toEqual({ settled: true });
    expect(t.record(ISSUE).status).toBe("closed");
    expect(t.emitted("session.spawned")).toHaveLength(1);
    expect(t.emitted("control.command").map((fields) => fields.command)).toEqual(["start", "stop"]);
    expect(t.control.get(ISSUE.ref)).toMatchObject({ command: "stop" });
  });

  it("does not take an older command again when it is redelivered after a newer one", async () => {
    const t = await githubSetup({ control: { requireStartCommand: true } });
    const d = t.dispatcher();
    const [start] = bothPaths("c-start", START);
    const [pause] = bothPaths("c-pause", PAUSE);
    const [resume] = bothPaths("c-resume", "the-loop:resume-execution");
    for (const event of [start, pause, resume]) expect(await d.handle(event)).toEqual({ settled: true });
    expect(t.record(ISSUE).status).toBe("active");

    // GitHub's "Redeliver" of the pause, at a restarted daemon: the resume stands.
    expect(await t.dispatcher().handle({ ...pause, deliveryId: "webhook-c-pause-redelivered" })).toEqual({ settled: true });
    expect(t.record(ISSUE).status).toBe("active");
    expect(t.emitted("session.paused")).toHaveLength(1);
  });
});

describe("the content key", () => {
  it("is the same for one comment whichever delivery brought it, and differs between comments", () => {
    const payload = (id: number) => ({
      action: "created",
      issue: { number: 12, title: "T", body: "", state: "open", labels: [], html_url: "https://github.com/octo/app/issues/12", node_id: "I_12" },
      comment: { id, body: "hi", user: { login: "alice" }, created_at: "2026-11-30T00:00:00Z" },
      repository: { full_name: "octo/app", html_url: "https://github.com/octo/app" },
      sender: { login: "alice" },
    });
    const keyOf = (id: number, deliveryId: string, source: "gh-webhook" | "poll") => {
      const result = inboundFromGitHub("issue_comment", payload(id), { deliveryId, source, defaultHost: "github.com" });
      if (!("event" in result)) throw new Error("ignored");
      return result.event.contentKey;
    };
    expect(keyOf(7, "guid-1", "gh-webhook")).toBe("github:github.com/octo/app:commented:comment:7");
    expect(keyOf(7, "poll-comment-7", "poll")).toBe(keyOf(7, "guid-1", "gh-webhook"));
    expect(keyOf(8, "guid-2", "gh-webhook")).not.toBe(keyOf(7, "guid-1", "gh-webhook"));
  });
});

describe("a start on a pull request linked to a work item", () => {
  const ARMED = ["the-loop: auto-execute"];
  const onPr = (commentId: string) => ({ ...ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId, labels: [] }), body: START });

  it("is judged by the work item's own label, not the PR's", async () => {
    const t = await githubSetup({ control: { requireStartCommand: true } });
    const issue = t.github.items.get(ISSUE.ref);
    if (issue === undefined) throw new Error("the fixture holds the issue");
    t.github.items.set(ISSUE.ref, { ...issue, labels: ARMED });
    expect(await t.dispatcher().handle(onPr("c-1"))).toEqual({ settled: true });
    expect(t.emitted("control.command")).toMatchObject([{ work_item: ISSUE.ref, command: "start", effect: "started" }]);
    expect(t.record(ISSUE).status).toBe("active");
  });

  it("is refused when only the PR carries the label", async () => {
    const t = await githubSetup({ control: { requireStartCommand: true } });
    expect(await t.dispatcher().handle({ ...onPr("c-2"), labels: ARMED })).toEqual({ settled: true });
    expect(t.emitted("control.rejected")).toMatchObject([{ work_item: ISSUE.ref, reason: "not-armed" }]);
    expect(t.emitted("session.spawned")).toEqual([]);
  });
});

describe("a command from the CLI while the tracker cannot be reached", () => {
  it("pauses, resumes and stops a live session from its record alone; a start still needs the tracker", async () => {
    const t = await githubSetup({ control: { requireStartCommand: false } });
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    t.github.lookupError = new Error("GitHub is unreachable");
    const cli = (command: "start" | "pause" | "resume" | "stop") => d.control({ ref: ISSUE.ref, command, source: "cli", actor: "operator" });

    expect(await cli("pause")).toMatchObject({ applied: true, effect: "paused" });
    expect(await cli("resume")).toMatchObject({ applied: true, effect: "resumed" });
    expect(await cli("stop")).toMatchObject({ applied: true, effect: "stopped" });
    expect(t.record(ISSUE).status).toBe("closed");
    await expect(cli("start")).rejects.toThrow("GitHub is unreachable");
  });
});
