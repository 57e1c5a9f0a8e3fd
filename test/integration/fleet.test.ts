import { promises as fs } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { isProcessAlive } from "../../src/daemon/pidfile.js";
import type { EventRecord } from "../../src/events/index.js";
import { StartQueue, startQueueFile } from "../../src/registry/start-queue.js";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * docs/fleet.md: routing.limits.maxLiveSessions through a real daemon, the local tracker and the
 * fake harness in tmux. Four armed items give two live sessions and two queued starts; closing a
 * session starts the head of the queue within a second; the queue survives a `kill -9`.
 */

/** Waits that span a restart: a lock left by the killed daemon goes stale after 10 s. */
const LONG_WAIT_MS = 45_000;

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface SessionsJson {
  readonly sessions: readonly { readonly workItem: { readonly ref: string }; readonly status: string }[];
  readonly queued: readonly { readonly ref: string; readonly status: string; readonly position: number }[];
}

const named = (event: string) => (record: EventRecord) => record.event === event;

async function countOf(p: TestProject, event: string): Promise<EventRecord[]> {
  return (await p.events()).filter(named(event));
}

async function daemonPid(p: TestProject): Promise<number> {
  const holder = JSON.parse(await fs.readFile(join(p.root, "poll.pid"), "utf8")) as { pid: number };
  return holder.pid;
}

