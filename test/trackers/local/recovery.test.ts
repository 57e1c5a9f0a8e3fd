import { promises as fs } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CorruptTrackerFileError } from "../../../src/trackers/local/index.js";
import { tempDir } from "../../support/temp.js";
import { journalLines, makeTracker, readJson, ref } from "./helpers.js";

/** What a writer killed right after its append leaves: a committed line nothing else reflects. */
function unappliedLine(fields: Record<string, unknown>): string {
  return `${JSON.stringify(fields)}\n`;
}

describe("LocalTracker crash recovery", () => {
  it("ignores a torn last line when reading and truncates it on the next write", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const baseline = await tracker.changesSince({}, undefined);
    const journal = join(dir, "demo", "journal.jsonl");
    const intact = await fs.readFile(journal, "utf8");
    await fs.appendFile(journal, '{"seq":2,"ts":"2025-01-01T00:00:09.000Z","kind":"comm');

    expect((await tracker.getItemWithComments(ref("demo", 1))).comments).toEqual([]);
    expect(await tracker.listItems()).toHaveLength(1);
    expect((await tracker.changesSince({}, baseline.cursor)).changes).toEqual([]);
    expect(JSON.parse((await tracker.changesSince({}, undefined)).cursor)).toEqual({ v: 1, projects: { demo: 1 } });

    const comment = await tracker.addComment(ref("demo", 1), "after the crash", "bob");
    expect(comment.id).toBe("demo:c2");
    const text = await fs.readFile(journal, "utf8");
    expect(text.startsWith(intact)).toBe(true);
    expect(text.endsWith("\n")).toBe(true);
    expect((await journalLines(dir, "demo")).map((line) => line.seq)).toEqual([1, 2]);
    expect((await tracker.changesSince({}, baseline.cursor)).changes.map((change) => change.id)).toEqual(["demo:2"]);
  });

  it("treats a journal holding only a torn line as empty", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await fs.mkdir(join(dir, "demo"), { recursive: true });
    await fs.writeFile(join(dir, "demo", "journal.jsonl"), '{"seq":1,"ts":"');
    expect(await tracker.listItems()).toEqual([]);
    const item = await tracker.openItem({ project: "demo", title: "first", actor: "alice" });
    expect(item.item.ref).toBe("local:demo#1");
    expect((await journalLines(dir, "demo")).map((line) => line.seq)).toEqual([1]);
  });

  it("shows a committed but unapplied comment to readers and applies it on the next write", async () => {
    const { dir, tracker, events } = makeTracker(await tempDir());
    const item = await tracker.openItem({ project: "demo", title: "t", labels: ["bug"], actor: "alice" });
    const baseline = await tracker.changesSince({}, undefined);
    await fs.appendFile(
      join(dir, "demo", "journal.jsonl"),
      unappliedLine({
        seq: 2,
        ts: "2025-01-01T00:00:30.000Z",
        kind: "commented",
        number: 1,
        itemId: item.item.id,
        actor: "bob",
        labels: ["bug"],
        state: "open",
        comment: { id: "demo:c2", body: "written just before a crash" },
      }),
    );

    const read = await tracker.getItemWithComments(ref("demo", 1));
    expect(read.comments.map((comment) => comment.body)).toEqual(["written just before a crash"]);
    expect(read.updatedAt).toBe("2025-01-01T00:00:30.000Z");
    expect((await tracker.listItems())[0]?.comments).toHaveLength(1);
    const feed = await tracker.changesSince({}, baseline.cursor);
    expect(feed.changes.map((change) => change.id)).toEqual(["demo:2"]);
    expect(await readJson(join(dir, "demo", "meta.json"))).toEqual({ lastSeq: 1, lastNumber: 1 });

    await tracker.setState(ref("demo", 1), "closed", "carol");
    expect(await readJson(join(dir, "demo", "meta.json"))).toEqual({ lastSeq: 3, lastNumber: 1 });
    const snapshot = await readJson(join(dir, "demo", "items", "1.json"));
    expect(snapshot).toMatchObject({ seq: 3, state: "closed" });
    expect((snapshot.comments as unknown[]).length).toBe(1);
    expect((await journalLines(dir, "demo")).map((line) => [line.seq, line.kind])).toEqual([
      [1, "opened"],
      [2, "commented"],
      [3, "closed"],
    ]);
    // The recovered change was recorded by the process that committed it, not replayed.
    expect(events.events.map((event) => event.type)).toEqual(["item.opened", "item.closed"]);
  });

  it("shows a committed but unapplied opened item and numbers the next one after it", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "one", actor: "alice" });
    await fs.appendFile(
      join(dir, "demo", "journal.jsonl"),
      unappliedLine({
        seq: 2,
        ts: "2025-01-01T00:00:30.000Z",
        kind: "opened",
        number: 2,
        itemId: "11111111-2222-3333-4444-555555555555",
        actor: "bob",
        labels: ["the-loop: auto-execute"],
        state: "open",
        title: "two",
        body: "",
      }),
    );

    expect(await tracker.getItem(ref("demo", 2))).toMatchObject({ title: "two", author: "bob" });
    expect((await tracker.listItems()).map((item) => item.title)).toEqual(["one", "two"]);
    expect((await tracker.listItems({ labels: ["the-loop: auto-execute"] })).map((item) => item.item.ref)).toEqual(["local:demo#2"]);

    const third = await tracker.openItem({ project: "demo", title: "three", actor: "carol" });
    expect(third.item.ref).toBe("local:demo#3");
    expect(await readJson(join(dir, "demo", "items", "2.json"))).toMatchObject({ seq: 2, title: "two" });
    expect(await readJson(join(dir, "demo", "meta.json"))).toEqual({ lastSeq: 3, lastNumber: 3 });
  });

  it("repairs meta.json alone when the crash came after the snapshot was written", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    await tracker.addComment(ref("demo", 1), "applied", "bob");
    await fs.writeFile(join(dir, "demo", "meta.json"), JSON.stringify({ lastSeq: 1, lastNumber: 1 }));

    await tracker.addComment(ref("demo", 1), "next", "bob");
    const item = await tracker.getItemWithComments(ref("demo", 1));
    expect(item.comments.map((comment) => [comment.id, comment.body])).toEqual([
      ["demo:c2", "applied"],
      ["demo:c3", "next"],
    ]);
    expect(await readJson(join(dir, "demo", "meta.json"))).toEqual({ lastSeq: 3, lastNumber: 1 });
  });

  it("rebuilds a lost meta.json from the journal and the items", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "one", actor: "alice" });
    await tracker.openItem({ project: "demo", title: "two", actor: "alice" });
    await tracker.addComment(ref("demo", 1), "last change is on #1", "bob");
    await fs.rm(join(dir, "demo", "meta.json"));

    const third = await tracker.openItem({ project: "demo", title: "three", actor: "alice" });
    expect(third.item.ref).toBe("local:demo#3");
    expect(await readJson(join(dir, "demo", "meta.json"))).toEqual({ lastSeq: 4, lastNumber: 3 });
  });

  it("stops when the journal and meta.json disagree beyond one change", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    await tracker.addComment(ref("demo", 1), "c", "bob");
    const metaPath = join(dir, "demo", "meta.json");

    await fs.writeFile(metaPath, JSON.stringify({ lastSeq: 5, lastNumber: 1 }));
    await expect(tracker.addComment(ref("demo", 1), "x", "bob")).rejects.toThrow(/ends at change 2, but meta.json records 5/);
    await fs.writeFile(metaPath, JSON.stringify({ lastSeq: 0, lastNumber: 1 }));
    await expect(tracker.addComment(ref("demo", 1), "x", "bob")).rejects.toBeInstanceOf(CorruptTrackerFileError);
    expect(await journalLines(dir, "demo")).toHaveLength(2);
  });

  it("names the line of a damaged journal", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const baseline = await tracker.changesSince({}, undefined);
    const journal = join(dir, "demo", "journal.jsonl");
    const text = await fs.readFile(journal, "utf8");
    await fs.writeFile(journal, `${text}{"seq":2,"kind":"mystery"}\n`);
    await expect(tracker.changesSince({}, baseline.cursor)).rejects.toThrow(/journal\.jsonl is damaged: line 2 is not a change record/);
    await expect(tracker.getItem(ref("demo", 1))).rejects.toThrow(/its last line is not a change record/);
  });
});
