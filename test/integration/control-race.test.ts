import { afterEach, describe, expect, it } from "vitest";
import type { EventRecord } from "../../src/events/reader.js";
import { jsonOf } from "../support/cli.js";
import type { CliResult } from "../support/cli.js";
import { sendWebhook } from "../support/fake-github.js";
import { ARM, TOKEN, webhookProject } from "../support/github-project.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { tmuxSessions } from "../support/e2e.js";

/**
 * The start race (docs/control.md, "Where it is kept"): an authorized start comment, read by the
 * running daemon, and `the-loop sessions start` in another process, on the same armed item at the
 * same moment. Whichever decides first spawns; the other finds the session and confirms it
 * (effect noop). Never two sessions, and the item's control record is the start.
 *
 * The CLI takes longer to reach its decision (a process start, its runtime, reading the item)
 * than a comment takes to reach the daemon, so the comment is sent when the CLI is about to
 * decide:
 *  - on GitHub, once the fake GitHub has served the CLI its read of the item (the last thing it
 *    does before it takes the item's control lock), after a delay that differs per item: six CLI
 *    processes at once on a small machine can take from a few to hundreds of milliseconds from
 *    that read to their claim;
 *  - on the local tracker, which has no such moment to watch, after an offset from the CLI's
 *    launch, spread around the comment's head start as measured first on two items of their own
 *    (started once each, unraced).
 * Some items are decided by the daemon first, some by the CLI, some with both deciding at once.
 * The offsets shape the inputs only; every outcome is waited for on the event log.
 */

const START = "the-loop:start-execution";
const ITEMS = 6;
/** Local tracker: each raced item's comment offset, as a share of the comment's measured head start. */
const SPREAD = [0.5, 0.75, 0.9, 1, 1.1, 1.3] as const;
/** GitHub: milliseconds from the CLI's read of the item to the comment's delivery, per item. */
const AFTER_READ = [0, 40, 100, 200, 400, 800] as const;
const SECRET = "webhook-secret-for-the-race";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface SessionsJson {
  sessions: { workItem: { ref: string }; status: string; control: { command: string; clearedAt?: string } | null }[];
}

const numberOf = (ref: string): number => Number(ref.slice(ref.lastIndexOf("#") + 1));

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until the daemon has applied the command of every one of these comment deliveries. */
async function appliedAll(p: TestProject, deliveries: readonly string[]): Promise<EventRecord[]> {
  const applied = async (): Promise<EventRecord[] | undefined> => {
    const events = await p.events();
    const done = deliveries.every((delivery) => events.some((r) => r.event === "control.command" && r.delivery_id === delivery));
    return done ? events : undefined;
  };
  try {
    return await waitFor("the daemon to apply every start comment", applied, { timeoutMs: 30_000, intervalMs: 50 });
  } catch (error) {
    const recent = (await p.events()).slice(-25).map((record) => JSON.stringify(record));
    throw new Error(`${(error as Error).message}\nlast events:\n${recent.join("\n")}`, { cause: error });
  }
}

/** Every `sessions start` exited 0 with an applied start (the session started here, or was there). */
function expectApplied(refs: readonly string[], results: readonly CliResult[]): void {
  for (const [index, result] of results.entries()) {
    expect(result.code, `${refs[index]}: ${result.stderr}${result.stdout}`).toBe(0);
    expect(["started", "noop"]).toContain(jsonOf<{ effect: string }>(result).effect);
  }
}

/**
 * How much sooner a comment's start is decided than the CLI's, in milliseconds: one unraced start
 * of each kind, on two items of their own, from launch to the `control.command` it led to.
 */
