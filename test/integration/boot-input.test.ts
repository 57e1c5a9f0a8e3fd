import { afterEach, describe, expect, it } from "vitest";
import { FAKE_HARNESS, testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { inputs } from "../support/e2e.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

describe("a command harness whose argv has no {prompt}", () => {
  it.each([
    { name: "waiting for its ready pattern", ready: { readyPattern: "fake-harness: ready" } },
    { name: "after the startup grace", ready: {} },
  ])("gets the boot prompt as its first input, $name, then later events as input after it", async ({ ready }) => {
    project = await testProject({
      routing: (transcript) => ({
        defaultHarness: "interactive",
        harnesses: { interactive: { command: [process.execPath, FAKE_HARNESS, transcript], ...ready } },
      }),
    });
    const p = project;
    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Write the changelog", "--as", "alice"])).code).toBe(0);
    expect((await p.cli(["item", "label", "#1", "--add", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");

    const boot = await waitFor("the boot line", async () => (await p.transcript()).find((e) => e.type === "boot"));
    expect(boot.argv).toEqual([]);
    const [first] = await waitFor("the boot prompt as input", async () => {
      const seen = await inputs(p);
      return seen.length > 0 ? seen : undefined;
    });
    expect(first).toContain("local:demo#1");
    expect(first).toContain("Write the changelog");

    expect((await p.cli(["item", "comment", "#1", "Mention the new flag.", "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the delivery", (r) => r.event === "dispatch.succeeded");
    const all = await waitFor("the comment as the second input", async () => {
      const seen = await inputs(p);
      return seen.length > 1 ? seen : undefined;
    });
    expect(all).toHaveLength(2);
    expect(all[1]).toContain("Mention the new flag.");
  });
});