describe("concurrency caps with a persistent queue (real daemon, fake harness)", () => {
  it(
    "queues starts beyond maxLiveSessions in order, starts the next when a session closes, and keeps the queue across kill -9",
    { timeout: 150_000 },
    async () => {
      project = await testProject({ routing: { limits: { maxLiveSessions: 2 } } });
      const p = project;
      const started = await p.cli(["start", "--json"]);
      expect(started.code, started.stderr + started.stdout).toBe(0);
      await p.waitForEvent("the baseline", named("poll.baseline"));
      for (const title of ["one", "two", "three", "four"]) {
        const opened = await p.cli(["item", "new", title, "--label", ARM, "--as", "alice"]);
        expect(opened.code, opened.stderr).toBe(0);
      }

      await waitFor(
        "two spawned, two queued",
        async () => ((await countOf(p, "session.spawned")).length >= 2 && (await countOf(p, "session.queued")).length >= 2 ? true : undefined),
        {
          timeoutMs: 30_000,
          intervalMs: 50,
        },
      );
      const spawned = await countOf(p, "session.spawned");
      const queued = await countOf(p, "session.queued");
      expect(spawned).toHaveLength(2);
      expect(queued.map((record) => record.position)).toEqual([1, 2]);
      expect(queued.every((record) => record.cap === "routing.limits.maxLiveSessions 2")).toBe(true);
      const queue = new StartQueue({ file: startQueueFile(p.root) });
      expect(queue.read().map((entry) => entry.ref)).toEqual(queued.map((record) => record.work_item));

      // The queued items carry a marked comment with their position.
      const [first, second] = queued.map((record) => String(record.work_item));
      const shown = await p.cli(["item", "show", first!, "--json"]);
      expect(shown.stdout).toContain("position 1 in the start queue");

      // sessions list shows them, with their places.
      const listed = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"]));
      expect(listed.queued.map((entry) => [entry.ref, entry.status, entry.position])).toEqual([
        [first, "queued", 1],
        [second, "queued", 2],
      ]);

      // why says where it waits, and status counts each cap.
      const why = await p.cli(["why", second!, "--json"]);
      expect(why.stdout).toContain("waiting for a slot: 1 ahead, cap routing.limits.maxLiveSessions 2 reached");
      const status = jsonOf<{ limits?: unknown }>(await p.cli(["status", "--json"]));
      expect(status.limits).toEqual({ caps: [{ cap: "maxLiveSessions", live: 2, limit: 2 }], queued: 2 });

      // Closing a live session starts the head of the queue within a second.
      const closing = String(spawned[0]!.work_item);
      const closed = await p.cli(["sessions", "close", "--work-item", closing, "--json"]);
      expect(closed.code, closed.stderr).toBe(0);
      const closedAt = Date.parse(String((await p.waitForEvent("the close", (r) => r.event === "session.closed" && r.work_item === closing)).ts));
      const dequeued = await p.waitForEvent("the head dequeued", (r) => r.event === "session.dequeued" && r.work_item === first);
      expect(dequeued.reason).toBe("slot-free");
      const third = await p.waitForEvent("the head spawned", (r) => r.event === "session.spawned" && r.work_item === first);
      expect(Date.parse(String(third.ts)) - closedAt).toBeLessThan(1_000);
      expect(queue.read().map((entry) => entry.ref)).toEqual([second]);

      // kill -9: the queue is a file, written atomically; the restarted daemon keeps it.
      const pid = await daemonPid(p);
      process.kill(pid, "SIGKILL");
      await waitFor("the daemon gone", async () => (isProcessAlive(pid) ? undefined : true), { timeoutMs: 10_000, intervalMs: 50 });
      expect(queue.read().map((entry) => entry.ref)).toEqual([second]);
      const restarted = await p.cli(["start", "--json"]);
      expect(restarted.code, restarted.stderr + restarted.stdout).toBe(0);
      await waitFor("the restart", async () => ((await countOf(p, "daemon.started")).length >= 2 ? true : undefined), {
        timeoutMs: LONG_WAIT_MS,
        intervalMs: 50,
      });
      expect(queue.read().map((entry) => entry.ref)).toEqual([second]);

      // And it goes on in order after the restart: the next close starts the last one. The
      // restarted daemon's looks at the queue before that close (twice a second) left it queued:
      // its one start comes after the close, not at the restart.
      const closingNext = String(spawned[1]!.work_item);
      expect((await p.cli(["sessions", "close", "--work-item", closingNext])).code).toBe(0);
      const nextClosedAt = Date.parse(String((await p.waitForEvent("the next close", (r) => r.event === "session.closed" && r.work_item === closingNext)).ts));
      await p.waitForEvent("the last one spawned", (r) => r.event === "session.spawned" && r.work_item === second, LONG_WAIT_MS);
      const secondStarts = (await countOf(p, "session.spawned")).filter((r) => r.work_item === second);
      expect(secondStarts).toHaveLength(1);
      expect(Date.parse(String(secondStarts[0]!.ts))).toBeGreaterThanOrEqual(nextClosedAt);
      expect(queue.read()).toEqual([]);
      const live = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json", "--status", "live"]));
      expect(live.sessions.map((session) => session.workItem.ref).sort()).toEqual([first, second].sort());
    },
  );

  it("queues an operator's start beyond the cap as a pending start, and a stop takes it out of the queue", { timeout: 120_000 }, async () => {
    project = await testProject({ routing: { control: { requireStartCommand: true }, limits: { maxLiveSessions: 1 } } });
    const p = project;
    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", named("poll.baseline"));
    for (const title of ["one", "two", "three"]) {
      expect((await p.cli(["item", "new", title, "--label", ARM, "--as", "alice"])).code).toBe(0);
    }
    const first = jsonOf<{ effect: string }>(await p.cli(["sessions", "start", "--work-item", "#1", "--json"]));
    expect(first.effect).toBe("started");
    const secondRun = await p.cli(["sessions", "start", "--work-item", "#2", "--json"]);
    // Queued is not a failure: the start stands and starts by itself.
    expect(secondRun.code, secondRun.stderr).toBe(0);
    const second = jsonOf<{ effect: string; problem?: string }>(secondRun);
    expect(second.effect).toBe("start-pending");
    expect(second.problem).toContain("queued at position 1");
    const third = jsonOf<{ effect: string; problem?: string }>(await p.cli(["sessions", "start", "--work-item", "#3", "--json"]));
    expect(third.problem).toContain("queued at position 2");
    const queue = new StartQueue({ file: startQueueFile(p.root) });
    expect(queue.read().map((entry) => entry.ref)).toEqual(["local:demo#2", "local:demo#3"]);

    // A stop takes #2 out: recorded as any stop, and it never starts.
    expect((await p.cli(["sessions", "stop", "--work-item", "#2", "--json"])).code).toBe(0);
    const left = await p.waitForEvent("#2 dequeued", (r) => r.event === "session.dequeued" && r.work_item === "local:demo#2");
    expect(left.reason).toBe("stopped");
    expect(queue.read().map((entry) => entry.ref)).toEqual(["local:demo#3"]);

    // The slot #1 frees goes to #3, the head now.
    expect((await p.cli(["sessions", "close", "--work-item", "#1"])).code).toBe(0);
    await p.waitForEvent("#3 spawned", (r) => r.event === "session.spawned" && r.work_item === "local:demo#3");
    expect(queue.read()).toEqual([]);
    expect((await p.events()).some((r) => r.event === "session.spawned" && r.work_item === "local:demo#2")).toBe(false);
  });

  it("takes a cap a config reload raises or lowers at the next start, and ends no session for it", { timeout: 120_000 }, async () => {
    project = await testProject({ routing: { limits: { maxLiveSessions: 1 } } });
    const p = project;
    const configFile = join(p.root, "cli-config.yaml");
    const withCap = async (cap: number): Promise<void> => {
      const config = parse(await readFile(configFile, "utf8")) as { routing: { limits: { maxLiveSessions: number } } };
      config.routing.limits.maxLiveSessions = cap;
      await writeFile(configFile, stringify(config));
    };
    expect((await p.cli(["start", "--json"])).code).toBe(0);
    await p.waitForEvent("the baseline", named("poll.baseline"));
    for (const title of ["one", "two"]) expect((await p.cli(["item", "new", title, "--label", ARM, "--as", "alice"])).code).toBe(0);
    await waitFor(
      "one spawned, one queued",
      async () => ((await countOf(p, "session.queued")).length >= 1 && (await countOf(p, "session.spawned")).length >= 1 ? true : undefined),
      {
        timeoutMs: 30_000,
        intervalMs: 50,
      },
    );

    // Raised: the queued start takes the new slot.
    await withCap(2);
    await p.waitForEvent("the raise", (r) => r.event === "config.reloaded" && JSON.stringify(r.applied).includes("routing.limits.maxLiveSessions"));
    await waitFor("both live", async () => ((await countOf(p, "session.spawned")).length >= 2 ? true : undefined), { timeoutMs: 20_000, intervalMs: 50 });

    // Lowered: both keep running, and a new start waits.
    await withCap(1);
    await waitFor("the lowering", async () => ((await countOf(p, "config.reloaded")).length >= 2 ? true : undefined), { timeoutMs: 20_000, intervalMs: 50 });
    expect((await p.cli(["item", "new", "three", "--label", ARM, "--as", "alice"])).code).toBe(0);
    const queued = await p.waitForEvent("#3 queued", (r) => r.event === "session.queued" && r.work_item === "local:demo#3");
    expect(queued.cap).toBe("routing.limits.maxLiveSessions 1");
    expect(await countOf(p, "session.closed")).toEqual([]);
    const live = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json", "--status", "live"]));
    expect(live.sessions).toHaveLength(2);
  });
});
