import { describe, expect, it } from "vitest";
import { jsonOf, runCli } from "../support/cli.js";
import type { CliResult } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

/**
 * The foundation's acceptance path as a user walks it: init, work items through every action,
 * and the event log filtered by type, work item and time — all through the real CLI.
 */
describe("init → items → events", () => {
  it("records one event per item action and filters them by type glob, work item and --since", async () => {
    const cwd = await tempDir();
    const run = async (...args: string[]): Promise<CliResult> => {
      const result = await runCli(args, { cwd });
      if (result.code !== 0) throw new Error(`the-loop ${args.join(" ")} exited ${result.code}:\n${result.stderr}`);
      return result;
    };
    await run("init");
    await run("config", "validate");
    await run("item", "new", "First", "--as", "alice");
    await run("item", "new", "Second", "--as", "bob");
    await run("item", "comment", "#1", "hello", "--as", "bob");
    await run("item", "label", "#1", "--add", "the-loop: auto-execute", "--as", "alice");
    await run("item", "label", "#1", "--remove", "the-loop: auto-execute", "--as", "alice");
    await run("item", "close", "#1", "--as", "alice");
    await run("item", "reopen", "#1", "--as", "alice");

    const shown = jsonOf<{ ref: string; state: string; labels: string[]; comments: { author: string; body: string }[] }>(
      await run("item", "show", "#1", "--json"),
    );
    const ref = shown.ref;
    expect(shown).toMatchObject({ state: "open", labels: [], comments: [{ author: "bob", body: "hello" }] });

    type Logged = { event: string; work_item: string; actor: string; ts: string };
    const events = async (...filters: string[]): Promise<Logged[]> => jsonOf<Logged[]>(await run("events", "--format", "json", "--limit", "0", ...filters));

    expect((await events()).map((event) => event.event)).toEqual([
      "item.opened",
      "item.opened",
      "item.commented",
      "item.labeled",
      "item.unlabeled",
      "item.closed",
      "item.reopened",
    ]);
    expect((await events("--type", "item.*label*")).map((event) => event.event)).toEqual(["item.labeled", "item.unlabeled"]);
    expect((await events("--work-item", ref)).map((event) => event.event)).toEqual([
      "item.opened",
      "item.commented",
      "item.labeled",
      "item.unlabeled",
      "item.closed",
      "item.reopened",
    ]);
    expect((await events("--work-item", "#2")).map((event) => event.actor)).toEqual(["bob"]);
    expect(await events("--since", "1h")).toHaveLength(7);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(await events("--since", future)).toEqual([]);
  });
});
