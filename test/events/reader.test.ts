import { appendFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RingBuffer, eventMatcher, parseEventLine, readEvents } from "../../src/events/reader.js";
import type { EventFilter } from "../../src/events/reader.js";
import { tempDir } from "../support/temp.js";
import { jsonl, record } from "./fixtures.js";

describe("parseEventLine", () => {
  it("returns the record of a well-formed line, fields included", () => {
    const line = JSON.stringify(record({ work_item: "local:p#1", labels: ["a"] }));
    expect(parseEventLine(line)).toEqual(record({ work_item: "local:p#1", labels: ["a"] }));
  });

  it.each([
    ["not JSON", "not json"],
    ["a partial object", '{"ts":"2025-03-10T12:00:00.000Z","source":"cli",'],
    ["a JSON array", "[1,2]"],
    ["a JSON string", '"item.opened"'],
    ["null", "null"],
    ["an object without an event", JSON.stringify({ ts: "x", source: "cli", level: "info" })],
    ["an object whose level is not text", JSON.stringify({ ts: "x", source: "cli", event: "e", level: 3 })],
    ["an object without a ts", JSON.stringify({ source: "cli", event: "e", level: "info" })],
  ])("rejects %s", (_what, line) => {
    expect(parseEventLine(line)).toBeUndefined();
  });
});

describe("eventMatcher", () => {
  const opened = record({ event: "item.opened", work_item: "local:p#1" });
  const closed = record({ event: "item.closed", source: "poll", level: "warning", work_item: "local:p#2" });
  const spawned = record({
    event: "session.spawned",
    source: "daemon",
    level: "error",
    ts: "2025-03-10T13:00:00.000+01:00",
    work_items: ["github:octo/app#15", "local:p#1"],
  });
  const debug = record({ event: "item.labeled", level: "debug", ts: "2025-03-10T12:30:00Z" });
  const oddLevel = record({ event: "item.labeled", level: "chatty" });
  const badTime = record({ event: "item.labeled", ts: "yesterday" });
  const all = { opened, closed, spawned, debug, oddLevel, badTime };

  const cases: [string, EventFilter, (keyof typeof all)[]][] = [
    ["no filter", {}, ["opened", "closed", "spawned", "debug", "oddLevel", "badTime"]],
    ["an empty type list", { types: [] }, ["opened", "closed", "spawned", "debug", "oddLevel", "badTime"]],
    ["a type glob", { types: ["item.*"] }, ["opened", "closed", "debug", "oddLevel", "badTime"]],
    ["an exact type", { types: ["item.closed"] }, ["closed"]],
    ["any of several globs", { types: ["*.closed", "session.*"] }, ["closed", "spawned"]],
    ["a glob nothing matches", { types: ["poll.*"] }, []],
    ["work_item", { workItem: "local:p#2" }, ["closed"]],
    ["work_item or work_items", { workItem: "local:p#1" }, ["opened", "spawned"]],
    ["a ref only in work_items", { workItem: "github:octo/app#15" }, ["spawned"]],
    ["a ref in no event", { workItem: "local:p#3" }, []],
    ["source", { source: "poll" }, ["closed"]],
    ["minimum level debug", { minLevel: "debug" }, ["opened", "closed", "spawned", "debug", "badTime"]],
    ["minimum level info", { minLevel: "info" }, ["opened", "closed", "spawned", "badTime"]],
    ["minimum level warning", { minLevel: "warning" }, ["closed", "spawned"]],
    ["minimum level error", { minLevel: "error" }, ["spawned"]],
    // 13:00+01:00 is 12:00Z: equal counts as since; a string comparison would get this wrong.
    ["since, as instants", { since: new Date("2025-03-10T12:00:00Z") }, ["opened", "closed", "spawned", "debug", "oddLevel"]],
    ["since, excluding", { since: new Date("2025-03-10T12:00:00.001Z") }, ["debug"]],
    ["every condition at once", { types: ["item.*"], source: "cli", minLevel: "info", workItem: "local:p#1" }, ["opened"]],
  ];

  it.each(cases)("%s", (_what, filter, expected) => {
    const matches = eventMatcher(filter);
    const kept = Object.entries(all)
      .filter(([, r]) => matches(r))
      .map(([name]) => name);
    expect(kept).toEqual(expected);
  });

  it("compares work item refs without regard to case", () => {
    expect(eventMatcher({ workItem: "github:octo/app#15" })(record({ work_item: "github:Octo/App#15" }))).toBe(true);
  });
});

