import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { EventLog } from "../../src/events/log.js";
import type { EventRecord } from "../../src/events/reader.js";
import type { SharedEventLog } from "../../src/events/table.js";
import { rememberSecret } from "../../src/secrets.js";
import { PostgresDatabase } from "../../src/state/postgres/database.js";
import { PostgresEventTable } from "../../src/state/postgres/event-table.js";
import { tableEventLog } from "../../src/stores/event-log.js";
import { copyEventLog } from "../../src/stores/migrate-events.js";
import { postgresServer } from "../support/postgres.js";

/** The event log as a table, on a real server: appends, the readers' filters, live follow across processes, the one-time copy of a file log. */

const cluster = postgresServer();
const opened: PostgresDatabase[] = [];
const stops: AbortController[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) stop.abort();
  await Promise.all(opened.splice(0).map((database) => database.close()));
});

async function open(url: string, name = "test"): Promise<PostgresDatabase> {
  const database = await PostgresDatabase.open({ url, name, lockTimeoutMs: 2_000 });
  opened.push(database);
  return database;
}

async function twoHosts(): Promise<{ url: string; a: SharedEventLog; b: SharedEventLog; logA: EventLog; logB: EventLog }> {
  const url = await cluster.freshDatabase();
  const a = tableEventLog({ database: await open(url, "alpha"), host: "alpha" });
  const b = tableEventLog({ database: await open(url, "beta"), host: "beta" });
  return {
    url,
    a,
    b,
    logA: new EventLog({ path: "/nonexistent/events.jsonl", source: "daemon", table: a }),
    logB: new EventLog({ path: "/nonexistent/events.jsonl", source: "cli", table: b }),
  };
}

/** Resolves with the first `count` events `follow` delivers (bounded: the test's timeout). */
function collect(
  log: SharedEventLog,
  count: number,
  options: { backlog?: number; workItem?: string } = {},
): { caughtUp: Promise<void>; events: Promise<EventRecord[]>; seen: EventRecord[] } {
  const stop = new AbortController();
  stops.push(stop);
  const events: EventRecord[] = [];
  let caughtUp: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (caughtUp = resolve));
  const done = new Promise<EventRecord[]>((resolve, reject) => {
    log
      .follow(
        options.workItem !== undefined ? { workItem: options.workItem } : {},
        (record) => {
          events.push(record);
          if (events.length === count) {
            resolve(events);
            stop.abort();
          }
        },
        stop.signal,
        { backlog: options.backlog ?? 0, onCaughtUp: () => caughtUp() },
      )
      .then(() => resolve(events), reject);
  });
  return { caughtUp: ready, events: done, seen: events };
}

