import { promises as fs } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { EXIT_FAILURE, EXIT_USAGE } from "../../../src/errors.js";
import { markSelfAuthored } from "../../../src/workitem/marker.js";
import { CorruptTrackerFileError, LocalTrackerInputError, NotLocalRefError } from "../../../src/trackers/local/index.js";
import { WorkItemNotFoundError } from "../../../src/trackers/index.js";
import { tempDir } from "../../support/temp.js";
import { journalLines, makeTracker, readJson, ref, treeOf } from "./helpers.js";

describe("LocalTracker: opening and reading items", () => {
  it("opens an item: journal line, snapshot, meta, event", async () => {
    const { dir, tracker, events } = makeTracker(await tempDir());
    const item = await tracker.openItem({
      project: "demo",
      title: "  Fix the login page  ",
      body: "It breaks.",
      labels: ["bug", "Bug", "ui"],
      actor: "alice",
    });

    expect(item.item).toMatchObject({ ref: "local:demo#1", tracker: "local", host: "local", repository: "demo", number: 1, kind: "issue" });
    expect(item.item.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(fileURLToPath(item.item.url)).toBe(join(dir, "demo", "items", "1.json"));
    expect(item).toMatchObject({
      title: "Fix the login page",
      body: "It breaks.",
      author: "alice",
      state: "open",
      labels: ["bug", "ui"],
      closedAt: null,
      comments: [],
    });
    expect(item.createdAt).toBe(item.updatedAt);

    const lines = await journalLines(dir, "demo");
    expect(lines).toEqual([
      {
        seq: 1,
        ts: item.createdAt,
        kind: "opened",
        number: 1,
        itemId: item.item.id,
        actor: "alice",
        labels: ["bug", "ui"],
        state: "open",
        title: "Fix the login page",
        body: "It breaks.",
      },
    ]);
    expect(await readJson(join(dir, "demo", "meta.json"))).toEqual({ lastSeq: 1, lastNumber: 1 });
    expect(await readJson(join(dir, "demo", "items", "1.json"))).toMatchObject({ number: 1, seq: 1, id: item.item.id });
    expect(events.events).toEqual([
      { type: "item.opened", fields: { work_item: "local:demo#1", actor: "alice", title: "Fix the login page", labels: ["bug", "ui"] } },
    ]);

    const { comments: _comments, ...state } = item;
    expect(await tracker.getItem(ref("demo", 1))).toEqual(state);
  });

  it("numbers items per project and keeps ids unique", async () => {
    const { tracker } = makeTracker(await tempDir());
    const a = await tracker.openItem({ project: "demo", title: "a", actor: "alice" });
    const b = await tracker.openItem({ project: "demo", title: "b", actor: "alice" });
    const c = await tracker.openItem({ project: "other", title: "c", actor: "alice" });
    expect([a.item.ref, b.item.ref, c.item.ref]).toEqual(["local:demo#1", "local:demo#2", "local:other#1"]);
    expect(new Set([a.item.id, b.item.id, c.item.id]).size).toBe(3);
    expect(await tracker.listProjects()).toEqual(["demo", "other"]);
  });

  it("adds comments, as a person and as the-loop", async () => {
    const { tracker, events } = makeTracker(await tempDir());
    const item = await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const first = await tracker.addComment(ref("demo", 1), "looks good", "bob");
    const own = await tracker.postComment(ref("demo", 1), markSelfAuthored("on it"));

    expect(first).toEqual({
      id: "demo:c2",
      author: "bob",
      body: "looks good",
      createdAt: first.createdAt,
      url: `${item.item.url}#c2`,
      kind: "comment",
    });
    expect(own).toMatchObject({ id: "demo:c3", author: "the-loop" });
    expect(await tracker.selfLogin()).toEqual({ kind: "known", login: own.author });
    const read = await tracker.getItemWithComments(ref("demo", 1));
    expect(read.comments).toEqual([first, own]);
    expect(read.updatedAt).toBe(own.createdAt);
    expect(events.events.slice(1)).toEqual([
      { type: "item.commented", fields: { work_item: "local:demo#1", actor: "bob", comment_id: "demo:c2", marked: false } },
      { type: "item.commented", fields: { work_item: "local:demo#1", actor: "the-loop", comment_id: "demo:c3", marked: true } },
    ]);
  });

  it("changes labels one journal line and one event per label, case-insensitively", async () => {
    const { dir, tracker, events } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", labels: ["Bug"], actor: "alice" });
    const result = await tracker.changeLabels(ref("demo", 1), { add: ["ui", "docs", "UI"], remove: ["bug", "absent"] }, "bob");

    expect(result.removed).toEqual(["Bug"]);
    expect(result.added).toEqual(["ui", "docs"]);
    expect(result.alreadyPresent).toEqual([]);
    expect(result.absent).toEqual(["absent"]);
    expect(result.item.labels).toEqual(["ui", "docs"]);
    const lines = await journalLines(dir, "demo");
    expect(lines.slice(1).map((line) => [line.kind, line.label, line.labels])).toEqual([
      ["unlabeled", "Bug", []],
      ["labeled", "ui", ["ui"]],
      ["labeled", "docs", ["ui", "docs"]],
    ]);
    expect(events.events.slice(1).map((event) => [event.type, event.fields.label])).toEqual([
      ["item.unlabeled", "Bug"],
      ["item.labeled", "ui"],
      ["item.labeled", "docs"],
    ]);

    expect((await tracker.addLabels(ref("demo", 1), ["DOCS"], "bob")).alreadyPresent).toEqual(["DOCS"]);
    await tracker.addLabel(ref("demo", 1), "the-loop: auto-execute");
    await tracker.removeLabel(ref("demo", 1), "UI");
    expect((await tracker.getItem(ref("demo", 1))).labels).toEqual(["docs", "the-loop: auto-execute"]);
    expect(events.events.at(-2)).toEqual({
      type: "item.labeled",
      fields: { work_item: "local:demo#1", actor: "the-loop", label: "the-loop: auto-execute" },
    });
  });

  it("closes and reopens", async () => {
    const { tracker, events } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const closed = await tracker.setState(ref("demo", 1), "closed", "bob");
    expect(closed.changed).toBe(true);
    expect(closed.item.state).toBe("closed");
    expect(closed.item.closedAt).toBe(closed.item.updatedAt);
    const reopened = await tracker.setState(ref("demo", 1), "open", "carol");
    expect(reopened.item).toMatchObject({ state: "open", closedAt: null });
    expect(events.events.slice(1)).toEqual([
      { type: "item.closed", fields: { work_item: "local:demo#1", actor: "bob" } },
      { type: "item.reopened", fields: { work_item: "local:demo#1", actor: "carol" } },
    ]);
  });

  it("writes nothing and records nothing for a no-op", async () => {
    const { dir, tracker, events } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", labels: ["bug"], actor: "alice" });
    const before = await treeOf(dir);

    const labels = await tracker.changeLabels(ref("demo", 1), { add: ["BUG"], remove: ["nope"] }, "bob");
    expect(labels).toMatchObject({ added: [], removed: [], alreadyPresent: ["BUG"], absent: ["nope"] });
    expect((await tracker.setState(ref("demo", 1), "open", "bob")).changed).toBe(false);
    await tracker.removeLabel(ref("demo", 1), "absent");
    await tracker.setState(ref("demo", 1), "closed", "bob");
    const afterClose = await treeOf(dir);
    expect((await tracker.setState(ref("demo", 1), "closed", "bob")).changed).toBe(false);

    expect(afterClose["demo/journal.jsonl"]).not.toBe(before["demo/journal.jsonl"]);
    expect(await treeOf(dir)).toEqual(afterClose);
    expect(events.events.map((event) => event.type)).toEqual(["item.opened", "item.closed"]);
  });
});

describe("LocalTracker: listing", () => {
  it("lists items by project, state and labels", async () => {
    const { tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "one", labels: ["bug", "ui"], actor: "alice" });
    await tracker.openItem({ project: "demo", title: "two", labels: ["bug"], actor: "alice" });
    await tracker.openItem({ project: "other", title: "three", labels: ["UI"], actor: "alice" });
    await tracker.setState(ref("demo", 2), "closed", "alice");
    const refs = (items: { item: { ref: string } }[]): string[] => items.map((item) => item.item.ref);

    expect(refs(await tracker.listItems())).toEqual(["local:demo#1", "local:other#1"]);
    expect(refs(await tracker.listItems({ state: "closed" }))).toEqual(["local:demo#2"]);
    expect(refs(await tracker.listItems({ state: "all", labels: ["BUG"] }))).toEqual(["local:demo#1", "local:demo#2"]);
    expect(refs(await tracker.listItems({ labels: ["ui"] }))).toEqual(["local:demo#1", "local:other#1"]);
    expect(refs(await tracker.listItems({ labels: ["ui", "bug"] }))).toEqual(["local:demo#1"]);
    expect(refs(await tracker.listItems({ project: "Other", state: "all" }))).toEqual(["local:other#1"]);
    expect(await tracker.listItems({ project: "nowhere" })).toEqual([]);
  });

  it("skips temporary files left by an interrupted atomic write", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "one", actor: "alice" });
    await fs.writeFile(join(dir, "demo", "items", ".2.json.123.abcd.tmp"), "{ torn");
    await fs.writeFile(join(dir, "demo", "items", "notes.txt"), "not an item");
    expect((await tracker.listItems()).map((item) => item.item.ref)).toEqual(["local:demo#1"]);
  });
});

