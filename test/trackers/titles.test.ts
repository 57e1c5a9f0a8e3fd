import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { titleOfEvent } from "../../src/daemon/item-titles.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { LocalTracker } from "../../src/trackers/local/index.js";
import { ItemTitles, TITLES_MAX, TITLE_MAX, itemTitlesFile, titleEntriesOf } from "../../src/trackers/titles.js";
import { tempDir } from "../support/temp.js";

const GH = "github:github.com/o/r#7";
const PR = "github:github.com/o/r#9";
const item = (ref: string) => ({ ref }) as never;

describe("which item an event's title names", () => {
  it.each([
    [
      { title: "Fix login", workItems: [item(GH)] },
      { ref: GH, title: "Fix login" },
    ],
    // A pull request's event names the issues it is for as work items; the title is the pull request's.
    [
      { title: "Closes #7", workItems: [item(GH), item(PR)], pullRequest: { ref: PR } },
      { ref: PR, title: "Closes #7" },
    ],
    [{ title: "  ", workItems: [item(GH)] }, undefined],
    [{ workItems: [item(GH)] }, undefined],
    [{ title: "two", workItems: [item(GH), item(PR)] }, undefined],
  ] as const)("%o → %o", (event, named) => {
    expect(titleOfEvent(event as never)).toEqual(named);
  });
});

describe("the book of item titles", () => {
  it("names a local item from its snapshot and a GitHub item as last seen, across a restart", async () => {
    const root = await tempDir();
    const trackerDir = join(root, "tracker");
    const local = new LocalTracker({ trackerDir, events: new MemoryEventSink() });
    await local.openItem({ project: "demo", title: "Write a spec", actor: "alice" });
    const titles = new ItemTitles({ root, trackerDir });
    expect(titles.titleOf("local:demo#1")).toBe("Write a spec");
    expect(titles.titleOf("local:demo#2")).toBeNull();
    expect(titles.titleOf(GH)).toBeNull();
    titles.note(GH, "Fix login");
    titles.note(GH, "Fix the login");
    titles.note(PR, "x".repeat(TITLE_MAX + 5));
    // A local item's title is its snapshot's, never a noted one.
    titles.note("local:demo#1", "not this");
    expect(titles.titleOf(GH)).toBe("Fix the login");
    expect(titles.titleOf("local:demo#1")).toBe("Write a spec");
    await titles.flushed();
    const again = new ItemTitles({ root, trackerDir });
    expect(again.titleOf(GH)).toBe("Fix the login");
    expect(again.titleOf(PR)).toHaveLength(TITLE_MAX);
    expect(JSON.parse(await readFile(itemTitlesFile(root), "utf8"))).not.toHaveProperty(["titles", "local:demo#1"]);
  });

  it("starts afresh from a damaged file, and reads what fits of one", async () => {
    const root = await tempDir();
    await writeFile(itemTitlesFile(root), "{ not json");
    expect(new ItemTitles({ root }).titleOf(GH)).toBeNull();
    expect(titleEntriesOf({ titles: { [GH]: { title: "ok", seenAt: "2026-01-01T00:00:00Z" }, [PR]: { title: 7 } } })).toEqual([
      [GH, { title: "ok", seenAt: "2026-01-01T00:00:00Z" }],
    ]);
    expect(titleEntriesOf([])).toEqual([]);
  });

  it("keeps the most recently seen TITLES_MAX", async () => {
    const root = await tempDir();
    let clock = Date.UTC(2026, 0, 1);
    const titles = new ItemTitles({ root, now: () => new Date((clock += 1000)) });
    for (let number = 1; number <= TITLES_MAX + 2; number++) titles.note(`github:github.com/o/r#${number}`, `item ${number}`);
    expect(titles.titleOf("github:github.com/o/r#1")).toBeNull();
    expect(titles.titleOf("github:github.com/o/r#3")).toBe("item 3");
    await titles.flushed();
    const file = JSON.parse(await readFile(itemTitlesFile(root), "utf8")) as { titles: Record<string, unknown> };
    expect(Object.keys(file.titles)).toHaveLength(TITLES_MAX);
  });
});