describe("the event table", () => {
  it("keeps each event as the sink wrote it, redacted, in order, with the name of its writer", async () => {
    const { b, logA } = await twoHosts();
    const secret = "s3cr3t-token-value-for-the-table";
    rememberSecret(secret);
    logA.emit("session.announced", {
      work_item: "GH:Acme/Repo#7",
      harness: "claude",
      tmux_session: "t",
      workspace: "/w",
      branch: "b",
      error: undefined,
    } as never);
    logA.emit("daemon.unhandled_rejection", { error: `a hook said ${secret} and ${encodeURIComponent(secret)}` } as never);
    await logA.flush();
    const read = await b.read({}, 0);
    expect(read.matched).toBe(2);
    expect(read.events.map((event) => [event.event, event.recorded_by, event.source])).toEqual([
      ["session.announced", "alpha", "daemon"],
      ["daemon.unhandled_rejection", "alpha", "daemon"],
    ]);
    expect(Object.keys(read.events[0] ?? {}).slice(0, 6)).toEqual(["ts", "source", "event", "level", "pid", "recorded_by"]);
    expect(JSON.stringify(read.events)).not.toContain(secret);
    expect(JSON.stringify(read.events)).toContain("[redacted]");
  });

  it("answers the file readers' filters: type globs, work item in any case, source, level, since, the last N", async () => {
    const { a, logA, logB } = await twoHosts();
    // Flushed one by one: two writers' rows are in the order their inserts reached the table.
    logA.emit("session.announced", { work_item: "gh:acme/repo#1", harness: "h", tmux_session: "t", workspace: "/w", branch: "b" } as never);
    await logA.flush();
    logB.emit("session.closed", { work_item: "gh:acme/repo#2", reason: "r" } as never);
    await logB.flush();
    logA.emit("daemon.started", { services: ["poller"], work_items: ["GH:ACME/REPO#2"] } as never);
    await logA.flush();
    const types = (events: readonly EventRecord[]): string[] => events.map((event) => event.event);
    expect(types((await a.read({ types: ["session.*"] }, 0)).events)).toEqual(["session.announced", "session.closed"]);
    expect(types((await a.read({ workItem: "gh:acme/repo#2" }, 0)).events)).toEqual(["session.closed", "daemon.started"]);
    expect(types((await a.read({ source: "cli" }, 0)).events)).toEqual(["session.closed"]);
    expect(types((await a.read({ since: new Date(Date.now() + 60_000) }, 0)).events)).toEqual([]);
    expect(types((await a.read({ minLevel: "error" }, 0)).events)).toEqual([]);
    const last = await a.read({}, 2);
    expect([types(last.events), last.matched]).toEqual([["session.closed", "daemon.started"], 3]);
    const latest = await a.readLatest({}, 2);
    expect([types(latest.events), latest.reachedStart]).toEqual([["daemon.started", "session.closed"], false]);
    expect((await a.readLatest({}, 5)).reachedStart).toBe(true);
  });

  it("follows another process's appends by LISTEN/NOTIFY, after the backlog it asked for", async () => {
    const { a, b, logA, logB } = await twoHosts();
    logA.emit("daemon.unhandled_rejection", { error: "before" } as never);
    await logA.flush();
    const followed = collect(b, 3, { backlog: 1 });
    await followed.caughtUp;
    logA.emit("daemon.unhandled_rejection", { error: "after, from alpha" } as never);
    await logA.flush();
    logB.emit("daemon.unhandled_rejection", { error: "after, from beta" } as never);
    await logB.flush();
    const events = await followed.events;
    expect(events.map((event) => [event.error, event.recorded_by])).toEqual([
      ["before", "alpha"],
      ["after, from alpha", "alpha"],
      ["after, from beta", "beta"],
    ]);
    expect((await a.read({}, 0)).matched).toBe(3);
  });

  it("delivers a row whose commit came after a newer id's", async () => {
    const { url, b } = await twoHosts();
    const followed = collect(b, 2);
    await followed.caughtUp;
    const slow = new pg.Client({ connectionString: url });
    const fast = new pg.Client({ connectionString: url });
    await Promise.all([slow.connect(), fast.connect()]);
    const insert = (message: string): string =>
      `INSERT INTO the_loop_events (ts, host, source, event, level, body) VALUES (now(), 'raw', 'daemon', 'daemon.warning', 'warning', '{"ts":"2026-01-01T00:00:00.000Z","source":"daemon","event":"daemon.warning","level":"warning","message":"${message}"}')`;
    try {
      await slow.query("BEGIN");
      await slow.query(insert("smaller id, committed last"));
      await fast.query(insert("larger id, committed first"));
      await expect.poll(() => followed.seen.length, { timeout: 10_000 }).toBe(1);
      await slow.query("COMMIT");
      const events = await followed.events;
      expect(events.map((event) => event.message)).toEqual(["larger id, committed first", "smaller id, committed last"]);
    } finally {
      await Promise.all([slow.end(), fast.end()]);
    }
  });

  it("copies a file log once: counted, verified, identical lines kept, non-events reported", async () => {
    const url = await cluster.freshDatabase();
    const database = await open(url);
    const dir = await mkdtemp(join(tmpdir(), "the-loop-events-"));
    try {
      const line = (message: string): string =>
        JSON.stringify({ ts: "2026-01-01T00:00:00.000Z", source: "daemon", event: "daemon.warning", level: "warning", pid: 1, message });
      const file = join(dir, "events.jsonl");
      await writeFile(file, [line("one"), line("two"), line("two"), "not json", ""].join("\n"));
      const table = new PostgresEventTable({ database, host: "old-host" });
      const first = await copyEventLog(file, table);
      expect(first).toMatchObject({ name: "events", files: 3, copied: 3, unchanged: 0, verified: true });
      expect(first.problems).toHaveLength(1);
      const again = await copyEventLog(file, table);
      expect(again).toMatchObject({ files: 3, copied: 0, unchanged: 3, verified: true });
      expect(await table.count()).toBe(3);
      const read = await tableEventLog({ database, host: "x" }).read({}, 0);
      expect(read.events.map((event) => [event.message, event.recorded_by])).toEqual([
        ["one", "old-host"],
        ["two", "old-host"],
        ["two", "old-host"],
      ]);
      expect(await copyEventLog(join(dir, "none.jsonl"), table)).toMatchObject({ files: 0, copied: 0, verified: true });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
