import { appendFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { notifySchema } from "../../src/config/notify-schema.js";
import { configSchema } from "../../src/config/schema.js";
import { MemoryEventSink } from "../../src/events/log.js";
import type { NotifyTransport } from "../../src/notify/delivery.js";
import { Notifier, followOtherProcesses, notifyKeywordsOf, teeEvents } from "../../src/notify/notifier.js";
import type { MomentEvent } from "../../src/notify/moments.js";
import type { SharedEventLog } from "../../src/events/table.js";
import { forgetKnownSecrets } from "../../src/secrets.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

afterEach(() => forgetKnownSecrets());

const KEYWORDS = notifyKeywordsOf(configSchema.parse({}));
const ENV = { TEAM_URL: "https://hooks.example.com/team/secret-one", OPS_URL: "https://hooks.example.com/ops/secret-two" };

function recording(): NotifyTransport & { posts: { url: string; body: Record<string, unknown> }[] } {
  const posts: { url: string; body: Record<string, unknown> }[] = [];
  return {
    posts,
    post(url, body) {
      posts.push({ url: url.href, body: JSON.parse(body) as Record<string, unknown> });
      return Promise.resolve({ status: 200 });
    },
  };
}

function notifierWith(sinks: unknown[], transport: NotifyTransport, events = new MemoryEventSink()): Notifier {
  return new Notifier({ config: notifySchema.parse({ sinks }), keywords: KEYWORDS, localTrackerDir: "/state/tracker", events, env: ENV, transport });
}

const WAITING: MomentEvent = {
  event: "graph.waiting",
  ts: "2026-12-02T08:00:00.000Z",
  work_item: "local:demo#1",
  graph: "spec-review",
  node: "review",
  reason: "review spec.md",
};
const DONE: MomentEvent = { event: "graph.completed", work_item: "local:demo#1", graph: "spec-review", node: "done" };

describe("notifyKeywordsOf", () => {
  it("takes the keywords the config sets", () => {
    const config = configSchema.parse({
      graph: { keywords: { approve: "lgtm:yes", requestChanges: "lgtm:no" } },
      routing: { control: { keywords: { start: "go:start", resume: "go:resume" } } },
    });
    expect(notifyKeywordsOf(config)).toEqual({ approve: "lgtm:yes", requestChanges: "lgtm:no", start: "go:start", resume: "go:resume" });
  });
});

describe("Notifier", () => {
  it("posts a moment to each sink that wants it, shaped for the sink's kind", async () => {
    const transport = recording();
    const notifier = notifierWith(
      [
        { name: "team", kind: "slack", urlEnv: "TEAM_URL" },
        { name: "ops", kind: "discord", urlEnv: "OPS_URL", moments: ["done"] },
      ],
      transport,
    );
    notifier.observe(WAITING);
    notifier.observe(DONE);
    notifier.observe({ event: "graph.advanced", work_item: "local:demo#1" });
    await notifier.idle();
    // Each sink has its own queue: the order between sinks is theirs, within one it is the events'.
    const bySink = transport.posts.map((post) => [post.url, Object.keys(post.body).sort().join(",")]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(bySink).toEqual([
      [ENV.OPS_URL, "allowed_mentions,content"],
      [ENV.TEAM_URL, "text"],
      [ENV.TEAM_URL, "text"],
    ]);
    const team = transport.posts.filter((post) => post.url === ENV.TEAM_URL);
    expect((team[1]?.body.text as string).split("\n")[0]).toContain("[the-loop] Done:");
    const first = team[0]?.body.text as string;
    expect(first).toContain("`the-loop:approve`");
    expect(first).toContain("Link: file:///state/tracker/demo/items/1.json");
    await notifier.close();
  });

  it("only queues: a sink that never answers holds up no caller", async () => {
    let posts = 0;
    const hanging: NotifyTransport = {
      post: (_url, _body, _timeout, signal) => {
        posts++;
        return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("the daemon stopped"))));
      },
    };
    const events = new MemoryEventSink();
    const notifier = notifierWith([{ name: "team", urlEnv: "TEAM_URL" }], hanging, events);
    const started = performance.now();
    for (let i = 1; i <= 1_000; i++) notifier.observe({ ...WAITING, work_item: `local:demo#${i}` });
    // A thousand moments queued while the first POST hangs, each observe returning at once.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(posts).toBe(1);
    // queueLimit (200) holds: the oldest waiting were given up, said one by one.
    expect(events.events.filter((event) => event.type === "notify.failed")).toHaveLength(1_000 - 1 - 200);
    await notifier.close(0);
    expect(events.events.filter((event) => event.type === "notify.failed")).toHaveLength(1_000);
  });

  it("names the keywords of a reloaded config from then on", async () => {
    const transport = recording();
    const notifier = notifierWith([{ name: "team", urlEnv: "TEAM_URL" }], transport);
    notifier.setKeywords({ ...KEYWORDS, approve: "ok:go" });
    notifier.observe(WAITING);
    await notifier.idle();
    expect((transport.posts[0]?.body.the_loop as { comment: string }).comment).toBe("ok:go");
    await notifier.close();
  });

  it("says what is wrong with a sink's URL at start, by the variable's name", () => {
    const notifier = notifierWith(
      [
        { name: "team", urlEnv: "TEAM_URL" },
        { name: "gone", urlEnv: "GONE_URL" },
      ],
      recording(),
    );
    expect(notifier.problems()).toEqual(["GONE_URL (the URL of the sink gone) is unset or empty in the daemon's environment; set it and restart the daemon"]);
    expect(notifier.active).toBe(true);
  });
});

