import { mkdir, symlink } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { stateRootTag, tmuxTargetFor } from "../../src/registry/record.js";
import { parseWorkItemRef, workItemSlug } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";
import { localSetup } from "../dispatch/fixture.js";

/** The runner's own check on a target (src/harness/tmux.ts). */
const TARGET_PATTERN = /^loop-[A-Za-z0-9_-]+$/;

describe("tmux session names", () => {
  it("tag the state root: stable however the root is reached, different for another root", async () => {
    const dir = await tempDir();
    const root = join(dir, "project", ".the-loop");
    const other = join(dir, "other", ".the-loop");
    await mkdir(root, { recursive: true });
    await mkdir(other, { recursive: true });
    await symlink(join(dir, "project"), join(dir, "linked"));

    const tag = stateRootTag(root);
    expect(tag).toMatch(/^[0-9a-f]{8}$/);
    expect(stateRootTag(join(dir, "linked", ".the-loop"))).toBe(tag);
    expect(stateRootTag(relative(process.cwd(), root))).toBe(tag);
    expect(stateRootTag(`${root}/`)).toBe(tag);
    expect(stateRootTag(other)).not.toBe(tag);
    // A root not made yet is named by its path.
    expect(stateRootTag(join(dir, "later", ".the-loop"))).toMatch(/^[0-9a-f]{8}$/);
  });

  it("put the tag before the work item's slug, in a name the runner takes", () => {
    const slug = workItemSlug(parseWorkItemRef("local:default#1"));
    const name = tmuxTargetFor(slug, "0123abcd");
    expect(name).toBe(`loop-0123abcd-${slug}`);
    expect(name).toMatch(TARGET_PATTERN);
    expect(tmuxTargetFor(slug)).toBe(`loop-${slug}`);
    expect(tmuxTargetFor(slug, "0123abcd")).not.toBe(tmuxTargetFor(slug, "fedc9876"));
  });
});

describe("Dispatcher: tmux names per state root", () => {
  it("claims new sessions under the tagged name", async () => {
    const t = await localSetup();
    const d = t.dispatcher({ stateRootTag: "0123abcd" });
    const { ref } = await t.open("Tagged");
    expect(await d.handle(await t.only())).toEqual({ settled: true });
    const target = t.record(ref).tmuxTarget;
    expect(target).toBe(tmuxTargetFor(workItemSlug(parseWorkItemRef(ref)), "0123abcd"));
    expect(t.runner.spawnRequests.map((request) => request.target)).toEqual([target]);
  });

  it("keeps addressing a session claimed before the upgrade by the name on its record", async () => {
    const t = await localSetup();
    // The session an older the-loop started, under the untagged name.
    const before = t.dispatcher();
    const { ref, target: untagged } = await t.open("Started before the upgrade");
    expect(await before.handle(await t.only())).toEqual({ settled: true });
    expect(t.record(ref).tmuxTarget).toBe(untagged);
    await t.feed(); // the announcement it posted

    const after = t.dispatcher({ stateRootTag: "0123abcd" });
    await t.comment(ref, "still reaches the running session");
    expect(await after.handle(await t.only())).toEqual({ settled: true });
    expect(t.runner.delivered.map((delivery) => delivery.target)).toEqual([untagged]);
    expect(t.record(ref).tmuxTarget).toBe(untagged);

    // Once that session is over, the next one is claimed under the new name.
    await t.trackers.local.setState(parseWorkItemRef(ref), "closed", "alice");
    await t.trackers.local.setState(parseWorkItemRef(ref), "open", "alice");
    const batch = await t.feed();
    expect(batch.map((event) => event.kind)).toEqual(["closed", "reopened"]);
    for (const event of batch) expect(await after.handle(event)).toEqual({ settled: true });
    expect(t.record(ref)).toMatchObject({ status: "active", tmuxTarget: tmuxTargetFor(workItemSlug(parseWorkItemRef(ref)), "0123abcd") });
  });
});
