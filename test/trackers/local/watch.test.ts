import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { watchJournals } from "../../../src/trackers/local/watch.js";
import { tempDir } from "../../support/temp.js";
import { waitFor } from "../../support/wait.js";
import { makeTracker, ref } from "./helpers.js";

const stops: (() => void)[] = [];

afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

/** Counts what the watcher tells; `told()` resolves once it has told more than `seen` times. */
function counter(): { onChange: () => void; count: () => number; told: (what: string, seen: number) => Promise<true> } {
  let count = 0;
  return {
    onChange: () => count++,
    count: () => count,
    told: (what, seen) => waitFor(what, () => (count > seen ? true : undefined)),
  };
}

describe("watchJournals", () => {
  it("tells of journal changes from a tracker folder that does not exist yet, through projects made later", async () => {
    const trackerDir = join(await tempDir(), "tracker");
    const { tracker } = makeTracker(trackerDir);
    const changes = counter();
    stops.push(watchJournals(trackerDir, undefined, changes.onChange, { onUnwatchable: (problem) => expect.fail(problem) }));

    await tracker.openItem({ project: "demo", title: "first", actor: "alice" });
    await changes.told("the first item", 0);
    let seen = changes.count();
    await tracker.addComment(ref("demo", 1), "a comment", "bob");
    await changes.told("the comment", seen);
    seen = changes.count();
    await tracker.openItem({ project: "other", title: "elsewhere", actor: "alice" });
    await changes.told("an item of a second project", seen);
  });

  it("watches a project it is given once that project appears", async () => {
    const trackerDir = join(await tempDir(), "tracker");
    const { tracker } = makeTracker(trackerDir);
    await tracker.openItem({ project: "other", title: "before", actor: "alice" });
    const changes = counter();
    stops.push(watchJournals(trackerDir, ["demo"], changes.onChange, { debounceMs: 1 }));
    await tracker.addComment(ref("other", 1), "not watched", "bob");
    await tracker.openItem({ project: "demo", title: "watched", actor: "alice" });
    await changes.told("the watched project", 0);
    const seen = changes.count();
    await tracker.addComment(ref("demo", 1), "watched too", "bob");
    await changes.told("the watched comment", seen);
  });

  it("says once that it cannot watch when not even the tracker folder's parent exists", async () => {
    const missing = join(await tempDir(), "gone", "tracker");
    const problems: string[] = [];
    stops.push(watchJournals(missing, undefined, () => undefined, { onUnwatchable: (problem) => problems.push(problem) }));
    expect(problems).toEqual([`cannot watch ${join(missing, "..")} for changes: the folder does not exist`]);
  });
});