describe("teeEvents", () => {
  it("writes each event to the sink, then hands it on with its type and time", () => {
    const events = new MemoryEventSink();
    const seen: MomentEvent[] = [];
    const tee = teeEvents(
      events,
      (event) => seen.push(event),
      () => new Date("2026-12-02T08:00:00.000Z"),
    );
    tee.emit("graph.completed", { work_item: "local:demo#1", graph: "g", node: "done", generation: 1, actor: "alice", actor_kind: "human" });
    expect(events.events.map((event) => event.type)).toEqual(["graph.completed"]);
    expect(seen).toEqual([
      {
        event: "graph.completed",
        ts: "2026-12-02T08:00:00.000Z",
        work_item: "local:demo#1",
        graph: "g",
        node: "done",
        generation: 1,
        actor: "alice",
        actor_kind: "human",
      },
    ]);
    expect(tee.batch).toBeUndefined();
  });

  it("keeps what observe throws from the code that emitted the event", () => {
    const events = new MemoryEventSink();
    const tee = teeEvents(events, () => {
      throw new Error("boom");
    });
    expect(() => tee.emit("item.closed", { work_item: "local:demo#1", actor: "alice" })).not.toThrow();
    expect(events.events).toHaveLength(1);
  });

  it("keeps the sink's batch", () => {
    const lines: string[] = [];
    const sink = {
      emit: (type: string) => lines.push(type),
      batch: <R>(work: () => R): R => {
        lines.push("batch");
        return work();
      },
    };
    const tee = teeEvents(sink as never, () => undefined);
    expect(tee.batch?.(() => 7)).toBe(7);
    expect(lines).toEqual(["batch"]);
  });
});

describe("followOtherProcesses", () => {
  it("hands on what other processes append after it caught up, and none of this process's", async () => {
    const log = join(await tempDir(), "events.jsonl");
    const line = (pid: number, event: string) =>
      `${JSON.stringify({ ts: "2026-12-02T08:00:00.000Z", source: "cli", event, level: "info", pid, work_item: "local:demo#1" })}\n`;
    await writeFile(log, line(1, "graph.blocked"));
    const seen: string[] = [];
    const stop = new AbortController();
    const follower = followOtherProcesses(
      log,
      (event) => seen.push(`${String(event.pid)}:${event.event}`),
      stop.signal,
      () => undefined,
    );
    await follower.caughtUp;
    await appendFile(log, line(process.pid, "graph.waiting") + line(process.pid + 1, "graph.completed"));
    await waitFor("the appended event", () => (seen.length > 0 ? seen : undefined), { timeoutMs: 5_000, intervalMs: 20 });
    stop.abort();
    await follower.done;
    expect(seen).toEqual([`${process.pid + 1}:graph.completed`]);
  });

  it("on a shared event table skips only the events with this process's pid and this daemon's name", async () => {
    const rows = [
      { pid: process.pid, recorded_by: "daemon-a", event: "graph.waiting" },
      { pid: process.pid, recorded_by: "daemon-b", event: "graph.blocked" },
      { pid: process.pid + 1, recorded_by: "daemon-a", event: "graph.completed" },
    ];
    const table: SharedEventLog = {
      where: "a table",
      writer: "daemon-a",
      append: () => undefined,
      flush: async () => undefined,
      read: async () => ({ events: [], matched: 0 }),
      readLatest: async () => ({ events: [], malformed: 0, scannedBytes: 0, reachedStart: true, missing: false }),
      async follow(_filter, onEvent, _signal, options) {
        options?.onCaughtUp?.();
        for (const row of rows) onEvent({ ts: "2026-12-02T08:00:00.000Z", source: "daemon", level: "info", work_item: "local:demo#1", ...row });
      },
    };
    const seen: string[] = [];
    const follower = followOtherProcesses(
      "unused",
      (event) => seen.push(`${String(event.recorded_by)}:${event.event}`),
      new AbortController().signal,
      () => undefined,
      table,
    );
    await follower.done;
    expect(seen).toEqual(["daemon-b:graph.blocked", "daemon-a:graph.completed"]);
  });
});
