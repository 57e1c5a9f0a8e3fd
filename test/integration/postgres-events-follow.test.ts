import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import type { EventRecord } from "../../src/events/reader.js";
import { BIN, cliEnv } from "../support/cli.js";
import { postgresProjects } from "../support/postgres-project.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * The event log as a table followed across state roots (docs/scale.md, "The event log as a
 * table"): two state roots on one real PostgreSQL database, the built CLI in each. What one root's
 * CLI records is printed by the other's `the-loop events --follow` — the backlog at once, and a
 * new event live, by LISTEN/NOTIFY.
 */

const postgres = postgresProjects();
const following: ChildProcessWithoutNullStreams[] = [];
const others: TestProject[] = [];

afterEach(async () => {
  for (const child of following.splice(0)) {
    if (child.exitCode === null) {
      const closed = new Promise((resolve) => child.on("close", resolve));
      child.kill("SIGTERM");
      await closed;
    }
  }
  for (const project of others.splice(0)) await project.cleanup();
});

function follow(project: TestProject, args: readonly string[]): { readonly events: () => EventRecord[]; readonly stderr: () => string } {
  const child = spawn(process.execPath, [BIN, "events", "--follow", "--format", "jsonl", ...args], {
    cwd: project.dir,
    env: cliEnv({ cwd: project.dir, home: project.home }),
  });
  following.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  return {
    events: () =>
      stdout
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line) as EventRecord),
    stderr: () => stderr,
  };
}

describe("events --follow across two state roots on one database (the built CLI, a real server)", () => {
  it("prints the other root's events: its backlog, then a new one as it is recorded", async () => {
    const url = await postgres.database();
    const a = await postgres.project({ state: { store: "postgres", url } });
    const b = await testProject({ state: { store: "postgres", url } });
    others.push(b);

    expect((await b.cli(["item", "new", "Add a health check", "--as", "alice"])).code).toBe(0);
    const follower = follow(a, ["--type", "item.*"]);
    const seen = (event: string, actor: string) => () => follower.events().find((record) => record.event === event && record.actor === actor) ?? undefined;
    const opened = await waitFor(`item.opened from the other root in the backlog (stderr: ${follower.stderr()})`, seen("item.opened", "alice"), {
      timeoutMs: 20_000,
    });
    expect(opened.work_item).toBe("local:demo#1");

    // Recorded after the follow printed its backlog: it can only arrive live.
    expect((await b.cli(["item", "comment", "#1", "a comment from the other root", "--as", "bob"])).code).toBe(0);
    const commented = await waitFor(`item.commented from the other root, live (stderr: ${follower.stderr()})`, seen("item.commented", "bob"), {
      timeoutMs: 20_000,
    });
    expect(commented.work_item).toBe("local:demo#1");
    expect(follower.events().filter((record) => record.event === "item.opened")).toHaveLength(1);
  }, 90_000);
});
