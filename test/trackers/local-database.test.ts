import { promises as fs } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { PostgresDatabase } from "../../src/state/index.js";
import { LocalTracker, copyTrackerToDatabase, openLocalTracker } from "../../src/trackers/local/index.js";
import { parseWorkItemRef } from "../../src/workitem/index.js";
import { postgresServer } from "../support/postgres.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

/**
 * The local tracker on PostgreSQL (trackers/local/database-tracker.ts), on a real server: two
 * processes (two state roots, two connections to one database) share one local project — an item
 * opened from one is listed, read, commented and fed from the other, and the other's watch hears it.
 */

const cluster = postgresServer();
const opened: PostgresDatabase[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((database) => database.close()));
});

async function host(url: string, name: string) {
  const database = await PostgresDatabase.open({ url, name, lockTimeoutMs: 5_000 });
  opened.push(database);
  const events = new MemoryEventSink();
  return { tracker: openLocalTracker({ trackerDir: `${await tempDir()}/tracker`, events, database }), events };
}

it("two hosts share a local project: what one opens the other lists, reads, comments and finds in its change feed", async () => {
  const url = await cluster.freshDatabase();
  const one = await host(url, "host-a");
  const two = await host(url, "host-b");
  const start = await two.tracker.changesSince({}, undefined);
  let told = 0;
  const stop = two.tracker.watchChanges(
    {},
    () => (told += 1),
    () => undefined,
  );
  try {
    const item = await one.tracker.openItem({ project: "demo", title: "fix it", body: "now", labels: ["agent"], actor: "alice" });
    expect(item.item.ref).toBe("local:demo#1");
    expect(item.item.url).toBe("the-loop://local/demo/items/1.json");
    expect(one.events.events.map((event) => event.type)).toEqual(["item.opened"]);
    expect((await two.tracker.listItems()).map((listed) => listed.title)).toEqual(["fix it"]);
    await two.tracker.addComment(parseWorkItemRef("local:demo#1"), "on it", "bob");
    const second = await two.tracker.openItem({ project: "demo", title: "second", actor: "bob" });
    expect(second.item.ref).toBe("local:demo#2");
    const shown = await one.tracker.getItemWithComments(parseWorkItemRef("local:demo#1"));
    expect(shown.comments.map((comment) => [comment.author, comment.body])).toEqual([["bob", "on it"]]);
    await one.tracker.setState(parseWorkItemRef("local:demo#1"), "closed", "alice");
    const feed = await two.tracker.changesSince({}, start.cursor);
    expect(feed.changes.map((change) => [change.id, change.kind, change.item.ref])).toEqual([
      ["demo:1", "opened", "local:demo#1"],
      ["demo:2", "commented", "local:demo#1"],
      ["demo:3", "opened", "local:demo#2"],
      ["demo:4", "closed", "local:demo#1"],
    ]);
    expect((await two.tracker.changesSince({}, feed.cursor)).changes).toEqual([]);
    expect(await two.tracker.listProjects()).toEqual(["demo"]);
    await waitFor("the other host told of the change", () => told > 0);
  } finally {
    stop();
  }
});

it("writers on two hosts never hand out one number twice", async () => {
  const url = await cluster.freshDatabase();
  const one = await host(url, "host-a");
  const two = await host(url, "host-b");
  const opened = await Promise.all(
    Array.from({ length: 10 }, (_, index) => (index % 2 === 0 ? one : two).tracker.openItem({ project: "demo", title: `item ${index}`, actor: "alice" })),
  );
  expect(new Set(opened.map((item) => item.item.ref)).size).toBe(10);
  const feed = await one.tracker.changesSince({}, '{"v":1,"projects":{}}');
  expect(feed.changes.map((change) => change.id).sort()).toEqual(Array.from({ length: 10 }, (_, index) => `demo:${index + 1}`).sort());
});

