import { promises as fs } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CorruptTrackerFileError, InvalidCursorError } from "../../../src/trackers/local/index.js";
import { tempDir } from "../../support/temp.js";
import { makeTracker, ref } from "./helpers.js";

/**
 * The local tracker's files and its cursor are parsed with schemas where they are read, never
 * cast: a key the tracker does not write is ignored, a known key of the wrong type is damage
 * reported as it always was, naming the file and the key.
 */

describe("the change-feed cursor", () => {
  it.each<[string, string]>([
    ["[]", "not an object"],
    ["null", "not an object"],
    ['{"v":"1","projects":{}}', 'unknown version "1"'],
    ['{"projects":{}}', "unknown version undefined"],
    ['{"v":1,"projects":[]}', '"projects" is not an object'],
    ['{"v":1,"projects":{"demo":1.5}}', 'the position of "demo" is not a whole number'],
    ['{"v":1,"projects":{"demo":"3"}}', 'the position of "demo" is not a whole number'],
    ['{"v":1,"projects":{"Demo":3}}', '"Demo" is not a local project name'],
  ])("refuses %s: %s", async (cursor, reason) => {
    const { tracker } = makeTracker(await tempDir());
    const refusal = tracker.changesSince({}, cursor);
    await expect(refusal).rejects.toBeInstanceOf(InvalidCursorError);
    await expect(tracker.changesSince({}, cursor)).rejects.toThrow(`invalid local tracker cursor: ${reason};`);
  });

  it("ignores a key it does not write", async () => {
    const { tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "first", actor: "alice" });
    const batch = await tracker.changesSince({ repositories: ["demo"] }, '{"v":1,"projects":{"demo":0},"note":"by hand"}');
    expect(batch.changes.map((change) => change.id)).toEqual(["demo:1"]);
  });
});

describe("item snapshots and journal lines", () => {
  it("reports a wrong-typed key of a snapshot as damage, naming the file and the key", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const path = join(dir, "demo", "items", "1.json");
    const snapshot: unknown = JSON.parse(await fs.readFile(path, "utf8"));
    await fs.writeFile(path, JSON.stringify({ ...(snapshot as object), labels: "bug" }));
    const read = tracker.getItem(ref("demo", 1));
    await expect(read).rejects.toBeInstanceOf(CorruptTrackerFileError);
    await expect(tracker.getItem(ref("demo", 1))).rejects.toThrow(`local tracker file ${path} is damaged: labels: `);
  });

  it("ignores keys it does not write, in a snapshot and in a journal line", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const path = join(dir, "demo", "items", "1.json");
    const snapshot: unknown = JSON.parse(await fs.readFile(path, "utf8"));
    await fs.writeFile(path, JSON.stringify({ ...(snapshot as object), colour: "blue" }));
    const journal = join(dir, "demo", "journal.jsonl");
    const [line] = (await fs.readFile(journal, "utf8")).split("\n");
    const parsed: unknown = JSON.parse(line ?? "");
    await fs.writeFile(journal, `${JSON.stringify({ ...(parsed as object), extra: [1] })}\n`);
    const item = await tracker.getItem(ref("demo", 1));
    expect(item.title).toBe("t");
    expect(item).not.toHaveProperty("colour");
    const batch = await tracker.changesSince({ repositories: ["demo"] }, '{"v":1,"projects":{"demo":0}}');
    expect(batch.changes).toHaveLength(1);
  });
});