async function headStart(p: TestProject, cliItem: string, commentItem: string, comment: (ref: string) => Promise<string>): Promise<number> {
  const launched = Date.now();
  const [result, delivery] = await Promise.all([p.cli(["sessions", "start", "--work-item", cliItem, "--json"]), comment(commentItem)]);
  expectApplied([cliItem], [result]);
  const events = await appliedAll(p, [delivery]);
  const decided = (match: (record: EventRecord) => boolean): number => Date.parse(String(events.find(match)?.ts)) - launched;
  const cli = decided((r) => r.event === "control.command" && r.command_source === "cli" && r.work_item === cliItem);
  const byComment = decided((r) => r.event === "control.command" && r.delivery_id === delivery);
  return Math.max(0, cli - byComment);
}

/**
 * Launches `sessions start` on each raced item and, once `when` says so, its start comment; waits
 * until both sides are done with every item (the CLI exited, the daemon applied the comment's
 * command), then checks: one session per item, one tmux session per item, each item's two
 * commands one `started` and one `noop`, and the control record a standing start.
 */
async function race(
  p: TestProject,
  input: {
    readonly refs: readonly string[];
    readonly raced: readonly string[];
    readonly comment: (ref: string) => Promise<string>;
    /** Resolves when the comment on the index-th raced item should be sent, given the CLI's launch. */
    readonly when: (ref: string, index: number) => Promise<void>;
    readonly env?: Record<string, string>;
    /** Printed with the winners. */
    readonly how: string;
  },
): Promise<void> {
  const { refs, raced, comment, when, env = {} } = input;
  const cli: Promise<CliResult>[] = [];
  const comments: Promise<string>[] = [];
  raced.forEach((ref, index) => {
    cli.push(p.cli(["sessions", "start", "--work-item", ref, "--json"], env));
    comments.push(when(ref, index).then(() => comment(ref)));
  });
  const results = await Promise.all(cli);
  const deliveries = await Promise.all(comments);
  expectApplied(raced, results);
  // The daemon has applied every comment's command: the race is over on both sides.
  const events = await appliedAll(p, deliveries);

  const winners: string[] = [];
  for (const ref of raced) {
    const spawned = events.filter((r) => r.event === "session.spawned" && r.work_item === ref);
    expect(spawned, ref).toHaveLength(1);
    const commands = events.filter((r) => r.event === "control.command" && r.work_item === ref);
    expect(
      commands.map((r) => r.command),
      ref,
    ).toEqual(["start", "start"]);
    expect(commands.map((r) => r.effect).sort(), ref).toEqual(["noop", "started"]);
    const won = commands.find((r) => r.effect === "started");
    expect(won?.command_source, ref).toBe(spawned[0]?.source === "daemon" ? "comment" : "cli");
    winners.push(String(won?.command_source));
  }
  for (const ref of refs.filter((ref) => !raced.includes(ref))) {
    expect(
      events.filter((r) => r.event === "session.spawned" && r.work_item === ref),
      ref,
    ).toHaveLength(1);
  }
  expect(events.filter((r) => ["session.spawn_failed", "dispatch.failed", "control.rejected"].includes(String(r.event)))).toEqual([]);

  const listed = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json", "--status", "live"], env));
  expect(listed.sessions.map((s) => s.workItem.ref).sort()).toEqual([...refs].sort());
  for (const session of listed.sessions) {
    expect(session.status, session.workItem.ref).toBe("active");
    expect(session.control?.command, session.workItem.ref).toBe("start");
    expect(session.control?.clearedAt, session.workItem.ref).toBeUndefined();
  }
  expect(await tmuxSessions(p.socketName)).toHaveLength(refs.length);
  // Which side won each item, for a person reading a failure or checking the race stays real.
  console.info(`start race (${input.how}): ${raced.map((ref, index) => `${ref}=${winners[index]}`).join(" ")}`);
}