it("a project's writers in one process outnumbering its pool's connections all commit: each reads the item on the connection holding the lock", async () => {
  const url = await cluster.freshDatabase();
  const database = await PostgresDatabase.open({ url, name: "host-a", poolSize: 2, lockTimeoutMs: 2_000 });
  opened.push(database);
  const tracker = openLocalTracker({ trackerDir: `${await tempDir()}/tracker`, events: new MemoryEventSink(), database });
  const ref = parseWorkItemRef((await tracker.openItem({ project: "demo", title: "busy", actor: "alice" })).item.ref);
  const settled = await Promise.allSettled(Array.from({ length: 12 }, (_, n) => tracker.addComment(ref, `comment ${n}`, "bob")));
  expect(settled.filter((outcome) => outcome.status === "rejected").map((outcome) => String((outcome as PromiseRejectedResult).reason))).toEqual([]);
  expect((await tracker.getItemWithComments(ref)).comments).toHaveLength(12);
});

it("state migrate copies a file tracker's projects once, counted and verified", async () => {
  const url = await cluster.freshDatabase();
  const trackerDir = `${await tempDir()}/tracker`;
  const files = new LocalTracker({ trackerDir, events: new MemoryEventSink() });
  await files.openItem({ project: "demo", title: "one", actor: "alice" });
  await files.openItem({ project: "demo", title: "two", actor: "alice" });
  await files.addComment(parseWorkItemRef("local:demo#1"), "hello", "bob");
  await files.openItem({ project: "other", title: "three", actor: "alice" });
  const database = await PostgresDatabase.open({ url, name: "migrate" });
  opened.push(database);
  const first = await copyTrackerToDatabase(trackerDir, database);
  expect(first.map(({ name, files: count, copied, unchanged, kept, verified }) => ({ name, count, copied, unchanged, kept, verified }))).toEqual([
    { name: "tracker-items", count: 3, copied: 3, unchanged: 0, kept: 0, verified: true },
    { name: "tracker-journal", count: 4, copied: 4, unchanged: 0, kept: 0, verified: true },
  ]);
  const again = await copyTrackerToDatabase(trackerDir, database);
  expect(again.map((kind) => [kind.copied, kind.unchanged])).toEqual([
    [0, 3],
    [0, 4],
  ]);
  const shared = openLocalTracker({ trackerDir: `${await tempDir()}/tracker`, events: new MemoryEventSink(), database });
  expect((await shared.listItems({ state: "all" })).map((item) => [item.item.ref, item.title, item.comments.length])).toEqual([
    ["local:demo#1", "one", 1],
    ["local:demo#2", "two", 0],
    ["local:other#1", "three", 0],
  ]);
  const next = await shared.openItem({ project: "demo", title: "after", actor: "alice" });
  expect(next.item.ref).toBe("local:demo#3");
});

