import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ControlStore } from "../../src/control/store.js";
import { ARM } from "../support/builders.js";
import { count, paneState } from "../support/e2e.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

/** Starts a session for #1 and writes `{ not json` over its record; answers its tmux target and record file. */
async function damagedSession(p: TestProject): Promise<{ target: string; file: string; dir: string }> {
  expect((await p.cli(["start"])).code).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  expect((await p.cli(["item", "new", "Task", "--label", ARM, "--as", "alice"])).code).toBe(0);
  const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
  const target = String(spawned.tmux_target);
  expect(await paneState(p.socketName, target)).toBe("alive");
  const slug = target.replace(/^loop-[0-9a-f]{8}-/, "");
  const dir = join(p.root, "sessions");
  const file = join(dir, `${slug}.json`);
  expect(JSON.parse(await readFile(file, "utf8")).workItem.ref).toBe("local:demo#1");
  await writeFile(file, "{ not json");
  return { target, file, dir };
}

describe("a damaged session record does not make its agent unstoppable", () => {
  it("sessions close moves the record aside, ends the harness, and closes", async () => {
    project = await testProject();
    const p = project;
    const { target, file, dir } = await damagedSession(p);

    const closed = await p.cli(["sessions", "close", "--work-item", "#1"]);
    expect(closed.code, closed.stderr + closed.stdout).toBe(0);
    expect(await paneState(p.socketName, target)).not.toBe("alive");

    const names = await readdir(dir);
    expect(names).not.toContain(file.slice(dir.length + 1));
    const aside = names.filter((name) => name.startsWith(`${file.slice(dir.length + 1)}.`));
    expect(aside).toHaveLength(1);
    expect(await readFile(join(dir, aside[0] ?? ""), "utf8")).toBe("{ not json");

    const events = await p.events();
    const moved = events.find((r) => r.event === "session.record_moved_aside");
    expect(moved?.work_item).toBe("local:demo#1");
    expect(moved?.file).toBe(file);
    expect(moved?.moved_to).toBe(join(dir, aside[0] ?? ""));
    expect(events.some((r) => r.event === "session.closed" && r.work_item === "local:demo#1")).toBe(true);
  });

  it("sessions stop moves the record aside, ends the harness, and records the stop", async () => {
    project = await testProject();
    const p = project;
    const { target, dir, file } = await damagedSession(p);

    const stopped = await p.cli(["sessions", "stop", "--work-item", "#1"]);
    expect(stopped.code, stopped.stderr + stopped.stdout).toBe(0);
    expect(await paneState(p.socketName, target)).not.toBe("alive");
    expect((await readdir(dir)).some((name) => name.startsWith(`${file.slice(dir.length + 1)}.`))).toBe(true);
    const events = await p.events();
    expect(count(events, (r) => r.event === "session.record_moved_aside")).toBe(1);
    expect(events.some((r) => r.event === "session.closed" && r.reason === "stopped")).toBe(true);
  });

  it("a stop that stands when the daemon restarts ends the session of a damaged record", async () => {
    project = await testProject();
    const p = project;
    const { target, dir, file } = await damagedSession(p);
    expect((await p.cli(["stop"])).code).toBe(0);
    // What a stop leaves when its process dies after recording it and before closing the session.
    const control = new ControlStore({ dir: join(p.root, "sessions", "control") });
    await control.transaction("local:demo#1", async (tx) => {
      await tx.write({
        version: 1,
        ref: "local:demo#1",
        command: "stop",
        source: "cli",
        actor: "alice",
        requestedAt: new Date().toISOString(),
        effect: "recorded",
      });
    });
    expect(await paneState(p.socketName, target)).toBe("alive");

    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the record moved aside", (r) => r.event === "session.record_moved_aside" && r.work_item === "local:demo#1");
    await waitFor("the harness ended", async () => (await paneState(p.socketName, target)) !== "alive");
    const names = await readdir(dir);
    expect(names.filter((name) => name.startsWith(`${file.slice(dir.length + 1)}.`))).toHaveLength(1);
  });

  it("closing the item closes it once: no retry loop", async () => {
    project = await testProject();
    const p = project;
    const { target, dir, file } = await damagedSession(p);

    expect((await p.cli(["item", "close", "#1", "--as", "alice"])).code).toBe(0);
    const closed = await p.waitForEvent("the close", (r) => r.event === "session.closed" && r.reason === "item-closed");
    expect(closed.work_item).toBe("local:demo#1");
    await waitFor("the harness to end", async () => ((await paneState(p.socketName, target)) !== "alive" ? true : undefined));
    // Idle poll cycles after the close: a close handed back for another try would still be
    // handed out, so a cycle that finds no change at all comes only once none is left.
    const from = (await p.events()).findIndex((r) => r.event === "session.closed");
    const events = await waitFor(
      "three idle poll cycles after the close",
      async () => {
        const all = await p.events();
        return all.slice(from).filter((r) => r.event === "poll.cycle" && r.changes === 0).length >= 3 && all;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    expect(count(events, (r) => r.event === "session.closed")).toBe(1);
    expect(count(events, (r) => r.event === "dispatch.failed")).toBe(0);
    expect(count(events, (r) => r.event === "session.record_moved_aside")).toBe(1);
    expect((await readdir(dir)).some((name) => name.startsWith(`${file.slice(dir.length + 1)}.`))).toBe(true);
  });
});