describe("a start comment and `the-loop sessions start` racing on the same armed item", () => {
  it("local tracker, read by the daemon's poller: one session per item, the record a start", async () => {
    project = await testProject({ routing: { control: { requireStartCommand: true }, announce: { enabled: false } } });
    const p = project;
    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    // Created side by side (the tracker serializes its writers), armed from the start, and with
    // the start keyword in the description, which is never a command: each is held.
    const created = await Promise.all(
      Array.from({ length: ITEMS + 2 }, (_, n) =>
        p.cli(["item", "new", `Task ${n + 1}`, "--body", `Please ${START}`, "--label", ARM, "--as", "alice", "--json"]),
      ),
    );
    const refs = created.map((result) => jsonOf<{ ref: string }>(result).ref);
    for (const ref of refs) {
      await p.waitForEvent(`${ref} armed and held`, (r) => r.event === "routing.dropped" && r.reason === "awaiting-start" && r.work_item === ref);
    }
    const comment = async (ref: string): Promise<string> => {
      const result = await p.cli(["item", "comment", ref, START, "--as", "alice", "--json"]);
      expect(result.code, result.stderr).toBe(0);
      // The poller's delivery id: the change id (`demo:7`) of the comment `demo:c7`.
      return `poll-${jsonOf<{ id: string }>(result).id.replace(/:c(\d+)$/, ":$1")}`;
    };
    const [cliItem, commentItem, ...raced] = refs as [string, string, ...string[]];
    const lead = await headStart(p, cliItem, commentItem, comment);
    await race(p, {
      refs,
      raced,
      comment,
      when: (_ref, index) => pause(Math.round(lead * (SPREAD[index % SPREAD.length] ?? 1))),
      how: `the comment measured ${lead} ms ahead`,
    });
  }, 90_000);

  it("GitHub, through the webhook receiver: one session per item, the record a start", async () => {
    const { gh, port, p } = await webhookProject({
      routing: { control: { requireStartCommand: true }, announce: { enabled: false }, workspace: { enabled: false } },
    });
    const env = { GH_TOKEN: TOKEN, THE_LOOP_GH_WEBHOOK_SECRET: SECRET };
    const started = await p.cli(["start", "--json"], env);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    const url = `http://127.0.0.1:${port}/gh-webhook`;
    // Opened armed, with the start keyword in the description, which is never a command: each is held.
    const issues = Array.from({ length: ITEMS }, (_, n) => gh.addIssue("octo/repo", { title: `Task ${n + 1}`, body: START, user: "alice", labels: [ARM] }));
    const refs = issues.map((issue) => `github:${gh.host}/octo/repo#${issue}`);
    for (const [index, issue] of issues.entries()) {
      const opened = await sendWebhook(url, { event: "issues", payload: gh.payload.issues("octo/repo", issue, "opened", "alice"), secret: SECRET });
      expect(opened.status, opened.body).toBe(202);
      const held = await p.waitForEvent(`${refs[index]} held`, (r) => r.event === "routing.dropped" && r.delivery_id === opened.deliveryId);
      expect(held).toMatchObject({ reason: "awaiting-start", kind: "opened", work_item: refs[index] });
    }
    const comment = async (ref: string): Promise<string> => {
      const issue = numberOf(ref);
      const posted = gh.addComment("octo/repo", issue, { user: "alice", body: START });
      const sent = await sendWebhook(url, { event: "issue_comment", payload: gh.payload.issueComment("octo/repo", issue, posted), secret: SECRET });
      expect(sent.status, sent.body).toBe(202);
      return sent.deliveryId;
    };
    // The CLI's read of the item: `GET /repos/octo/repo/issues/N`, which the daemon (no poller,
    // every event carrying the item) never makes.
    const readByCli = (ref: string): Promise<unknown> =>
      waitFor(`the CLI's read of ${ref}`, () => gh.requests.find((r) => r.method === "GET" && r.path === `/repos/octo/repo/issues/${numberOf(ref)}`), {
        timeoutMs: 30_000,
        intervalMs: 2,
      });
    await race(p, {
      refs,
      raced: refs,
      comment,
      when: async (ref, index) => {
        await readByCli(ref);
        await pause(AFTER_READ[index % AFTER_READ.length] ?? 0);
      },
      env,
      how: "each comment sent as the fake GitHub serves the CLI its read of the item",
    });
  }, 90_000);
});