it("state migrate carries a repaired project's seqFloor: no seq or number handed out again, and a cursor at the floor reads on", async () => {
  const url = await cluster.freshDatabase();
  const trackerDir = `${await tempDir()}/tracker`;
  const files = new LocalTracker({ trackerDir, events: new MemoryEventSink() });
  await files.openItem({ project: "demo", title: "one", actor: "alice" });
  for (const body of ["a", "b", "c"]) await files.addComment(parseWorkItemRef("local:demo#1"), body, "bob");
  await files.openItem({ project: "demo", title: "two", actor: "alice" });
  // The poller has seen demo:5 (item #2's opening); then that last line is damaged and repaired away.
  const delivered = (await files.changesSince({}, undefined)).cursor;
  expect(JSON.parse(delivered)).toEqual({ v: 1, projects: { demo: 5 } });
  const journal = join(trackerDir, "demo", "journal.jsonl");
  const lines = (await fs.readFile(journal, "utf8")).split("\n").slice(0, 4);
  await fs.writeFile(journal, [...lines, "{ broken }", ""].join("\n"));
  expect((await files.repair("demo")).kept).toBe(4);
  expect(JSON.parse(await fs.readFile(join(trackerDir, "demo", "meta.json"), "utf8"))).toEqual({ lastSeq: 5, lastNumber: 2, seqFloor: 5 });

  const database = await PostgresDatabase.open({ url, name: "migrate" });
  opened.push(database);
  const copied = await copyTrackerToDatabase(trackerDir, database);
  expect(copied.map(({ name, copied: count, verified }) => [name, count, verified])).toEqual([
    ["tracker-items", 1, true],
    ["tracker-journal", 4, true],
  ]);
  const floorRow = "SELECT project, seq_floor, number_floor FROM the_loop_tracker_projects";
  expect((await database.pool.query(floorRow)).rows).toEqual([{ project: "demo", seq_floor: 5, number_floor: 2 }]);
  // A database that took the journal before it kept floors gets the floor from a second run.
  await database.pool.query("DELETE FROM the_loop_tracker_projects");
  expect((await copyTrackerToDatabase(trackerDir, database)).map((kind) => [kind.unchanged, kind.verified])).toEqual([
    [1, true],
    [4, true],
  ]);
  expect((await database.pool.query(floorRow)).rows).toEqual([{ project: "demo", seq_floor: 5, number_floor: 2 }]);

  const shared = openLocalTracker({ trackerDir: `${await tempDir()}/tracker`, events: new MemoryEventSink(), database });
  // At the floor, past the copied journal's end: nothing new, not a journal started afresh.
  const atFloor = await shared.changesSince({}, delivered);
  expect(atFloor.changes).toEqual([]);
  // Past the floor it is one started afresh, as on files: all of it is new.
  expect((await shared.changesSince({}, JSON.stringify({ v: 1, projects: { demo: 6 } }))).changes.map((change) => change.id)).toEqual([
    "demo:1",
    "demo:2",
    "demo:3",
    "demo:4",
  ]);
  expect((await shared.addComment(parseWorkItemRef("local:demo#1"), "after", "bob")).id).toBe("demo:c6");
  const next = await shared.openItem({ project: "demo", title: "three", actor: "alice" });
  expect(next.item.ref).toBe("local:demo#3");
  const feed = await shared.changesSince({}, delivered);
  expect(feed.changes.map((change) => [change.id, change.kind, change.item.ref])).toEqual([
    ["demo:6", "commented", "local:demo#1"],
    ["demo:7", "opened", "local:demo#3"],
  ]);
  expect((await shared.changesSince({}, feed.cursor)).changes).toEqual([]);
});

it("state migrate reports a project whose meta.json does not read, and does not copy it: the seqs it keeps used are unknown", async () => {
  const url = await cluster.freshDatabase();
  const trackerDir = `${await tempDir()}/tracker`;
  const files = new LocalTracker({ trackerDir, events: new MemoryEventSink() });
  await files.openItem({ project: "demo", title: "one", actor: "alice" });
  const meta = join(trackerDir, "demo", "meta.json");
  await fs.writeFile(meta, "{ torn");
  const database = await PostgresDatabase.open({ url, name: "migrate" });
  opened.push(database);
  const [items] = await copyTrackerToDatabase(trackerDir, database);
  expect(items).toMatchObject({ name: "tracker-items", files: 0, copied: 0, problems: [{ where: meta }] });
  expect(items?.problems[0]?.message).toMatch(/local tracker file .*meta\.json is damaged/);
  expect((await database.pool.query("SELECT count(*)::int AS count FROM the_loop_tracker_journal")).rows).toEqual([{ count: 0 }]);
});

it("names a damaged item row as a row of the database, with what to do, never as a file", async () => {
  const url = await cluster.freshDatabase();
  const one = await host(url, "host-a");
  await one.tracker.openItem({ project: "demo", title: "fix it", actor: "alice" });
  const database = opened[0] as PostgresDatabase;
  await database.pool.query("UPDATE the_loop_tracker_items SET body = $1 WHERE project = 'demo' AND number = 1", [JSON.stringify({ number: 1 })]);
  const failure = one.tracker.getItem(parseWorkItemRef("local:demo#1"));
  await expect(failure).rejects.toThrow("local tracker row the_loop_tracker_items(demo, 1) is damaged: ");
  await expect(failure).rejects.toThrow("it is a row of the state database, not a file");
});
