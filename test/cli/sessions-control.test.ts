import { execFile } from "node:child_process";
import { mkdir, readFile, rename, utimes, writeFile } from "node:fs/promises";
import { request as httpRequest, createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it, vi } from "vitest";
import { controlSummary, runSessionsList } from "../../src/cli/commands/sessions/list.js";
import { DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import { compileVocabulary, parseControl } from "../../src/control/keywords.js";
import { ControlStore } from "../../src/control/store.js";
import type { ControlRecord } from "../../src/control/types.js";
import type { GraphState } from "../../src/graph-run/state.js";
import { openGraphStates } from "../../src/graph-run/store.js";
import { sessionRecordFiles } from "../../src/registry/listing.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";
import { jsonOf } from "../support/cli.js";
import type { CliResult } from "../support/cli.js";
import { FakeGitHub } from "../support/fake-github.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { ARM, sessionRecord } from "../support/builders.js";

/**
 * `the-loop sessions start|pause|resume|stop` against the real CLI, with no daemon running: the
 * command applies here (a start spawns the session in the CLI's own process), the list shows the
 * state and the last command, and each applied command leaves a marked comment carrying its
 * keyword on the work item — which the daemon, started afterwards, never acts on.
 */

const ACTOR = userInfo().username;
const run = promisify(execFile);
const vocabulary = compileVocabulary(DEFAULT_CONTROL_KEYWORDS);

let project: TestProject | undefined;
const stops: (() => Promise<void>)[] = [];

afterEach(async () => {
  vi.unstubAllEnvs();
  await project?.cleanup();
  project = undefined;
  for (const stop of stops.splice(0)) await stop();
});

interface ControlJson {
  workItem: string;
  command: string;
  applied: boolean;
  effect?: string;
  reason?: string;
  message?: string;
  session?: { tmuxTarget: string; status: string };
  comment?: { posted: boolean; id?: string; error?: string };
  pullRequest?: string;
}

interface ListJson {
  sessions: { workItem: { ref: string }; status: string; tmuxTarget: string; control: ControlRecord | null }[];
  controls: ControlRecord[];
  problems: unknown[];
}

interface ItemJson {
  ref: string;
  comments: { id: string; author: string; body: string }[];
}

function ok(result: CliResult): CliResult {
  expect(result.code, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);
  return result;
}

/** The pane of a tmux session: whether its harness still runs; undefined when the session is gone. */
async function paneDead(socketName: string, target: string): Promise<boolean | undefined> {
  try {
    const { stdout } = await run("tmux", ["-L", socketName, "list-panes", "-t", `=${target}`, "-F", "#{pane_dead}"]);
    return stdout.trim() === "1";
  } catch {
    return undefined;
  }
}

/** The row of the `sessions list` table for a work item, split into its columns. */
function row(table: string, ref: string): string[] {
  const line = table.split("\n").find((candidate) => candidate.startsWith(`${ref} `));
  if (line === undefined) throw new Error(`no row for ${ref} in:\n${table}`);
  return line.split(/ {2,}/);
}

/** The poller's delivery id for a local comment (`demo:c7` is change `demo:7`). */
const deliveryOf = (commentId: string): string => `poll-${commentId.replace(/:c(\d+)$/, ":$1")}`;

describe("the-loop sessions start|pause|resume|stop", () => {
  it("applies each command with no daemon, lists it, and leaves a marked comment the daemon never acts on", async () => {
    project = await testProject({ routing: { control: { requireStartCommand: true } } });
    const p = project;
    // The poller's cursor is set before anything happens, so the daemon started at the end reads
    // every comment the commands leave.
    ok(await p.cli(["start"]));
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    ok(await p.cli(["stop"]));

    ok(await p.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"]));
    ok(await p.cli(["item", "new", "Not armed", "--as", "alice"]));
    ok(await p.cli(["item", "new", "Held before it started", "--label", ARM, "--as", "alice"]));

    // start: spawns here, from the CLI's own process.
    const started = jsonOf<ControlJson>(ok(await p.cli(["sessions", "start", "--work-item", "#1", "--json"])));
    expect(started).toMatchObject({ workItem: "local:demo#1", command: "start", applied: true, effect: "started" });
    expect(started.session?.status).toBe("active");
    expect(started.comment).toMatchObject({ posted: true });
    const target = started.session?.tmuxTarget ?? "";
    expect(await paneDead(p.socketName, target)).toBe(false);
    const boot = await waitFor("the boot line", async () => (await p.transcript()).find((e) => e.type === "boot"));
    expect(boot.argv?.at(-1)).toContain("Add a health check");
    await p.waitForEvent("the session announcement", (r) => r.event === "session.announced" && r.work_item === "local:demo#1");
    await p.waitForEvent("the control announcement", (r) => r.event === "control.announced" && r.command === "start");

    let table = ok(await p.cli(["sessions", "list"])).stdout;
    expect(table.split("\n")[0]?.split(/ {2,}/)).toEqual(["work item", "status", "control", "harness", "usage", "tmux", "last event"]);
    expect(row(table, "local:demo#1").slice(0, 3)).toEqual(["local:demo#1", "active", `start (cli, ${ACTOR})`]);

    // pause
    const paused = ok(await p.cli(["sessions", "pause", "--work-item", "local:demo#1"]));
    expect(paused.stdout).toContain(`paused the session of local:demo#1 (${target})`);
    expect(paused.stdout).toContain("`the-loop sessions resume --work-item local:demo#1`");
    expect(paused.stdout).toMatch(/recorded on local:demo#1's thread \(comment demo:c\d+\)/);
    table = ok(await p.cli(["sessions", "list"])).stdout;
    expect(row(table, "local:demo#1").slice(0, 3)).toEqual(["local:demo#1", "paused", `pause (cli, ${ACTOR})`]);
    expect(ok(await p.cli(["sessions", "list", "--status", "paused"])).stdout).toContain("local:demo#1");

    // pause again: a no-op, exit 0, said so
    const again = ok(await p.cli(["sessions", "pause", "--work-item", "#1", "--no-comment"]));
    expect(again.stdout).toContain("already paused");

    // resume: active again, told to re-read the thread
    const resumed = jsonOf<ControlJson>(ok(await p.cli(["sessions", "resume", "--work-item", "#1", "--json"])));
    expect(resumed).toMatchObject({ applied: true, effect: "resumed", session: { status: "active" }, comment: { posted: true } });
    const note = await waitFor("the re-read note", async () => (await p.transcript()).find((e) => e.type === "input" && (e.text ?? "").includes("re-read")));
    expect(note.text).toContain(`resumed by ${ACTOR} (cli)`);
    table = ok(await p.cli(["sessions", "list"])).stdout;
    expect(row(table, "local:demo#1").slice(0, 3)).toEqual(["local:demo#1", "active", `resume (cli, ${ACTOR})`]);

    // stop: closed, the harness ended
    const stopped = ok(await p.cli(["sessions", "stop", "--work-item", "#1"]));
    expect(stopped.stdout).toContain(`stopped the session of local:demo#1 (${target})`);
    await p.waitForEvent("the close", (r) => r.event === "session.closed" && r.work_item === "local:demo#1");
    await waitFor("the harness to end", async () => ((await paneDead(p.socketName, target)) !== false ? true : undefined));

    // start on an item that is not armed: refused, nothing recorded, nothing posted.
    const refused = await p.cli(["sessions", "start", "--work-item", "#2"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain("local:demo#2 is not armed");
    expect(refused.stderr).toContain(ARM);
    const refusedJson = await p.cli(["sessions", "start", "--work-item", "#2", "--json"]);
    expect(refusedJson.code).toBe(1);
    expect(jsonOf<ControlJson>(refusedJson)).toMatchObject({ workItem: "local:demo#2", applied: false, reason: "not-armed" });

    // pause with no session, without a comment: recorded, listed as a row of its own.
    const held = jsonOf<ControlJson>(ok(await p.cli(["sessions", "pause", "--work-item", "#3", "--no-comment", "--json"])));
    expect(held).toEqual({ workItem: "local:demo#3", command: "pause", applied: true, effect: "recorded" });

    const listed = jsonOf<ListJson>(ok(await p.cli(["sessions", "list", "--json"])));
    expect(listed.sessions.map((s) => [s.workItem.ref, s.status, s.control?.command, s.control?.source, s.control?.actor])).toEqual([
      ["local:demo#1", "closed", "stop", "cli", ACTOR],
    ]);
    expect(listed.controls.map((c) => [c.ref, c.command, c.effect])).toEqual([["local:demo#3", "pause", "recorded"]]);
    table = ok(await p.cli(["sessions", "list"])).stdout;
    expect(row(table, "local:demo#1").slice(0, 3)).toEqual(["local:demo#1", "closed", `stop (cli, ${ACTOR})`]);
    expect(row(table, "local:demo#3")).toEqual(["local:demo#3", "-", `pause (cli, ${ACTOR})`, "-", "-", "-", "-"]);
    expect(table).not.toContain("local:demo#2");
    // A control-only row is not a session in any state.
    expect(ok(await p.cli(["sessions", "list", "--status", "closed"])).stdout).not.toContain("local:demo#3");
    expect(jsonOf<ListJson>(ok(await p.cli(["sessions", "list", "--json", "--status", "live"])))).toMatchObject({ sessions: [], controls: [] });

    // The thread: one marked comment per applied, commented command, each carrying its keyword.
    const item = (ref: string): Promise<ItemJson> => p.cli(["item", "show", ref, "--json"]).then((r) => jsonOf<ItemJson>(ok(r)));
    const controlComments = (await item("#1")).comments.filter((c) => parseControl(c.body.replace(SELF_COMMENT_MARKER, ""), vocabulary).kind !== "none");
    expect(controlComments.map((c) => parseControl(c.body.replace(SELF_COMMENT_MARKER, ""), vocabulary))).toEqual(
      ["start", "pause", "resume", "stop"].map((command) => ({ kind: "command", command })),
    );
    for (const comment of controlComments) {
      expect(comment.author).toBe("the-loop");
      expect(comment.body).toContain(SELF_COMMENT_MARKER);
      expect(comment.body).toContain(`by \`${ACTOR}\``);
    }
    expect((await item("#2")).comments).toEqual([]);
    expect((await item("#3")).comments).toEqual([]);

    // Every command is in the event log, with its source and actor (R4.7).
    const events = await p.events();
    expect(events.filter((r) => r.event === "control.command").map((r) => [r.work_item, r.command, r.command_source, r.actor, r.effect])).toEqual([
      ["local:demo#1", "start", "cli", ACTOR, "started"],
      ["local:demo#1", "pause", "cli", ACTOR, "paused"],
      ["local:demo#1", "pause", "cli", ACTOR, "noop"],
      ["local:demo#1", "resume", "cli", ACTOR, "resumed"],
      ["local:demo#1", "stop", "cli", ACTOR, "stopped"],
      ["local:demo#3", "pause", "cli", ACTOR, "recorded"],
    ]);
    expect(events.filter((r) => r.event === "control.rejected").map((r) => [r.work_item, r.command, r.command_source, r.reason])).toEqual([
      ["local:demo#2", "start", "cli", "not-armed"],
      ["local:demo#2", "start", "cli", "not-armed"],
    ]);
    expect(events.filter((r) => r.event === "control.announced").map((r) => r.command)).toEqual(["start", "pause", "resume", "stop"]);

    // The daemon reads every one of those comments, and acts on none: each is its own.
    ok(await p.cli(["start"]));
    const marked = (await item("#1")).comments.filter((c) => c.body.includes(SELF_COMMENT_MARKER));
    expect(marked.length).toBeGreaterThanOrEqual(controlComments.length);
    for (const comment of marked) {
      await p.waitForEvent(`the drop of ${comment.id}`, (r) => r.event === "routing.dropped" && r.delivery_id === deliveryOf(comment.id));
      const drop = (await p.events()).find((r) => r.event === "routing.dropped" && r.delivery_id === deliveryOf(comment.id));
      expect(drop?.reason).toBe("self-echo");
    }
    // The stop holds: the item's other events are dropped too, and nothing spawned again.
    const after = await p.events();
    expect(after.filter((r) => r.event === "control.command")).toHaveLength(6);
    expect(after.filter((r) => r.event === "session.spawned")).toHaveLength(1);
  }, 90_000);

  it("acts on the work item a pull request is bound to, as the keyword in a comment on that pull request would", async () => {
    const gh = await FakeGitHub.start({ token: "ghp_sessions-control-test" });
    stops.push(() => gh.stop());
    gh.addRepo("octo/repo");
    const issue = gh.addIssue("octo/repo", { title: "Add a health check", user: "alice", labels: [ARM] });
    const pull = gh.addPullRequest("octo/repo", { title: "Add a health check", user: "alice", head: "health-check" });
    project = await testProject({
      github: { apiUrl: gh.apiUrl },
      routing: { control: { requireStartCommand: true }, workspace: { enabled: false }, announce: { enabled: false } },
      polling: { enabled: false, sources: [] },
    });
    const p = project;
    const env = { GH_TOKEN: "ghp_sessions-control-test" };
    const [issueRef, pullRef] = [issue, pull].map((n) => `github:${gh.host}/octo/repo#${n}`) as [string, string];
    const started = jsonOf<ControlJson>(ok(await p.cli(["sessions", "start", "--work-item", issueRef, "--json", "--no-comment"], env)));
    expect(started.effect).toBe("started");
    ok(await p.cli(["sessions", "link-pr", "--work-item", issueRef, "--pull-request", String(pull)], env));

    // A pause keyword commented on the pull request pauses the issue's session (the router puts
    // the bound item first); so does the command naming the pull request.
    const paused = ok(await p.cli(["sessions", "pause", "--work-item", pullRef], env));
    expect(paused.stderr).toContain(`${pullRef} is bound to ${issueRef}`);
    expect(paused.stdout).toContain(`paused the session of ${issueRef} (${started.session?.tmuxTarget ?? ""})`);
    const listed = jsonOf<ListJson>(ok(await p.cli(["sessions", "list", "--json"], env)));
    expect(listed.sessions.map((s) => [s.workItem.ref, s.status, s.control?.command])).toEqual([[issueRef, "paused", "pause"]]);
    expect(listed.controls).toEqual([]);
    // The record is on the thread of the work item the command acted on.
    expect(gh.comments("octo/repo", issue).map((c) => c.body.split("\n")[0])).toEqual([DEFAULT_CONTROL_KEYWORDS.pause]);
    expect(gh.comments("octo/repo", pull)).toEqual([]);

    const resumed = jsonOf<ControlJson>(ok(await p.cli(["sessions", "resume", "--work-item", pullRef, "--json", "--no-comment"], env)));
    expect(resumed).toMatchObject({ workItem: issueRef, pullRequest: pullRef, applied: true, effect: "resumed" });
  }, 60_000);

  it("shows the last command with its source and actor, or that it was cleared", () => {
    const record: ControlRecord = {
      version: 1,
      ref: "github:octo/repo#15",
      command: "pause",
      source: "comment",
      actor: "alice",
      requestedAt: "2026-11-30T09:12:03.000Z",
      effect: "paused",
    };
    expect(controlSummary(record)).toBe("pause (comment, alice)");
    expect(controlSummary({ ...record, command: "stop", source: "cli", actor: "bob" })).toBe("stop (cli, bob)");
    expect(controlSummary({ ...record, command: "start", clearedAt: "2026-11-30T10:00:00.000Z", clearedBy: "item-closed" })).toBe("start (cleared)");
    expect(controlSummary(undefined)).toBe("-");
  });

  it("takes the work item from THE_LOOP_WORK_ITEM, and exits 2 without one", async () => {
    project = await testProject({ routing: { control: { requireStartCommand: true } } });
    const p = project;
    ok(await p.cli(["item", "new", "Held", "--as", "alice"]));
    const missing = await p.cli(["sessions", "stop"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--work-item");
    const stopped = ok(await p.cli(["sessions", "stop", "--no-comment"], { THE_LOOP_WORK_ITEM: "local:demo#1" }));
    expect(stopped.stdout).toContain("local:demo#1 has no live session; recorded the stop");
    const malformed = await p.cli(["sessions", "pause", "--work-item", "local:-bad#1"]);
    expect(malformed.code).toBe(2);
    const nothing = await p.cli(["sessions", "resume", "--work-item", "#1"]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain("local:demo#1 has no live session");
  });

  it("starts on the graph --graph names, and exits 2 on a name the config does not have", async () => {
    project = await testProject({ routing: { control: { requireStartCommand: true } }, graph: { enabled: true } });
    const p = project;
    ok(await p.cli(["item", "new", "A small fix", "--label", ARM, "--as", "alice"]));

    // An unknown name: exit 2 with the known ones, nothing recorded, nothing posted, nothing started.
    const unknown = await p.cli(["sessions", "start", "--work-item", "#1", "--graph", "no-such-graph"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no graph is named "no-such-graph" (--graph); known: work-item, adhoc');
    const malformed = await p.cli(["sessions", "start", "--work-item", "#1", "--graph", "../adhoc"]);
    expect(malformed.code).toBe(2);
    expect(jsonOf<ListJson>(ok(await p.cli(["sessions", "list", "--json"])))).toMatchObject({ sessions: [], controls: [] });

    // A known one: the item's run begins on it rather than on graph.default (work-item).
    const started = jsonOf<ControlJson & { graph?: string }>(ok(await p.cli(["sessions", "start", "--work-item", "#1", "--graph", "adhoc", "--json"])));
    expect(started).toMatchObject({ workItem: "local:demo#1", command: "start", graph: "adhoc", applied: true, effect: "started" });
    const status = jsonOf<{ graph: string; node: string }>(ok(await p.cli(["graph", "status", "#1", "--json"])));
    expect(status).toMatchObject({ graph: "adhoc", node: "work" });
    const listed = jsonOf<ListJson>(ok(await p.cli(["sessions", "list", "--json"])));
    expect(listed.sessions[0]?.control).toMatchObject({ command: "start", source: "cli", graph: "adhoc", note: "the-loop sessions start --graph adhoc" });
    // The thread's record carries the argument as a person would have written it.
    const comments = jsonOf<ItemJson>(ok(await p.cli(["item", "show", "#1", "--json"]))).comments;
    const posted = comments.find((c) => c.body.startsWith(DEFAULT_CONTROL_KEYWORDS.start));
    expect(posted?.body.split("\n")[0]).toBe(`${DEFAULT_CONTROL_KEYWORDS.start} graph=adhoc`);
    expect(parseControl(posted?.body.replace(SELF_COMMENT_MARKER, ""), vocabulary)).toEqual({ kind: "command", command: "start", graph: "adhoc" });

    // Only a start takes --graph.
    const pause = await p.cli(["sessions", "pause", "--work-item", "#1", "--graph", "adhoc"]);
    expect(pause.code).toBe(2);
  });

  it("exits 1 when the start is honoured but the session cannot be spawned, and keeps the start", async () => {
    project = await testProject({
      routing: { control: { requireStartCommand: true }, harnesses: { fake: { command: ["/nonexistent/harness", "{prompt}"] } } },
    });
    const p = project;
    ok(await p.cli(["item", "new", "Add a health check", "--label", ARM, "--as", "alice"]));
    const pending = await p.cli(["sessions", "start", "--work-item", "#1"]);
    expect(pending.code).toBe(1);
    expect(pending.stdout).toBe("");
    expect(pending.stderr).toContain("the start of local:demo#1 is recorded, but its session could not be spawned");
    expect(pending.stderr).toContain("/nonexistent/harness");
    expect(pending.stderr).toContain("retried at the item's next event or when the daemon starts");

    const json = await p.cli(["sessions", "start", "--work-item", "#1", "--json", "--no-comment"]);
    expect(json.code).toBe(1);
    expect(jsonOf<ControlJson>(json)).toMatchObject({ workItem: "local:demo#1", applied: true, effect: "start-pending" });
    const listed = jsonOf<ListJson>(ok(await p.cli(["sessions", "list", "--json"])));
    const standing = listed.sessions.find((s) => s.workItem.ref === "local:demo#1")?.control ?? listed.controls.find((c) => c.ref === "local:demo#1");
    expect(standing).toMatchObject({ command: "start", source: "cli", actor: ACTOR, effect: "start-pending" });
    // The start was applied, so it is on the thread (the first time; the second ran with --no-comment).
    const comments = jsonOf<ItemJson>(ok(await p.cli(["item", "show", "#1", "--json"]))).comments;
    expect(comments.map((c) => c.body.split("\n")[0])).toEqual([DEFAULT_CONTROL_KEYWORDS.start]);
  });

  it("keeps the command when the comment cannot be posted, and warns", async () => {
    const gh = await FakeGitHub.start({ token: "ghp_sessions-control-test" });
    stops.push(() => gh.stop());
    gh.addRepo("octo/repo");
    const issue = gh.addIssue("octo/repo", { title: "Hold this", user: "alice", labels: [ARM] });
    const proxy = await commentsFailingProxy(gh);
    stops.push(proxy.stop);
    project = await testProject({
      github: { apiUrl: proxy.apiUrl },
      routing: { control: { requireStartCommand: true }, workspace: { enabled: false } },
      polling: { enabled: false, sources: [] },
    });
    const p = project;
    const ref = `github:${proxy.host}/octo/repo#${issue}`;
    const env = { GH_TOKEN: "ghp_sessions-control-test" };

    const paused = await p.cli(["sessions", "pause", "--work-item", ref, "--json"], env);
    expect(paused.code, paused.stderr).toBe(0);
    expect(jsonOf<ControlJson>(paused)).toMatchObject({
      workItem: ref,
      applied: true,
      effect: "recorded",
      comment: { posted: false, error: expect.stringContaining("403") as unknown },
    });
    expect(paused.stderr).toContain(`could not post the pause comment on ${ref}`);
    expect(paused.stderr).toContain("the pause stands");
    expect(gh.comments("octo/repo", issue)).toEqual([]);

    const failed = await p.waitForEvent("the failed announcement", (r) => r.event === "control.announce_failed");
    expect(failed).toMatchObject({ work_item: ref, command: "pause" });
    const listed = jsonOf<ListJson>(ok(await p.cli(["sessions", "list", "--json"])));
    expect(listed.controls.map((c) => [c.ref, c.command, c.source, c.actor])).toEqual([[ref, "pause", "cli", ACTOR]]);

    // Without the proxy's refusal the same command posts.
    proxy.failComments = false;
    const again = jsonOf<ControlJson>(ok(await p.cli(["sessions", "pause", "--work-item", ref, "--json"], env)));
    expect(again.comment).toMatchObject({ posted: true });
    const [posted] = gh.comments("octo/repo", issue);
    expect(posted?.body.split("\n")[0]).toBe(DEFAULT_CONTROL_KEYWORDS.pause);
    expect(posted?.body).toContain(SELF_COMMENT_MARKER);
  });
});

/** A folder last changed a while ago: nothing can change it again within the same clock tick. */
const LONG_AGO = new Date("2026-01-01T00:00:00.000Z");

/** `the-loop sessions list` run in this process, with what it printed. */
async function listed(config: string, json = false): Promise<{ out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const outSpy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  const errSpy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    err.push(String(chunk));
    return true;
  });
  try {
    await runSessionsList({ config }, { json });
  } finally {
    outSpy.mockRestore();
    errSpy.mockRestore();
  }
  return { out: out.join(""), err: err.join("") };
}

/** A control record as a CLI command leaves it. */
function recordOf(ref: string, command: ControlRecord["command"], actor: string): ControlRecord {
  return { version: 1, ref, command, source: "cli", actor, requestedAt: "2026-11-30T09:00:00.000Z", effect: "recorded" };
}

/**
 * `sessions list` reads every item's last control command: with the start gate on, that is one
 * file per item that ever started. Ten thousand of them took about a second to read on every
 * listing (the session records beside them come from a cache in milliseconds), so the control
 * records are cached too, for as long as their folder is unchanged.
 */
describe("the-loop sessions list: the control column's cache", () => {
  it("reads the control records once while their folder is unchanged, and again as soon as it changes", async () => {
    const dir = await tempDir();
    vi.stubEnv("XDG_CACHE_HOME", join(dir, "xdg-cache"));
    const root = join(dir, ".the-loop");
    const controlDir = join(root, "sessions", "control");
    await mkdir(controlDir, { recursive: true });
    const config = join(root, "cli-config.yaml");
    await writeFile(config, "version: 1\nintegrations: {local: {project: demo}}\n");
    const store = new ControlStore({ dir: controlDir });
    await store.transaction("local:demo#3", (tx) => tx.write(recordOf("local:demo#3", "pause", "bob")));
    // A folder last changed a while ago: nothing can change it again within the same clock tick.
    await utimes(controlDir, LONG_AGO, LONG_AGO);
    const reads = vi.spyOn(ControlStore.prototype, "list");

    const first = await listed(config);
    expect(row(first.out, "local:demo#3")).toEqual(["local:demo#3", "-", "pause (cli, bob)", "-", "-", "-", "-"]);
    expect(reads).toHaveBeenCalledTimes(1);
    const again = await listed(config);
    expect(again.out).toBe(first.out);
    expect(reads).toHaveBeenCalledTimes(1);
    // --json shows whole records, kept apart from the table's column.
    for (let run = 0; run < 2; run++) {
      const json = JSON.parse((await listed(config, true)).out) as ListJson;
      expect(json.controls).toEqual([recordOf("local:demo#3", "pause", "bob")]);
    }
    expect(reads).toHaveBeenCalledTimes(2);

    // A command written since: the folder changed, so the listing reads it again.
    await store.transaction("local:demo#4", (tx) => tx.write(recordOf("local:demo#4", "stop", "carol")));
    const changed = await listed(config);
    expect(row(changed.out, "local:demo#3")[2]).toBe("pause (cli, bob)");
    expect(row(changed.out, "local:demo#4")[2]).toBe("stop (cli, carol)");
    expect(reads).toHaveBeenCalledTimes(3);
    const json = JSON.parse((await listed(config, true)).out) as ListJson;
    expect(json.controls.map((record) => record.ref)).toEqual(["local:demo#3", "local:demo#4"]);
    expect(reads).toHaveBeenCalledTimes(4);
    // Changed just now, within the clock's granularity of another change: not cached yet.
    await listed(config);
    expect(reads).toHaveBeenCalledTimes(5);

    // A damaged record is never cached away: it is reported on every listing until it is repaired.
    await writeFile(join(dir, "damaged.tmp"), "{ not json");
    await rename(join(dir, "damaged.tmp"), join(controlDir, "local-demo-9-0badf00d.json"));
    await utimes(controlDir, LONG_AGO, LONG_AGO);
    for (let run = 0; run < 2; run++) {
      const damaged = await listed(config);
      expect(damaged.err).toContain("local-demo-9-0badf00d.json: not valid JSON");
      expect(row(damaged.out, "local:demo#4")[2]).toBe("stop (cli, carol)");
    }
  });
});

/** A graph run of the built-in work-item graph waiting at its review gate. */
function graphStateOf(ref: string): GraphState {
  const at = "2026-11-30T09:00:00.000Z";
  const daemon = { kind: "daemon", id: "the-loop" } as const;
  return {
    version: 1,
    ref,
    graph: "work-item",
    loopRunId: "run-1",
    node: "review",
    phase: "review",
    status: "waiting",
    generation: 1,
    attempts: {},
    outcomes: { implement: "pass" },
    startedAt: at,
    updatedAt: at,
    history: [
      { at, kind: "started", node: "implement", actor: daemon },
      { at, kind: "entered", node: "review", from: "implement", actor: daemon },
    ],
  };
}

/** A local item of the project `demo`, as a session record carries it. */
function localItem(number: number): WorkItem {
  return { ref: `local:demo#${number}`, tracker: "local", host: "local", repository: "demo", number, kind: "issue", url: "", id: `demo-${number}` };
}

/**
 * The node column: where each item is in its graph, read from `<state.root>/graphs/` once per
 * listing. Without the process graph the table is as before; a graph state file that does not
 * read shows `?` on its item's row and is reported, and the rest still list.
 */
describe("the-loop sessions list: each item's graph node", () => {
  interface GraphListJson extends ListJson {
    sessions: (ListJson["sessions"][number] & { graph: unknown })[];
    problems: { file: string; message: string }[];
  }

  it("shows the node once an item has a graph run or the graph is on, and reports a damaged record without failing", async () => {
    const dir = await tempDir();
    vi.stubEnv("XDG_CACHE_HOME", join(dir, "xdg-cache"));
    const root = join(dir, ".the-loop");
    const paths = { root, graphsDir: join(root, "graphs") };
    await mkdir(root, { recursive: true });
    const config = join(root, "cli-config.yaml");
    await writeFile(config, "version: 1\nintegrations: {local: {project: demo}}\n");
    const sessions = sessionRecordFiles(join(root, "sessions"));
    for (const number of [1, 2]) {
      await sessions.transaction(`local:demo#${number}`, (tx) => tx.write(sessionRecord(localItem(number), { harness: "fake" })));
    }
    await new ControlStore({ dir: join(root, "sessions", "control") }).transaction("local:demo#3", (tx) => tx.write(recordOf("local:demo#3", "pause", "bob")));

    // No graph run and the graph off: the table is as it always was, and --json says there is no run.
    const before = await listed(config);
    expect(before.out.split("\n")[0]?.split(/ {2,}/)).toEqual(["work item", "status", "control", "harness", "usage", "tmux", "last event"]);
    const none = JSON.parse((await listed(config, true)).out) as GraphListJson;
    expect(none.sessions.map((s) => [s.workItem.ref, s.graph])).toEqual([
      ["local:demo#1", null],
      ["local:demo#2", null],
    ]);

    // The graph on, with no run yet: the column is there, every row at `-`.
    const enabled = join(root, "graph-config.yaml");
    await writeFile(enabled, "version: 1\nintegrations: {local: {project: demo}}\ngraph: {enabled: true}\n");
    const empty = await listed(enabled);
    expect(empty.out.split("\n")[0]?.split(/ {2,}/)).toEqual(["work item", "status", "control", "node", "harness", "usage", "tmux", "last event"]);
    expect(row(empty.out, "local:demo#1")[3]).toBe("-");

    // A run of #1 written into the state root: its node and status, with the graph off too.
    await openGraphStates(paths).transaction("local:demo#1", (tx) => tx.write(graphStateOf("local:demo#1")));
    await utimes(paths.graphsDir, LONG_AGO, LONG_AGO);
    for (let run = 0; run < 2; run++) {
      const table = await listed(config);
      expect(table.err).toBe("");
      expect(table.out.split("\n")[0]?.split(/ {2,}/)).toEqual(["work item", "status", "control", "node", "harness", "usage", "tmux", "last event"]);
      expect(row(table.out, "local:demo#1").slice(0, 4)).toEqual(["local:demo#1", "active", "-", "review (waiting)"]);
      expect(row(table.out, "local:demo#2")[3]).toBe("-");
      expect(row(table.out, "local:demo#3")).toEqual(["local:demo#3", "-", "pause (cli, bob)", "-", "-", "-", "-", "-"]);
    }
    // The listing keeps a few words of each record, not its history.
    const cache = JSON.parse(await readFile(join(root, "cache", "sessions-list-graph.json"), "utf8")) as { entries: unknown };
    expect(cache.entries).toEqual([["local:demo#1", "work-item", "review", "waiting", "review"]]);
    const json = JSON.parse((await listed(config, true)).out) as GraphListJson;
    expect(json.sessions.map((s) => [s.workItem.ref, s.graph])).toEqual([
      ["local:demo#1", { name: "work-item", node: "review", status: "waiting", phase: "review" }],
      ["local:demo#2", null],
    ]);

    // #2's graph state file does not read: `?` on its row, reported on every listing, the rest listed.
    const damagedFile = openGraphStates(paths).locate("local:demo#2");
    await writeFile(join(dir, "damaged.tmp"), "{ not json");
    await rename(join(dir, "damaged.tmp"), damagedFile);
    await utimes(paths.graphsDir, LONG_AGO, LONG_AGO);
    for (let run = 0; run < 2; run++) {
      const damaged = await listed(config);
      expect(damaged.err).toContain(`${damagedFile}: not valid JSON`);
      expect(row(damaged.out, "local:demo#1")[3]).toBe("review (waiting)");
      expect(row(damaged.out, "local:demo#2")[3]).toBe("?");
      expect(row(damaged.out, "local:demo#3")[3]).toBe("-");
    }
    const damagedJson = JSON.parse((await listed(config, true)).out) as GraphListJson;
    expect(damagedJson.sessions.map((s) => [s.workItem.ref, s.graph === null])).toEqual([
      ["local:demo#1", false],
      ["local:demo#2", true],
    ]);
    expect(damagedJson.problems).toEqual([{ file: damagedFile, message: expect.stringContaining("not valid JSON") as unknown }]);
  });
});

interface Proxy {
  readonly apiUrl: string;
  readonly host: string;
  failComments: boolean;
  stop(): Promise<void>;
}

/**
 * A pass-through in front of the fake GitHub that refuses every new comment (403, as GitHub does
 * for a token without write access), so reading the item works and posting on it fails.
 */
async function commentsFailingProxy(target: FakeGitHub): Promise<Proxy> {
  const server: Server = createServer((req, res) => {
    if (proxy.failComments && req.method === "POST" && /\/comments(?:\?|$)/.test(req.url ?? "")) {
      req.resume();
      res.writeHead(403, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "Resource not accessible by personal access token (403)" }));
      return;
    }
    const forward = httpRequest(
      { host: "127.0.0.1", port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
      (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, upstream.headers);
        upstream.pipe(res);
      },
    );
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const proxy: Proxy = {
    apiUrl: `http://127.0.0.1:${port}/api/v3`,
    host: `127.0.0.1:${port}`,
    failComments: true,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return proxy;
}
