import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

describe("config hot reload, through a running daemon", () => {
  it("applies a changed allowlist without a restart and keeps running on an invalid file", async () => {
    project = await testProject();
    const p = project;
    const configFile = join(p.root, "cli-config.yaml");
    const original = await readFile(configFile, "utf8");
    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    const { pid } = jsonOf<{ pid: number }>(started);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");

    // bob is not on the list: his armed item is dropped.
    expect((await p.cli(["item", "new", "Tidy the docs", "--label", ARM, "--as", "bob"])).code).toBe(0);
    await p.waitForEvent("bob's item to be dropped", (r) => r.event === "routing.dropped" && r.reason === "unauthorized-actor" && r.actor === "bob");

    // Add him to the running daemon's config.
    const withBob = parse(original) as { routing: { authorizedUsers: string[] } };
    withBob.routing.authorizedUsers = ["alice", "bob"];
    await writeFile(configFile, stringify(withBob));
    const reloaded = await p.waitForEvent("the reload", (r) => r.event === "config.reloaded");
    expect(reloaded.config).toBe(configFile);
    expect(reloaded.applied).toEqual(["routing.authorizedUsers"]);
    expect(reloaded.restart_required).toEqual([]);

    // His next word on the armed item is acted on.
    expect((await p.cli(["item", "comment", "#1", "Please start.", "--as", "bob"])).code).toBe(0);
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    expect(spawned.work_item).toBe("local:demo#1");

    // A broken file is reported and the daemon carries on with what it had.
    await writeFile(configFile, `${stringify(withBob)}\nrouting_typo: {}\n`);
    const failed = await p.waitForEvent("the failed reload", (r) => r.event === "config.reload_failed");
    expect(failed.config).toBe(configFile);
    expect(String(failed.error)).toContain("routing_typo");
    expect(() => process.kill(pid, 0)).not.toThrow();

    // Fixed again (`status` reads the config too): still running, bob still heard.
    await writeFile(configFile, stringify(withBob));
    expect((await p.cli(["status"])).code).toBe(0);
    expect((await p.cli(["item", "comment", "#1", "And add a changelog entry.", "--as", "bob"])).code).toBe(0);
    const input = await waitFor("the delivered comment", async () => (await p.transcript()).find((e) => e.type === "input"));
    expect(input.text).toContain("And add a changelog entry.");
    expect((await p.events()).filter((r) => r.event === "config.reloaded")).toHaveLength(1);

    // Emptied by a reload: the daemon fails closed, and says so as loudly as at start.
    const nobody = parse(original) as { routing: { authorizedUsers: string[] } };
    nobody.routing.authorizedUsers = [];
    await writeFile(configFile, stringify(nobody));
    const failClosed = await p.waitForEvent("the fail-closed warning", (r) => r.event === "routing.fail_closed");
    expect(String(failClosed.hint)).toContain("routing.authorizedUsers is empty");
    expect((await p.events()).filter((r) => r.event === "config.reloaded").at(-1)?.applied).toEqual(["routing.authorizedUsers"]);
  });
});
