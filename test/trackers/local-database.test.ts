import { afterEach, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { PostgresDatabase } from "../../src/state/index.js";
import { LocalTracker, copyTrackerToDatabase, openLocalTracker } from "../../src/trackers/local/index.js";
import { parseWorkItemRef } from "../../src/workitem/index.js";
import { postgresServer } from "../support/postgres.js";
import { tempDir } from "../support/temp.js";

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
    const deadline = Date.now() + 10_000;
    while (told === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(told).toBeGreaterThan(0);
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
