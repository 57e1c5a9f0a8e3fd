import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { describe, expect, it, vi } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { graphSetupFor } from "../../src/daemon/graph-setup.js";
import type { SelfLogin } from "../../src/trackers/tracker.js";
import { SPEC_REVIEW_GRAPH } from "../support/graph.js";
import { FakeGitHubTracker, HoldingRunner, ISSUE, T0, dispatcherSetup, ghEvent } from "../dispatch/fixture.js";

/**
 * Held gate answers whose hold runs out: the dispatcher's gate path with a tracker that cannot
 * say which login the-loop posts as (a 5xx, for now), a hold bound of one second and a clock the
 * test moves. Nothing moves the gate, the answer waits, and once the bound is past it is refused
 * with one marked comment that asks for it again.
 */

class UnknownSelf extends FakeGitHubTracker {
  identity: SelfLogin = {
    kind: "unknown",
    permanent: false,
    reason: "GitHub did not say whom the token acts as (3 attempts): 502",
    fix: "wait, or set integrations.github.selfLogin",
  };
  override async selfLogin(): Promise<SelfLogin> {
    return this.identity;
  }
}

async function heldSetup() {
  const github = new UnknownSelf();
  github.add(ISSUE);
  let now = T0;
  const base = await dispatcherSetup({ routing: { announce: { enabled: false } }, runner: new HoldingRunner(), github, now: () => now });
  await writeFile(join(base.dir, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
  const config = configSchema.parse({ graph: { enabled: true, default: "spec-review" }, graphs: [{ name: "spec-review", path: "spec-review.yaml" }] });
  const setup = await graphSetupFor({ config, paths: base.paths, baseDir: base.dir });
  if (setup === undefined) throw new Error("the graph is off");
  const posted = vi.spyOn(github, "postComment");
  const dispatcher = base.dispatcher({ graph: { ...setup, holdMs: 1_000, heldRetry: { firstMs: 60_000, maxMs: 60_000 } } });
  const forced = await dispatcher.graphForce({ ref: ISSUE.ref, to: "review", reason: "the spec is written", actor: { kind: "operator", id: "operator" } });
  expect(forced).toMatchObject({ moved: true, node: "review", status: "waiting" });
  posted.mockClear();
  const approve = (id: string, actor = "alice") => ({ ...ghEvent({ on: ISSUE, commentId: id, kind: "commented", actor }), body: "the-loop:approve" });
  return { ...base, github, setup, dispatcher, posted, approve, tick: (ms: number) => (now = new Date(now.getTime() + ms)) };
}

describe("gate answers held while the login the-loop posts as is unknown", () => {
  it("holds an answer that would count, and refuses it with one marked comment once its bound ran out", async () => {
    const s = await heldSetup();
    expect(await s.dispatcher.handle(s.approve("c-1"))).toEqual({ settled: true });
    expect(s.emitted("graph.gate_answer_held")).toEqual([expect.objectContaining({ actor: "alice", decision: "approved", node: "review" })]);
    expect(s.emitted("graph.self_login_unknown")).toEqual([expect.objectContaining({ checked: "self-approval", permanent: false })]);
    expect(s.emitted("graph.gate_decided")).toEqual([]);
    expect((await s.setup.held?.get(ISSUE.ref))?.answers).toHaveLength(1);

    // Within the bound the daemon's retry keeps it.
    s.tick(500);
    expect(await s.dispatcher.releaseHeldAnswers()).toBe(true);
    expect(s.posted).not.toHaveBeenCalled();

    // Past it: refused, once, with a comment asking for the answer again; the gate has not moved.
    s.tick(600);
    expect(await s.dispatcher.releaseHeldAnswers()).toBe(false);
    expect(s.emitted("graph.gate_answer_refused")).toEqual([expect.objectContaining({ actor: "alice", reason_code: "identity-timeout" })]);
    expect(s.emitted("graph.gate_refused")).toEqual([expect.objectContaining({ actor: "alice", reason_code: "identity-timeout" })]);
    expect(s.posted).toHaveBeenCalledTimes(1);
    const body = String(s.posted.mock.calls[0]?.[1]);
    expect(body).toContain("<!-- the-loop:agent-comment -->");
    expect(body).toContain("@alice");
    expect(body).toContain("the-loop:approve");
    expect(await s.setup.held?.get(ISSUE.ref)).toBeUndefined();
    expect(await s.setup.states.get(ISSUE.ref)).toMatchObject({ node: "review", status: "waiting" });
    expect(await s.dispatcher.releaseHeldAnswers()).toBe(false);
    expect(s.posted).toHaveBeenCalledTimes(1);
    await s.dispatcher.drain();
  });

  it("decides a held answer once the login is known: one by that login is refused self-authored", async () => {
    const s = await heldSetup();
    expect(await s.dispatcher.handle(s.approve("c-1"))).toEqual({ settled: true });
    s.github.identity = { kind: "known", login: "alice" };
    // alice is the login the-loop posts as here: her held answer is its own, and refused.
    expect(await s.dispatcher.releaseHeldAnswers()).toBe(false);
    expect(s.emitted("graph.gate_answer_released")).toEqual([expect.objectContaining({ actor: "alice" })]);
    expect(s.emitted("graph.gate_refused")).toEqual([expect.objectContaining({ actor: "alice", reason_code: "self-authored" })]);
    expect(s.emitted("graph.self_login_learned")).toEqual([expect.objectContaining({ login: "alice" })]);
    expect(await s.setup.states.get(ISSUE.ref)).toMatchObject({ node: "review", status: "waiting" });
    await s.dispatcher.drain();
  });

  it("refuses at once, not held, when the failure is permanent", async () => {
    const s = await heldSetup();
    s.github.identity = {
      kind: "unknown",
      permanent: true,
      reason: "GitHub refused to say whom the token acts as (403)",
      fix: "set integrations.github.selfLogin",
    };
    expect(await s.dispatcher.handle(s.approve("c-1"))).toEqual({ settled: true });
    expect(s.emitted("graph.gate_answer_held")).toEqual([]);
    expect(s.emitted("graph.gate_refused")).toEqual([expect.objectContaining({ actor: "alice", reason_code: "identity-unknown" })]);
    expect(s.posted).toHaveBeenCalledTimes(1);
    expect(String(s.posted.mock.calls[0]?.[1])).toContain("integrations.github.selfLogin");
    expect(await s.setup.states.get(ISSUE.ref)).toMatchObject({ node: "review", status: "waiting" });
    await s.dispatcher.drain();
  });
});
