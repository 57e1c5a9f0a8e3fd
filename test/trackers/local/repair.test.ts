import { promises as fs } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CorruptTrackerFileError } from "../../../src/trackers/local/index.js";
import { tempDir } from "../../support/temp.js";
import { journalLines, makeTracker, readJson, ref, treeOf } from "./helpers.js";
import type { Harness } from "./helpers.js";

/** A project with one item and three comments (seqs 1–4); returns the journal's path and lines. */
async function projectWithHistory(harness: Harness): Promise<{ journal: string; lines: string[] }> {
  await harness.tracker.openItem({ project: "demo", title: "t", actor: "alice" });
  for (const body of ["one", "two", "three"]) await harness.tracker.addComment(ref("demo", 1), body, "bob");
  const journal = join(harness.dir, "demo", "journal.jsonl");
  const lines = (await fs.readFile(journal, "utf8")).split("\n").slice(0, -1);
  return { journal, lines };
}

async function asideFiles(dir: string): Promise<string[]> {
  return (await fs.readdir(join(dir, "demo"))).filter((name) => name.startsWith("journal.jsonl.damaged-")).sort();
}

describe("a damaged line inside the journal", () => {
  it("refuses every write, naming the file, the line and the repair", async () => {
    const harness = makeTracker(await tempDir());
    const { journal, lines } = await projectWithHistory(harness);
    await fs.writeFile(journal, [lines[0], "{ not json", lines[2], lines[3], ""].join("\n"));
    const before = await treeOf(harness.dir);

    const comment = harness.tracker.addComment(ref("demo", 1), "more", "bob");
    await expect(comment).rejects.toBeInstanceOf(CorruptTrackerFileError);
    await expect(harness.tracker.addComment(ref("demo", 1), "more", "bob")).rejects.toThrow(
      `local tracker file ${journal} is damaged: line 2 is not JSON; run \`the-loop item repair --project demo\``,
    );
    await expect(harness.tracker.changeLabels(ref("demo", 1), { add: ["bug"] }, "bob")).rejects.toThrow(/line 2 is not JSON/);
    await expect(harness.tracker.setState(ref("demo", 1), "closed", "bob")).rejects.toThrow(/line 2 is not JSON/);
    await expect(harness.tracker.openItem({ project: "demo", title: "u", actor: "bob" })).rejects.toThrow(/line 2 is not JSON/);
    // The feed names the repair too, so a failing poll cycle says how to fix it.
    await expect(harness.tracker.changesSince({}, JSON.stringify({ v: 1, projects: { demo: 1 } }))).rejects.toThrow(
      /line 2 is not JSON; run `the-loop item repair --project demo`/,
    );
    expect(await treeOf(harness.dir)).toEqual(before);
  });

  it("refuses a line whose seq does not follow the one before it", async () => {
    const harness = makeTracker(await tempDir());
    const { journal, lines } = await projectWithHistory(harness);
    await fs.writeFile(journal, [lines[0], lines[2], lines[1], lines[3], ""].join("\n"));
    await expect(harness.tracker.addComment(ref("demo", 1), "more", "bob")).rejects.toThrow(/line 3 has seq 2, not above the 3 before it/);
  });

  it("still takes a torn last line as a crash mid-append: writes go on and cut it off", async () => {
    const harness = makeTracker(await tempDir());
    const { journal, lines } = await projectWithHistory(harness);
    await fs.appendFile(journal, '{"seq":5,"ts":"2025-');
    expect((await harness.tracker.addComment(ref("demo", 1), "after", "bob")).id).toBe("demo:c5");
    const text = await fs.readFile(journal, "utf8");
    expect(text.startsWith(`${lines.join("\n")}\n`)).toBe(true);
    expect((await journalLines(harness.dir, "demo")).map((line) => line.seq)).toEqual([1, 2, 3, 4, 5]);
  });
});

