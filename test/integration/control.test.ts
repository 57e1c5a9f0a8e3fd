import { userInfo } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { count, inputs, paneState, tmuxSessions, waitForCount } from "../support/e2e.js";
import { ARM } from "../support/builders.js";

/**
 * Execution control (docs/control.md, issue #106 "How we will check"), end to end on the local
 * tracker: the real CLI and daemon, real tmux on a private socket, the fake harness. The label
 * arms an item, an authorized start starts it, pause holds every event off (across a daemon
 * restart), resume tells the agent to re-read the thread and replays nothing, stop ends the
 * harness and keeps the item stopped — and `the-loop sessions …` does the same, leaving a marked
 * comment no ingress acts on.
 */

const START = "the-loop:start-execution";
const STOP = "the-loop:stop-execution";
const PAUSE = "the-loop:pause-execution";
const RESUME = "the-loop:resume-execution";
const REF = "local:demo#1";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface SessionsJson {
  sessions: { workItem: { ref: string }; status: string; tmuxTarget: string; control: { command: string; source: string } | null }[];
}

interface ItemJson {
  ref: string;
  comments: { id: string; author: string; body: string }[];
}

/** A project with the start gate on (the support default turns it off for the label-path tests). */
function gatedProject(): Promise<TestProject> {
  return testProject({ routing: { control: { requireStartCommand: true } } });
}

/**
 * The poller's delivery id of a local comment: the tracker's change id (`demo:7`), whose comment
 * id is `demo:c7` (src/trackers/local/tracker.ts, src/ingress/local-source.ts).
 */
function deliveryIdOf(commentId: string): string {
  return `poll-${commentId.replace(/:c(\d+)$/, ":$1")}`;
}

/** Comments with `--as`; returns the poller's delivery id of the comment. */
async function comment(p: TestProject, ref: string, text: string, as = "alice"): Promise<string> {
  const result = await p.cli(["item", "comment", ref, text, "--as", as, "--json"]);
  expect(result.code, result.stderr + result.stdout).toBe(0);
  return deliveryIdOf(jsonOf<{ id: string }>(result).id);
}

async function startDaemon(p: TestProject): Promise<void> {
  const started = await p.cli(["start", "--json"]);
  expect(started.code, started.stderr + started.stdout).toBe(0);
}

/** Fails the test unless a control CLI command exits 0 with an applied outcome; returns its JSON. */
async function control(p: TestProject, command: string, ...flags: string[]): Promise<ControlJson> {
  const result = await p.cli(["sessions", command, "--work-item", "#1", "--json", ...flags]);
  expect(result.code, result.stderr + result.stdout).toBe(0);
  const outcome = jsonOf<ControlJson>(result);
  expect(outcome.applied).toBe(true);
  return outcome;
}

interface ControlJson {
  workItem: string;
  command: string;
  applied: boolean;
  effect?: string;
  session?: { tmuxTarget: string; status: string };
  comment?: { posted: boolean; id?: string; error?: string };
}

async function item(p: TestProject): Promise<ItemJson> {
  return jsonOf<ItemJson>(await p.cli(["item", "show", "#1", "--json"]));
}

