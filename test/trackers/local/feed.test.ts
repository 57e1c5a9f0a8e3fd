import { describe, expect, it } from "vitest";
import { feedPosition } from "../../../src/trackers/local/cursor.js";
import { InvalidCursorError } from "../../../src/trackers/local/index.js";
import { tempDir } from "../../support/temp.js";
import { makeTracker, ref } from "./helpers.js";

describe("LocalTracker.changesSince", () => {
  it("baselines on first sight, then returns later changes oldest first", async () => {
    const { tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "demo", title: "old", actor: "alice" });
    await tracker.addComment(ref("demo", 1), "history", "alice");

    const first = await tracker.changesSince({}, undefined);
    expect(first.changes).toEqual([]);
    expect(JSON.parse(first.cursor)).toEqual({ v: 1, projects: { demo: 2 } });

    const item = await tracker.openItem({ project: "demo", title: "new", body: "b", labels: ["x"], actor: "bob" });
    const comment = await tracker.addComment(ref("demo", 2), "hello", "carol");
    await tracker.changeLabels(ref("demo", 2), { add: ["y"], remove: ["x"] }, "dave");
    await tracker.setState(ref("demo", 2), "closed", "erin");
    await tracker.setState(ref("demo", 2), "open", "erin");

    const batch = await tracker.changesSince({}, first.cursor);
    expect(batch.changes.map((change) => [change.id, change.kind, change.actor, change.state, change.labels])).toEqual([
      ["demo:3", "opened", "bob", "open", ["x"]],
      ["demo:4", "commented", "carol", "open", ["x"]],
      ["demo:5", "unlabeled", "dave", "open", []],
      ["demo:6", "labeled", "dave", "open", ["y"]],
      ["demo:7", "closed", "erin", "closed", ["y"]],
      ["demo:8", "reopened", "erin", "open", ["y"]],
    ]);
    const [opened, commented, unlabeled] = batch.changes;
    expect(opened).toMatchObject({ title: "new", body: "b", at: item.createdAt });
    expect(opened?.item).toEqual(item.item);
    expect(commented?.comment).toEqual(comment);
    expect(unlabeled?.label).toBe("x");
    expect(JSON.parse(batch.cursor)).toEqual({ v: 1, projects: { demo: 8 } });

    const idle = await tracker.changesSince({}, batch.cursor);
    expect(idle).toEqual({ changes: [], cursor: batch.cursor });
  });

  it("merges projects in time order and reads a project created after the baseline from its start", async () => {
    const { tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "alpha", title: "a1", actor: "alice" });
    const baseline = await tracker.changesSince({}, undefined);

    await tracker.addComment(ref("alpha", 1), "one", "alice");
    await tracker.openItem({ project: "beta", title: "b1", actor: "bob" });
    await tracker.addComment(ref("alpha", 1), "two", "alice");
    await tracker.addComment(ref("beta", 1), "three", "bob");

    const batch = await tracker.changesSince({}, baseline.cursor);
    expect(batch.changes.map((change) => change.id)).toEqual(["alpha:2", "beta:1", "alpha:3", "beta:2"]);
    expect(new Set(batch.changes.map((change) => change.comment?.id).filter(Boolean)).size).toBe(3);
    expect(JSON.parse(batch.cursor)).toEqual({ v: 1, projects: { alpha: 3, beta: 2 } });
  });

  it("keeps each project's order when the clock steps back, and breaks ties by project", async () => {
    const { tracker, clock } = makeTracker(await tempDir());
    const baseline = await tracker.changesSince({}, undefined);
    clock.set("2025-06-01T00:00:00.000Z");
    await tracker.openItem({ project: "beta", title: "b", actor: "bob" });
    clock.set("2025-01-01T00:00:00.000Z");
    await tracker.openItem({ project: "alpha", title: "a", actor: "alice" });
    await tracker.addComment(ref("beta", 1), "after a clock step", "bob");

    const batch = await tracker.changesSince({}, baseline.cursor);
    expect(batch.changes.map((change) => change.id)).toEqual(["alpha:1", "beta:1", "beta:2"]);
    const beta = batch.changes.filter((change) => change.item.repository === "beta");
    expect(beta[0]?.at).toBe(beta[1]?.at);
  });

  it("reads only the projects in scope and carries other positions forward", async () => {
    const { tracker } = makeTracker(await tempDir());
    await tracker.openItem({ project: "alpha", title: "a", actor: "alice" });
    await tracker.openItem({ project: "beta", title: "b", actor: "bob" });
    const baseline = await tracker.changesSince({}, undefined);
    await tracker.addComment(ref("alpha", 1), "in scope", "alice");
    await tracker.addComment(ref("beta", 1), "out of scope", "bob");

    const scoped = await tracker.changesSince({ repositories: ["Alpha", "gamma"] }, baseline.cursor);
    expect(scoped.changes.map((change) => change.id)).toEqual(["alpha:2"]);
    expect(JSON.parse(scoped.cursor)).toEqual({ v: 1, projects: { alpha: 2, beta: 1 } });
    const rest = await tracker.changesSince({}, scoped.cursor);
    expect(rest.changes.map((change) => change.id)).toEqual(["beta:2"]);
  });

  it("baselines a scope whose project does not exist yet as empty", async () => {
    const { tracker } = makeTracker(await tempDir());
    const baseline = await tracker.changesSince({ repositories: ["demo"] }, undefined);
    expect(JSON.parse(baseline.cursor)).toEqual({ v: 1, projects: {} });
    await tracker.openItem({ project: "demo", title: "first", actor: "alice" });
    const batch = await tracker.changesSince({ repositories: ["demo"] }, baseline.cursor);
    expect(batch.changes.map((change) => change.kind)).toEqual(["opened"]);
  });

  it("refuses a cursor it did not issue", async () => {
    const { tracker } = makeTracker(await tempDir());
    for (const cursor of ["", "nope", "[]", '{"v":2,"projects":{}}', '{"v":1}', '{"v":1,"projects":{"demo":-1}}', '{"v":1,"projects":{"Bad Name":1}}']) {
      await expect(tracker.changesSince({}, cursor)).rejects.toBeInstanceOf(InvalidCursorError);
    }
    await expect(tracker.changesSince({}, "nope")).rejects.toThrow(/invalid local tracker cursor: not JSON/);
  });
});

describe("feedPosition: where a project's feed reads on after its cursor", () => {
  it.each([
    // position, journal's end, seqFloor, reads on after
    { position: 3, end: 5, floor: 0, after: 3, why: "within the journal" },
    { position: 5, end: 5, floor: 0, after: 5, why: "at the journal's end" },
    { position: 0, end: 5, floor: 0, after: 0, why: "from the start" },
    { position: 7, end: 5, floor: 0, after: 0, why: "past the end, no floor: started afresh" },
    { position: 7, end: 5, floor: 4, after: 0, why: "past the end and the floor: started afresh" },
    { position: 7, end: 5, floor: 7, after: 7, why: "at the floor past the end: a repair kept those seqs used" },
    { position: 6, end: 5, floor: 7, after: 6, why: "below the floor past the end" },
    { position: 8, end: 5, floor: 7, after: 0, why: "past the floor" },
    { position: 4, end: 0, floor: 4, after: 4, why: "every line moved aside, cursor at the floor" },
    { position: 3, end: 9, floor: 7, after: 3, why: "a floor the journal has since passed" },
  ])("$why", ({ position, end, floor, after }) => {
    expect(feedPosition(position, end, floor)).toBe(after);
  });
});