describe("LocalTracker: errors and limits", () => {
  it("refuses a ref for another tracker and a missing item, creating nothing", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    const github = { tracker: "github", host: "github.com", owner: "o", repo: "r", number: 1 } as const;
    await expect(tracker.getItem(github)).rejects.toBeInstanceOf(NotLocalRefError);
    await expect(tracker.addComment(github, "hi", "bob")).rejects.toMatchObject({ exitCode: EXIT_USAGE });

    await expect(tracker.getItem(ref("demo", 1))).rejects.toBeInstanceOf(WorkItemNotFoundError);
    await expect(tracker.addComment(ref("demo", 1), "hi", "bob")).rejects.toMatchObject({
      exitCode: EXIT_FAILURE,
      message: 'no work item local:demo#1; the local project "demo" has no items',
    });
    expect(await treeOf(dir)).toEqual({});

    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const before = await treeOf(dir);
    await expect(tracker.setState(ref("demo", 5), "closed", "bob")).rejects.toThrow('no work item local:demo#5; the items of "demo" are #1 to #1');
    await expect(tracker.getItemWithComments(ref("demo", 5))).rejects.toBeInstanceOf(WorkItemNotFoundError);
    expect(await treeOf(dir)).toEqual(before);
  });

  it("enforces the input limits with usage errors, writing nothing", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const before = await treeOf(dir);
    const item = ref("demo", 1);
    const rejections: [() => Promise<unknown>, RegExp][] = [
      [() => tracker.openItem({ project: "demo", title: "   ", actor: "alice" }), /title is empty/],
      [() => tracker.openItem({ project: "demo", title: "x".repeat(257), actor: "alice" }), /257 characters long; at most 256/],
      [() => tracker.openItem({ project: "demo", title: "two\nlines", actor: "alice" }), /one line/],
      [() => tracker.openItem({ project: "demo", title: "t", body: "b".repeat(65_537), actor: "alice" }), /at most 65536/],
      [() => tracker.openItem({ project: "Bad Name", title: "t", actor: "alice" }), /invalid local project/],
      [() => tracker.openItem({ project: "demo", title: "t", actor: "-alice" }), /invalid login/],
      [() => tracker.openItem({ project: "demo", title: "t", actor: "a".repeat(65) }), /invalid login/],
      [() => tracker.openItem({ project: "demo", title: "t", labels: Array.from({ length: 101 }, (_, i) => `l${i}`), actor: "alice" }), /at most 100 labels/],
      [() => tracker.addComment(item, "  \n ", "bob"), /comment is empty/],
      [() => tracker.addComment(item, "c".repeat(65_537), "bob"), /at most 65536/],
      [() => tracker.addLabels(item, ["x".repeat(51)], "bob"), /at most 50/],
      [() => tracker.addLabels(item, ["a\u0007b"], "bob"), /control character/],
      [() => tracker.addLabels(item, [""], "bob"), /label is empty/],
      [() => tracker.changeLabels(item, { add: ["x"], remove: ["X"] }, "bob"), /both add and remove/],
      [() => tracker.setState(item, "closed", "bad login!"), /invalid login/],
    ];
    for (const [attempt, message] of rejections) {
      const error: unknown = await attempt().then(
        () => undefined,
        (rejection: unknown) => rejection,
      );
      expect(error).toBeInstanceOf(LocalTrackerInputError);
      expect((error as Error).message).toMatch(message);
    }
    expect(await treeOf(dir)).toEqual(before);
    // Exactly at the limits is fine.
    await tracker.openItem({ project: "demo", title: "é".repeat(256), body: "b".repeat(65_536), actor: "a".repeat(64) });
    await tracker.addLabels(
      item,
      Array.from({ length: 100 }, (_, i) => `label-${i}`.padEnd(50, "x")),
      "bob",
    );
    await expect(tracker.addLabels(item, ["one more"], "bob")).rejects.toThrow(/at most 100 labels/);
  });

  it("stops on a damaged snapshot or meta file, naming it and leaving it alone", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const snapshotPath = join(dir, "demo", "items", "1.json");
    await fs.writeFile(snapshotPath, "{ not json");
    await expect(tracker.getItem(ref("demo", 1))).rejects.toBeInstanceOf(CorruptTrackerFileError);
    await expect(tracker.addComment(ref("demo", 1), "hi", "bob")).rejects.toThrow(snapshotPath);
    expect(await fs.readFile(snapshotPath, "utf8")).toBe("{ not json");

    await fs.writeFile(snapshotPath, JSON.stringify({ number: 1, title: "missing fields" }));
    await expect(tracker.listItems()).rejects.toThrow(/items\/1\.json is damaged/);

    const metaPath = join(dir, "demo", "meta.json");
    await fs.writeFile(metaPath, JSON.stringify({ lastSeq: "one" }));
    await expect(tracker.openItem({ project: "demo", title: "t2", actor: "alice" })).rejects.toThrow(metaPath);
    expect(await fs.readFile(metaPath, "utf8")).toBe(JSON.stringify({ lastSeq: "one" }));
    expect(await journalLines(dir, "demo")).toHaveLength(1);
  });

  it("refuses to hand out a number whose snapshot already exists", async () => {
    const { dir, tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "t", actor: "alice" });
    const metaPath = join(dir, "demo", "meta.json");
    await fs.writeFile(metaPath, JSON.stringify({ lastSeq: 1, lastNumber: 0 }));
    await expect(tracker.openItem({ project: "demo", title: "t2", actor: "alice" })).rejects.toThrow(/hands out #1 next, but items\/1\.json already exists/);
    expect(await journalLines(dir, "demo")).toHaveLength(1);
  });
});