describe("execution control on the local tracker, through the daemon (real tmux, the fake harness)", () => {
  it("arms on the label, starts only for an authorized start, pauses across a restart, resumes without replay, stops for good", async () => {
    project = await gatedProject();
    const p = project;
    await startDaemon(p);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");

    // A start before the item is armed is refused, and forgotten: the label below does not start it.
    expect((await p.cli(["item", "new", "Add a health check", "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the unarmed item's drop", (r) => r.event === "routing.dropped" && r.reason === "spawn-policy");
    const early = await comment(p, "#1", START);
    const rejected = await p.waitForEvent("the early start refused", (r) => r.event === "control.rejected" && r.delivery_id === early);
    expect(rejected).toMatchObject({ work_item: REF, command: "start", reason: "not-armed", actor: "alice" });

    // 1. The label arms, nothing spawns.
    expect((await p.cli(["item", "label", "#1", "--add", ARM, "--as", "alice"])).code).toBe(0);
    const held = await p.waitForEvent("the armed item held", (r) => r.event === "routing.dropped" && r.reason === "awaiting-start");
    expect(held).toMatchObject({ work_item: REF, kind: "labeled" });

    // 6. An ambiguous command on the armed item does nothing: no spawn.
    const both = await comment(p, "#1", `${START}\n${STOP}`);
    const ambiguous = await p.waitForEvent("the ambiguous comment", (r) => r.event === "control.ambiguous" && r.delivery_id === both);
    expect(ambiguous.work_item).toBe(REF);
    expect([...(ambiguous.commands as string[])].sort()).toEqual(["start", "stop"]);

    // An unauthorized start is dropped like any other unauthorized input.
    const mallory = await comment(p, "#1", START, "mallory");
    const refused = await p.waitForEvent("mallory's start dropped", (r) => r.event === "routing.dropped" && r.delivery_id === mallory);
    expect(refused).toMatchObject({ reason: "unauthorized-actor", actor: "mallory" });
    let events = await p.events();
    expect(count(events, (r) => r.event === "session.spawned")).toBe(0);
    expect(count(events, (r) => r.event === "control.command")).toBe(0);
    expect(await tmuxSessions(p.socketName)).toEqual([]);

    // The authorized start starts exactly one session.
    const start = await comment(p, "#1", `${START}.`);
    const command = await p.waitForEvent("alice's start", (r) => r.event === "control.command" && r.delivery_id === start);
    expect(command).toMatchObject({ work_item: REF, command: "start", command_source: "comment", actor: "alice", effect: "started" });
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    expect(spawned.work_item).toBe(REF);
    const target = String(spawned.tmux_target);
    await waitFor("the boot line", async () => (await p.transcript()).find((e) => e.type === "boot"));
    await p.waitForEvent("the announcement", (r) => r.event === "session.announced");
    expect(await tmuxSessions(p.socketName)).toHaveLength(1);
    expect(await paneState(p.socketName, target)).toBe("alive");

    // An ambiguous comment on the running session is not delivered either.
    const twoWays = await comment(p, "#1", `${PAUSE} or ${RESUME}?`);
    await p.waitForEvent("the second ambiguous comment", (r) => r.event === "control.ambiguous" && r.delivery_id === twoWays);
    const first = await comment(p, "#1", "First real instruction.");
    await p.waitForEvent("the first delivery", (r) => r.event === "dispatch.succeeded" && r.delivery_id === first);
    await waitFor("the first input", async () => ((await inputs(p)).some((t) => t.includes("First real instruction.")) ? true : undefined));
    expect((await inputs(p)).some((t) => t.includes(PAUSE) || t.includes(START))).toBe(false);

    // 2. Pause: the next comment is recorded and dropped, never pasted.
    await comment(p, "#1", PAUSE);
    const paused = await p.waitForEvent("the pause", (r) => r.event === "session.paused");
    expect(paused).toMatchObject({ work_item: REF, command_source: "comment", actor: "alice" });
    const p1 = await comment(p, "#1", "Said while paused [p1].");
    const dropped = await p.waitForEvent("the paused drop", (r) => r.event === "dispatch.dropped" && r.delivery_id === p1);
    expect(dropped).toMatchObject({ work_item: REF, reason: "session-paused" });

    // 3. A daemon restart keeps it paused.
    expect((await p.cli(["stop"])).code).toBe(0);
    await startDaemon(p);
    const listed = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"]));
    expect(listed.sessions.map((s) => [s.workItem.ref, s.status, s.control?.command])).toEqual([[REF, "paused", "pause"]]);
    const p2 = await comment(p, "#1", "Said after the restart [p2].");
    const droppedAgain = await p.waitForEvent("the paused drop after the restart", (r) => r.event === "dispatch.dropped" && r.delivery_id === p2);
    expect(droppedAgain.reason).toBe("session-paused");
    expect((await inputs(p)).some((t) => t.includes("[p1]") || t.includes("[p2]"))).toBe(false);
    expect(await paneState(p.socketName, target)).toBe("alive");

    // 4. Resume: the agent is told to re-read the thread, and the next comment arrives.
    await comment(p, "#1", RESUME);
    const resumed = await p.waitForEvent("the resume", (r) => r.event === "session.resumed");
    expect(resumed).toMatchObject({ work_item: REF, notified: true, command_source: "comment", actor: "alice" });
    await waitFor("the re-read note", async () => ((await inputs(p)).some((t) => t.includes("re-read the work item's thread")) ? true : undefined));
    const r1 = await comment(p, "#1", "After the resume [r1].");
    await p.waitForEvent("the delivery after the resume", (r) => r.event === "dispatch.succeeded" && r.delivery_id === r1);
    await waitFor("the comment after the resume", async () => ((await inputs(p)).some((t) => t.includes("[r1]")) ? true : undefined));
    // Nothing said while paused was replayed, and no keyword reached the agent.
    const texts = await inputs(p);
    expect(texts.some((t) => t.includes("[p1]") || t.includes("[p2]"))).toBe(false);
    expect(texts.some((t) => t.includes(RESUME) || t.includes(PAUSE))).toBe(false);
    expect(texts).toHaveLength(3);

    // 5. Stop closes the session through the close path: the harness is ended.
    await comment(p, "#1", STOP);
    const closed = await p.waitForEvent("the stop", (r) => r.event === "session.closed");
    expect(closed).toMatchObject({ work_item: REF, reason: "stopped" });
    await p.waitForEvent("the harness ended", (r) => r.event === "session.harness_terminated" && r.work_item === REF);
    // routing.tmux defaults: the tmux session is kept for its transcript, its harness is gone.
    expect(await paneState(p.socketName, target)).toBe("dead");
    const s1 = await comment(p, "#1", "Anyone there? [s1]");
    const stopped = await p.waitForEvent("the stopped item's drop", (r) => r.event === "routing.dropped" && r.delivery_id === s1);
    expect(stopped).toMatchObject({ work_item: REF, reason: "execution-stopped" });

    events = await p.events();
    expect(count(events, (r) => r.event === "session.spawned")).toBe(1);
    expect(await tmuxSessions(p.socketName)).toHaveLength(1);
    expect((await inputs(p)).some((t) => t.includes("[s1]"))).toBe(false);
    // Every control comment was applied once, from the comment, by alice.
    expect(events.filter((r) => r.event === "control.command").map((r) => [r.command, r.effect, r.command_source, r.actor])).toEqual([
      ["start", "started", "comment", "alice"],
      ["pause", "paused", "comment", "alice"],
      ["resume", "resumed", "comment", "alice"],
      ["stop", "stopped", "comment", "alice"],
    ]);
    expect(count(events, (r) => r.event === "control.rejected")).toBe(1);
  }, 60_000);

  it("gives the same states from `the-loop sessions …`, each leaving a marked comment the daemon does not act on", async () => {
    project = await gatedProject();
    const p = project;
    const actor = userInfo().username;
    await startDaemon(p);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    // Created armed: that arms it too, and starts nothing.
    expect((await p.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"])).code).toBe(0);
    const held = await p.waitForEvent("the armed item held", (r) => r.event === "routing.dropped" && r.reason === "awaiting-start");
    expect(held).toMatchObject({ work_item: REF, kind: "opened" });

    /**
     * The marked comment a command left: on the item, carrying the keyword and the marker, and
     * dropped by the daemon's poller as a self-echo, at debug level; nothing of it reaches the agent.
     */
    const markedComment = async (outcome: ControlJson, keyword: string): Promise<void> => {
      expect(outcome.comment?.posted, JSON.stringify(outcome)).toBe(true);
      const id = String(outcome.comment?.id);
      const posted = (await item(p)).comments.find((c) => c.id === id);
      expect(posted?.body).toContain(keyword);
      expect(posted?.body).toContain(SELF_COMMENT_MARKER);
      const dropped = await p.waitForEvent(`the daemon reading ${keyword} back`, (r) => r.event === "routing.dropped" && r.delivery_id === deliveryIdOf(id));
      expect(dropped).toMatchObject({ reason: "self-echo", level: "debug" });
    };

    // start: spawned here and now, by the CLI, as the local OS user.
    const started = await control(p, "start");
    expect(started.effect).toBe("started");
    await markedComment(started, START);
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    expect(spawned.work_item).toBe(REF);
    const target = String(spawned.tmux_target);
    await waitFor("the boot line", async () => (await p.transcript()).find((e) => e.type === "boot"));
    expect(await tmuxSessions(p.socketName)).toHaveLength(1);
    expect(await paneState(p.socketName, target)).toBe("alive");

    // pause: the daemon drops the item's comments.
    const paused = await control(p, "pause");
    expect(paused.effect).toBe("paused");
    await markedComment(paused, PAUSE);
    await p.waitForEvent("the pause", (r) => r.event === "session.paused" && r.command_source === "cli");
    let listed = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"]));
    expect(listed.sessions.map((s) => [s.workItem.ref, s.status, s.control?.command, s.control?.source])).toEqual([[REF, "paused", "pause", "cli"]]);
    const p1 = await comment(p, "#1", "Said while paused [p1].");
    const dropped = await p.waitForEvent("the paused drop", (r) => r.event === "dispatch.dropped" && r.delivery_id === p1);
    expect(dropped.reason).toBe("session-paused");

    // resume: the note reaches the agent, then the next comment does; the paused one never.
    const resumed = await control(p, "resume");
    expect(resumed.effect).toBe("resumed");
    await markedComment(resumed, RESUME);
    const note = await p.waitForEvent("the resume", (r) => r.event === "session.resumed" && r.command_source === "cli");
    expect(note.notified).toBe(true);
    await waitFor("the re-read note", async () => ((await inputs(p)).some((t) => t.includes("re-read the work item's thread")) ? true : undefined));
    const r1 = await comment(p, "#1", "After the resume [r1].");
    await p.waitForEvent("the delivery after the resume", (r) => r.event === "dispatch.succeeded" && r.delivery_id === r1);
    await waitFor("the comment after the resume", async () => ((await inputs(p)).some((t) => t.includes("[r1]")) ? true : undefined));
    expect((await inputs(p)).some((t) => t.includes("[p1]"))).toBe(false);

    // stop: closed through the close path; the item's comments start nothing.
    const stopped = await control(p, "stop");
    expect(stopped.effect).toBe("stopped");
    await markedComment(stopped, STOP);
    const closed = await p.waitForEvent("the stop", (r) => r.event === "session.closed");
    expect(closed).toMatchObject({ work_item: REF, reason: "stopped" });
    expect(await paneState(p.socketName, target)).toBe("dead");
    const s1 = await comment(p, "#1", "Anyone there? [s1]");
    const gated = await p.waitForEvent("the stopped item's drop", (r) => r.event === "routing.dropped" && r.delivery_id === s1);
    expect(gated.reason).toBe("execution-stopped");

    // A refused command posts nothing: resume with no live session.
    const before = (await item(p)).comments.length;
    const refused = await p.cli(["sessions", "resume", "--work-item", "#1", "--json"]);
    expect(refused.code, refused.stderr).toBe(1);
    expect(jsonOf<ControlJson & { reason: string }>(refused)).toMatchObject({ applied: false, reason: "nothing-to-resume" });
    await p.waitForEvent("the refused resume", (r) => r.event === "control.rejected" && r.reason === "nothing-to-resume" && r.command_source === "cli");
    expect((await item(p)).comments).toHaveLength(before);

    // --no-comment: the same command, and nothing on the thread.
    const again = await control(p, "start", "--no-comment");
    expect(again.effect).toBe("started");
    expect(again.comment).toBeUndefined();
    const respawned = await waitForCount(p, "the second spawn", 2, (r) => r.event === "session.spawned");
    const pausedQuietly = await control(p, "pause", "--no-comment");
    expect(pausedQuietly.effect).toBe("paused");
    expect(pausedQuietly.comment).toBeUndefined();
    listed = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json", "--status", "live"]));
    expect(listed.sessions.map((s) => [s.workItem.ref, s.status, s.tmuxTarget])).toEqual([[REF, "paused", respawned.tmux_target]]);
    // The new session's announcement is the only comment since (it is not a control comment).
    await waitForCount(p, "the second announcement", 2, (r) => r.event === "session.announced");
    const after = (await item(p)).comments.slice(before);
    expect(after.filter((c) => [START, PAUSE].some((keyword) => c.body.includes(keyword)))).toEqual([]);

    // Closing the item closes the paused session like an active one, and clears the pause.
    expect((await p.cli(["item", "close", "#1", "--as", "alice"])).code).toBe(0);
    const closedWithItem = await p.waitForEvent("the close", (r) => r.event === "session.closed" && r.reason === "item-closed");
    expect(closedWithItem.tmux_target).toBe(respawned.tmux_target);
    await p.waitForEvent("the pause cleared", (r) => r.event === "control.cleared" && r.work_item === REF);
    expect(await paneState(p.socketName, String(respawned.tmux_target))).toBe("dead");

    const events = await p.events();
    expect(events.filter((r) => r.event === "control.command").map((r) => [r.command, r.effect, r.command_source, r.actor])).toEqual([
      ["start", "started", "cli", actor],
      ["pause", "paused", "cli", actor],
      ["resume", "resumed", "cli", actor],
      ["stop", "stopped", "cli", actor],
      ["start", "started", "cli", actor],
      ["pause", "paused", "cli", actor],
    ]);
    expect(events.filter((r) => r.event === "control.announced").map((r) => r.command)).toEqual(["start", "pause", "resume", "stop"]);
    // The daemon never applied a command of its own: every one came from the CLI.
    expect(count(events, (r) => r.event === "control.command" && r.source === "daemon")).toBe(0);
  }, 60_000);
});