describe("RingBuffer", () => {
  it.each([
    [3, [1, 2, 3, 4, 5, 6, 7], [5, 6, 7]],
    [3, [1, 2], [1, 2]],
    [1, [1, 2, 3], [3]],
    [0, [1, 2, 3], []],
    [Infinity, [1, 2, 3], [1, 2, 3]],
  ])("with capacity %d keeps the last ones, oldest first", (capacity, pushed, expected) => {
    const ring = new RingBuffer<number>(capacity);
    for (const value of pushed) ring.push(value);
    expect(ring.toArray()).toEqual(expected);
    expect(ring.size).toBe(expected.length);
  });
});

describe("readEvents", () => {
  async function logWith(text: string): Promise<string> {
    const dir = await tempDir();
    const path = join(dir, "events.jsonl");
    await writeFile(path, text);
    return path;
  }

  it("reports a missing file as no events, not an error", async () => {
    const dir = await tempDir();
    expect(await readEvents(join(dir, "absent.jsonl"), {}, { limit: 50 })).toEqual({
      events: [],
      malformed: 0,
      missing: true,
    });
  });

  it("keeps only the last `limit` matches, oldest first; 0 keeps all", async () => {
    const records = Array.from({ length: 20 }, (_, i) => record({ pid: i, event: i % 2 ? "item.closed" : "item.opened" }));
    const path = await logWith(jsonl(...records));
    const last = await readEvents(path, { types: ["item.closed"] }, { limit: 3 });
    expect(last.events.map((r) => r.pid)).toEqual([15, 17, 19]);
    const every = await readEvents(path, {}, { limit: 0 });
    expect(every.events).toHaveLength(20);
  });

  it("skips and counts malformed lines, ignores blank lines and a partial last line", async () => {
    const text = [
      JSON.stringify(record({ pid: 1 })),
      "garbage",
      "",
      "   ",
      '{"ts":"torn',
      JSON.stringify(record({ pid: 2 })),
      '{"ts":"2025-03-10T12:00:00.000Z","source":"cli","event":"item.op', // a writer mid-append
    ].join("\n");
    const result = await readEvents(await logWith(text), {}, { limit: 0 });
    expect(result.events.map((r) => r.pid)).toEqual([1, 2]);
    expect(result.malformed).toBe(2);
    expect(result.missing).toBe(false);
  });

  it("reads CRLF line ends and multi-byte text split across read chunks", async () => {
    const long = "é".repeat(70_000); // 140 kB of two-byte characters: crosses 64 KiB chunk borders
    const path = await logWith(`${JSON.stringify(record({ pid: 1, title: long }))}\r\n${JSON.stringify(record({ pid: 2 }))}\n`);
    const result = await readEvents(path, {}, { limit: 0 });
    expect(result.malformed).toBe(0);
    expect(result.events.map((r) => r.pid)).toEqual([1, 2]);
    expect(result.events[0]?.title).toBe(long);
  });

  it("streams a log far larger than what it keeps", async () => {
    const dir = await tempDir();
    const path = join(dir, "events.jsonl");
    const batch = jsonl(...Array.from({ length: 1_000 }, (_, i) => record({ pid: i })));
    for (let i = 0; i < 20; i += 1) await appendFile(path, batch);
    const result = await readEvents(path, {}, { limit: 5 });
    expect(result.events.map((r) => r.pid)).toEqual([995, 996, 997, 998, 999]);
  });

  it("throws for a path it cannot read as a file", async () => {
    const dir = await tempDir();
    await expect(readEvents(dir, {}, { limit: 1 })).rejects.toThrow();
  });
});
