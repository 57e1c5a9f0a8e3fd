import { existsSync } from "node:fs";
import { userInfo } from "node:os";
import { describe, expect, it } from "vitest";
import { SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";
import { jsonOf } from "../support/cli.js";
import { sendWebhook } from "../support/fake-github.js";
import type { FakeGitHub } from "../support/fake-github.js";
import { ARM, TOKEN, bareRepository, freePort, startGitHub, startProject } from "../support/github-project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { count, inputs, paneState, tmuxSessions, waitForCount } from "../support/e2e.js";

/**
 * Execution control (docs/control.md, issue #106 "How we will check") on GitHub, end to end
 * through each ingress: the webhook receiver (signed deliveries this test sends as GitHub would)
 * and the poller (the fake GitHub's REST API, read on a short interval). The real CLI and daemon,
 * real tmux on a private socket, the fake harness. Each path: the label arms and starts nothing,
 * an unauthorized start is dropped, an authorized one starts one session; pause holds events off
 * across a daemon restart; resume tells the agent to re-read the thread and replays nothing; stop
 * ends the harness and keeps the item stopped; an ambiguous comment does nothing; and
 * `the-loop sessions …` gives the same states, leaving a marked comment neither ingress acts on.
 */

const REPO = "octo/repo";
const SECRET = "webhook-secret-for-the-control-test";
const START = "the-loop:start-execution";
const STOP = "the-loop:stop-execution";
const PAUSE = "the-loop:pause-execution";
const RESUME = "the-loop:resume-execution";

interface SessionsJson {
  sessions: { workItem: { ref: string }; status: string; tmuxTarget: string; control: { command: string; source: string } | null }[];
}

interface ControlJson {
  applied: boolean;
  effect?: string;
  comment?: { posted: boolean; id?: string; error?: string };
}

/** How the daemon hears of what happens on GitHub, and the delivery id it gives each happening. */
interface Ingress {
  readonly name: "webhook" | "poller";
  /** Adds the arming label as `actor`; the delivery id when the test knows it. */
  label(issue: number, actor: string): Promise<string | undefined>;
  /** A comment by `user`; returns its delivery id. */
  comment(issue: number, user: string, body: string): Promise<string>;
  /** A comment the CLI posted, as this ingress hands it to the daemon; returns its delivery id. */
  echo(issue: number, commentId: number): Promise<string>;
  /** Sends a delivery again under its own id, as GitHub's redelivery does (webhook only). */
  readonly redeliver?: (deliveryId: string) => Promise<void>;
}

interface Setup {
  readonly gh: FakeGitHub;
  readonly p: TestProject;
  readonly ingress: Ingress;
  /** Whether sessions get a checkout of their own (the webhook path: a real git worktree). */
  readonly workspaces: boolean;
}

const ENV = { GH_TOKEN: TOKEN, THE_LOOP_GH_WEBHOOK_SECRET: SECRET };
// Both setups turn the session announcement off: GitHub's client spaces comment creation three
// seconds apart (src/trackers/github/client.ts), so a CLI start would post its control comment
// three seconds after its announcement. The announcement has tests of its own.

async function startDaemon(p: TestProject): Promise<void> {
  const started = await p.cli(["start", "--json"], ENV);
  expect(started.code, started.stderr + started.stdout).toBe(0);
}

/** The webhook receiver alone (no poller); sessions get a real worktree of a bare repository. */
async function webhookSetup(): Promise<Setup> {
  const bare = await bareRepository();
  const gh = await startGitHub();
  gh.addRepo(REPO, { defaultBranch: "main", cloneUrl: `file://${bare}` });
  const port = await freePort();
  const p = await startProject({
    polling: { enabled: false, sources: [] },
    github: { apiUrl: gh.apiUrl },
    webhooks: { ghWebhook: { enabled: true, port } },
    routing: { control: { requireStartCommand: true }, announce: { enabled: false } },
  });
  const url = `http://127.0.0.1:${port}/gh-webhook`;
  const sent = new Map<string, { event: string; payload: unknown }>();
  const deliver = async (event: string, payload: unknown, deliveryId?: string): Promise<string> => {
    const delivery = await sendWebhook(url, { event, payload, secret: SECRET, ...(deliveryId ? { deliveryId } : {}) });
    expect(delivery.status, delivery.body).toBe(202);
    sent.set(delivery.deliveryId, { event, payload });
    return delivery.deliveryId;
  };
  const ingress: Ingress = {
    name: "webhook",
    async label(issue, actor) {
      gh.addLabel(REPO, issue, ARM, { actor });
      return deliver("issues", gh.payload.issues(REPO, issue, "labeled", actor, ARM));
    },
    async comment(issue, user, body) {
      return deliver("issue_comment", gh.payload.issueComment(REPO, issue, gh.addComment(REPO, issue, { user, body })));
    },
    async echo(issue, commentId) {
      const posted = gh.comments(REPO, issue).find((c) => c.id === commentId);
      expect(posted, `comment ${commentId}`).toBeDefined();
      return deliver("issue_comment", gh.payload.issueComment(REPO, issue, posted!));
    },
    async redeliver(deliveryId) {
      const original = sent.get(deliveryId);
      expect(original, deliveryId).toBeDefined();
      await deliver(original!.event, original!.payload, deliveryId);
    },
  };
  await startDaemon(p);
  return { gh, p, ingress, workspaces: true };
}

/** The poller alone, on a short interval; no checkouts. */
async function pollerSetup(): Promise<Setup> {
  const gh = await startGitHub();
  gh.addRepo(REPO);
  const p = await startProject({
    polling: { enabled: true, intervalSeconds: 0.2, sources: [{ provider: "github", repos: [REPO] }] },
    github: { apiUrl: gh.apiUrl },
    routing: { workspace: { enabled: false }, control: { requireStartCommand: true }, announce: { enabled: false } },
  });
  const ingress: Ingress = {
    name: "poller",
    async label(issue, actor) {
      gh.addLabel(REPO, issue, ARM, { actor });
      return undefined;
    },
    async comment(issue, user, body) {
      return `poll-comment-${gh.addComment(REPO, issue, { user, body }).id}`;
    },
    async echo(_issue, commentId) {
      return `poll-comment-${commentId}`;
    },
  };
  await startDaemon(p);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline" && r.poll_source === `github:${REPO}`);
  return { gh, p, ingress, workspaces: false };
}

async function inputContaining(p: TestProject, text: string): Promise<void> {
  await waitFor(`"${text}" in the transcript`, async () => ((await inputs(p)).some((t) => t.includes(text)) ? true : undefined));
}

describe.each([
  ["the webhook receiver", webhookSetup],
  ["the poller", pollerSetup],
])("execution control on GitHub through %s (fake GitHub, real daemon, real tmux)", (_name, setup) => {
  it("arms on the label, starts for an authorized start only, pauses across a restart, resumes, stops; the CLI does the same and leaves marked comments", async () => {
    const { gh, p, ingress, workspaces } = await setup();
    const issue = gh.addIssue(REPO, { title: "Add a health check", user: "alice" });
    const ref = `github:${gh.host}/${REPO}#${issue}`;
    const actor = userInfo().username;

    // 1. The label arms, nothing spawns.
    const labeled = await ingress.label(issue, "alice");
    const held = await p.waitForEvent(
      "the armed item held",
      (r) => r.event === "routing.dropped" && r.reason === "awaiting-start" && (labeled === undefined || r.delivery_id === labeled),
    );
    expect(held).toMatchObject({ work_item: ref, kind: "labeled" });

    // 6. An ambiguous comment on the armed item does nothing.
    const both = await ingress.comment(issue, "alice", `${START} — no, wait: ${STOP}`);
    const ambiguous = await p.waitForEvent("the ambiguous comment", (r) => r.event === "control.ambiguous" && r.delivery_id === both);
    expect(ambiguous.work_item).toBe(ref);

    // An unauthorized start is dropped; no command.
    const mallory = await ingress.comment(issue, "mallory", START);
    const refused = await p.waitForEvent("mallory's start dropped", (r) => r.event === "routing.dropped" && r.delivery_id === mallory);
    expect(refused).toMatchObject({ reason: "unauthorized-actor", actor: "mallory", work_item: ref });
    let events = await p.events();
    expect(count(events, (r) => r.event === "session.spawned")).toBe(0);
    expect(count(events, (r) => r.event === "control.command")).toBe(0);
    expect(await tmuxSessions(p.socketName)).toEqual([]);

    // The authorized start starts exactly one session.
    const start = await ingress.comment(issue, "alice", `**${START}**`);
    const command = await p.waitForEvent("alice's start", (r) => r.event === "control.command" && r.delivery_id === start);
    expect(command).toMatchObject({ work_item: ref, command: "start", command_source: "comment", actor: "alice", effect: "started" });
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    expect(spawned.work_item).toBe(ref);
    const target = String(spawned.tmux_target);
    const checkout = String(spawned.cwd);
    await waitFor("the boot line", async () => (await p.transcript()).find((e) => e.type === "boot"));
    expect(await tmuxSessions(p.socketName)).toHaveLength(1);
    expect(await paneState(p.socketName, target)).toBe("alive");

    // An ambiguous comment on the running session is not delivered; an ordinary one is.
    const twoWays = await ingress.comment(issue, "alice", `${PAUSE}? ${RESUME}?`);
    await p.waitForEvent("the second ambiguous comment", (r) => r.event === "control.ambiguous" && r.delivery_id === twoWays);
    const first = await ingress.comment(issue, "alice", "First instruction [i1].");
    await p.waitForEvent("the first delivery", (r) => r.event === "dispatch.succeeded" && r.delivery_id === first);
    await inputContaining(p, "[i1]");

    // 2. Pause: the next comment is recorded and dropped, never pasted.
    await ingress.comment(issue, "alice", PAUSE);
    const paused = await p.waitForEvent("the pause", (r) => r.event === "session.paused");
    expect(paused).toMatchObject({ work_item: ref, command_source: "comment", actor: "alice" });
    const p1 = await ingress.comment(issue, "alice", "Said while paused [p1].");
    const dropped = await p.waitForEvent("the paused drop", (r) => r.event === "dispatch.dropped" && r.delivery_id === p1);
    expect(dropped).toMatchObject({ work_item: ref, reason: "session-paused" });

    // 3. A daemon restart keeps it paused.
    expect((await p.cli(["stop"], ENV)).code).toBe(0);
    await startDaemon(p);
    const listed = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"], ENV));
    expect(listed.sessions.map((s) => [s.workItem.ref, s.status, s.control?.command])).toEqual([[ref, "paused", "pause"]]);
    const p2 = await ingress.comment(issue, "alice", "Said after the restart [p2].");
    const droppedAgain = await p.waitForEvent("the paused drop after the restart", (r) => r.event === "dispatch.dropped" && r.delivery_id === p2);
    expect(droppedAgain.reason).toBe("session-paused");
    expect(await paneState(p.socketName, target)).toBe("alive");

    // 4. Resume: the re-read note, then the next comment; the paused ones are not replayed.
    await ingress.comment(issue, "alice", RESUME);
    const resumed = await p.waitForEvent("the resume", (r) => r.event === "session.resumed");
    expect(resumed).toMatchObject({ work_item: ref, notified: true, command_source: "comment", actor: "alice" });
    await inputContaining(p, "re-read the work item's thread");
    const r1 = await ingress.comment(issue, "alice", "After the resume [r1].");
    await p.waitForEvent("the delivery after the resume", (r) => r.event === "dispatch.succeeded" && r.delivery_id === r1);
    await inputContaining(p, "[r1]");
    const texts = await inputs(p);
    expect(texts.some((t) => t.includes("[p1]") || t.includes("[p2]"))).toBe(false);
    expect(texts.some((t) => [START, STOP, PAUSE, RESUME].some((keyword) => t.includes(keyword)))).toBe(false);
    expect(texts).toHaveLength(3);

    // 5. Stop: closed through the close path, harness ended (checkout removed); the item stays stopped.
    await ingress.comment(issue, "alice", STOP);
    const closed = await p.waitForEvent("the stop", (r) => r.event === "session.closed");
    expect(closed).toMatchObject({ work_item: ref, reason: "stopped" });
    await p.waitForEvent("the harness ended", (r) => r.event === "session.harness_terminated" && r.work_item === ref);
    expect(await paneState(p.socketName, target)).toBe("dead");
    if (workspaces) {
      await p.waitForEvent("the checkout removed", (r) => r.event === "workspace.cleaned" && r.work_item === ref);
      expect(existsSync(checkout)).toBe(false);
    }
    const s1 = await ingress.comment(issue, "alice", "Anyone there? [s1]");
    const stopped = await p.waitForEvent("the stopped item's drop", (r) => r.event === "routing.dropped" && r.delivery_id === s1);
    expect(stopped).toMatchObject({ work_item: ref, reason: "execution-stopped" });
    if (ingress.redeliver) {
      // GitHub redelivers the start (its own retry, or "Redeliver" on the hook's page). It came
      // before the restart, so the receiver's in-memory dedupe no longer knows it: the start must
      // still not act twice and restart the stopped item.
      await ingress.redeliver(start);
      const outcomes = ["routing.dropped", "dispatch.dropped", "control.command", "control.rejected", "webhook.rejected"];
      const replayed = await waitForCount(p, "the redelivered start settled", 2, (r) => r.delivery_id === start && outcomes.includes(String(r.event)));
      expect({ event: replayed.event, reason: replayed.reason }).toEqual({ event: "routing.dropped", reason: "duplicate-delivery" });
    }
    events = await p.events();
    expect(count(events, (r) => r.event === "session.spawned")).toBe(1);
    expect(events.filter((r) => r.event === "control.command").map((r) => [r.command, r.effect, r.command_source, r.actor])).toEqual([
      ["start", "started", "comment", "alice"],
      ["pause", "paused", "comment", "alice"],
      ["resume", "resumed", "comment", "alice"],
      ["stop", "stopped", "comment", "alice"],
    ]);

    // 7. The CLI: the same states, each leaving a marked comment this ingress does not act on.
    const cli = async (command: string, ...flags: string[]): Promise<ControlJson> => {
      const result = await p.cli(["sessions", command, "--work-item", ref, "--json", ...flags], ENV);
      expect(result.code, result.stderr + result.stdout).toBe(0);
      const outcome = jsonOf<ControlJson>(result);
      expect(outcome.applied).toBe(true);
      return outcome;
    };
    const marked = async (outcome: ControlJson, keyword: string): Promise<void> => {
      expect(outcome.comment?.posted, JSON.stringify(outcome)).toBe(true);
      const id = Number(outcome.comment?.id);
      const posted = gh.comments(REPO, issue).find((c) => c.id === id);
      expect(posted?.body).toContain(keyword);
      expect(posted?.body).toContain(SELF_COMMENT_MARKER);
      const delivery = await ingress.echo(issue, id);
      const drop = await p.waitForEvent(`${ingress.name} reading ${keyword} back`, (r) => r.event === "routing.dropped" && r.delivery_id === delivery);
      expect(drop.reason).toBe("self-echo");
    };
    const started = await cli("start");
    expect(started.effect).toBe("started");
    await marked(started, START);
    const respawned = await waitForCount(p, "the CLI's spawn", 2, (r) => r.event === "session.spawned");
    const cliTarget = String(respawned.tmux_target);
    await waitFor("the second boot line", async () => ((await p.transcript()).filter((e) => e.type === "boot").length === 2 ? true : undefined));
    expect(await paneState(p.socketName, cliTarget)).toBe("alive");

    const pausedByCli = await cli("pause");
    expect(pausedByCli.effect).toBe("paused");
    await marked(pausedByCli, PAUSE);
    const p3 = await ingress.comment(issue, "alice", "Said while paused by the CLI [p3].");
    await p.waitForEvent("the paused drop (CLI)", (r) => r.event === "dispatch.dropped" && r.delivery_id === p3 && r.reason === "session-paused");
    const listedPaused = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json", "--status", "live"], ENV));
    expect(listedPaused.sessions.map((s) => [s.status, s.control?.command, s.control?.source])).toEqual([["paused", "pause", "cli"]]);

    const resumedByCli = await cli("resume");
    expect(resumedByCli.effect).toBe("resumed");
    await marked(resumedByCli, RESUME);
    const note = await waitForCount(p, "the CLI's resume", 2, (r) => r.event === "session.resumed");
    expect(note).toMatchObject({ notified: true, command_source: "cli", actor });
    const r2 = await ingress.comment(issue, "alice", "After the CLI's resume [r2].");
    await p.waitForEvent("the delivery after the CLI's resume", (r) => r.event === "dispatch.succeeded" && r.delivery_id === r2);
    await inputContaining(p, "[r2]");
    expect((await inputs(p)).some((t) => t.includes("[p3]"))).toBe(false);

    const stoppedByCli = await cli("stop");
    expect(stoppedByCli.effect).toBe("stopped");
    await marked(stoppedByCli, STOP);
    await waitForCount(p, "the CLI's stop", 2, (r) => r.event === "session.closed" && r.reason === "stopped");
    expect(await paneState(p.socketName, cliTarget)).toBe("dead");

    // --no-comment: applied, and nothing on the thread.
    const before = gh.comments(REPO, issue).length;
    const quiet = await cli("pause", "--no-comment");
    expect(quiet.effect).toBe("recorded");
    expect(quiet.comment).toBeUndefined();
    expect(gh.comments(REPO, issue)).toHaveLength(before);

    events = await p.events();
    expect(events.filter((r) => r.event === "control.command" && r.command_source === "cli").map((r) => [r.command, r.effect, r.actor])).toEqual([
      ["start", "started", actor],
      ["pause", "paused", actor],
      ["resume", "resumed", actor],
      ["stop", "stopped", actor],
      ["pause", "recorded", actor],
    ]);
    // Nothing the CLI posted was applied again by the daemon, and no keyword reached the agent.
    expect(count(events, (r) => r.event === "control.command")).toBe(9);
    expect((await inputs(p)).some((t) => [START, STOP, PAUSE, RESUME].some((keyword) => t.includes(keyword)))).toBe(false);
    expect(JSON.stringify(events)).not.toContain(TOKEN);
  }, 90_000);
});