describe("LocalTracker.repair", () => {
  it("keeps every readable line, moves the rest aside, and the feed and writes work again", async () => {
    const harness = makeTracker(await tempDir());
    const { journal, lines } = await projectWithHistory(harness);
    const baseline = await harness.tracker.changesSince({}, JSON.stringify({ v: 1, projects: { demo: 1 } }));
    expect(baseline.changes.map((change) => change.id)).toEqual(["demo:2", "demo:3", "demo:4"]);
    const damaged = '{"seq":3,"kind":"commen\u0000ted", garbage';
    await fs.writeFile(journal, [lines[0], lines[1], damaged, lines[3], ""].join("\n"));
    await expect(harness.tracker.changesSince({}, JSON.stringify({ v: 1, projects: { demo: 1 } }))).rejects.toThrow(/line 3/);

    harness.clock.set("2025-02-03T04:05:05.789Z"); // the next reading is 04:05:06.789
    const report = await harness.tracker.repair("demo");
    expect(report).toMatchObject({ project: "demo", journal, kept: 3, torn: false });
    expect(report.moved).toEqual([{ line: 3, reason: "line 3 is not JSON" }]);
    expect(report.aside).toBe(join(harness.dir, "demo", "journal.jsonl.damaged-2025-02-03T04-05-06.789Z"));
    expect(await asideFiles(harness.dir)).toEqual(["journal.jsonl.damaged-2025-02-03T04-05-06.789Z"]);
    expect(await fs.readFile(report.aside!, "utf8")).toBe(`${damaged}\n`);
    expect(await fs.readFile(journal, "utf8")).toBe([lines[0], lines[1], lines[3], ""].join("\n"));
    expect(harness.events.events.filter((event) => event.type === "item.repaired")).toMatchObject([
      { type: "item.repaired", fields: { project: "demo", journal, kept: 3, moved: 1, torn: false, aside: report.aside } },
    ]);

    const after = await harness.tracker.changesSince({}, JSON.stringify({ v: 1, projects: { demo: 1 } }));
    expect(after.changes.map((change) => change.id)).toEqual(["demo:2", "demo:4"]);
    expect((await harness.tracker.addComment(ref("demo", 1), "four", "bob")).id).toBe("demo:c5");
    expect((await harness.tracker.changesSince({}, after.cursor)).changes.map((change) => change.id)).toEqual(["demo:5"]);
    expect((await journalLines(harness.dir, "demo")).map((line) => line.seq)).toEqual([1, 2, 4, 5]);
  });

  it("numbers the next change above a moved-aside last line, and the feed does not start over", async () => {
    const harness = makeTracker(await tempDir());
    const { journal, lines } = await projectWithHistory(harness);
    const cursor = (await harness.tracker.changesSince({}, undefined)).cursor;
    await fs.writeFile(journal, [lines[0], lines[1], lines[2], "{ broken }", ""].join("\n"));
    await expect(harness.tracker.addComment(ref("demo", 1), "x", "bob")).rejects.toThrow(/line 4 is not JSON; run `the-loop item repair/);
    await expect(harness.tracker.getItem(ref("demo", 1))).rejects.toThrow(/its last line is not JSON; run `the-loop item repair/);

    const report = await harness.tracker.repair("demo");
    expect(report).toMatchObject({ kept: 3, moved: [{ line: 4, reason: "line 4 is not JSON" }] });
    expect(await readJson(join(harness.dir, "demo", "meta.json"))).toMatchObject({ lastSeq: 4, lastNumber: 1, seqFloor: 4 });
    expect((await harness.tracker.changesSince({}, cursor)).changes).toEqual([]);
    expect((await harness.tracker.addComment(ref("demo", 1), "x", "bob")).id).toBe("demo:c5");
    expect((await harness.tracker.changesSince({}, cursor)).changes.map((change) => change.id)).toEqual(["demo:5"]);
    expect(await readJson(join(harness.dir, "demo", "meta.json"))).toEqual({ lastSeq: 5, lastNumber: 1 });
  });

  it("moves a torn last line aside with the damaged ones", async () => {
    const harness = makeTracker(await tempDir());
    const { journal, lines } = await projectWithHistory(harness);
    await fs.writeFile(journal, [lines[0], "nope", lines[2], lines[3], '{"seq":5,"ts'].join("\n"));
    const report = await harness.tracker.repair("demo");
    expect(report).toMatchObject({ kept: 3, torn: true, moved: [{ line: 2 }, { line: 5, reason: "line 5 is torn (no newline)" }] });
    expect(await fs.readFile(report.aside!, "utf8")).toBe('nope\n{"seq":5,"ts\n');
    expect((await harness.tracker.addComment(ref("demo", 1), "x", "bob")).id).toBe("demo:c5");
  });

  it("changes nothing in a sound journal and says so", async () => {
    const harness = makeTracker(await tempDir());
    const { journal } = await projectWithHistory(harness);
    const before = await treeOf(harness.dir);
    const report = await harness.tracker.repair("demo");
    expect(report).toEqual({ project: "demo", journal, kept: 4, moved: [], torn: false, aside: undefined });
    expect(await treeOf(harness.dir)).toEqual(before);
    expect(harness.events.events.filter((event) => event.type === "item.repaired")).toEqual([]);
  });

  it("refuses a project without a journal", async () => {
    const harness = makeTracker(await tempDir());
    await expect(harness.tracker.repair("ghost")).rejects.toThrow(/the local project "ghost" has no journal/);
  });
});
