import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { appendFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EventRecord } from "../../src/events/reader.js";
import { BIN, cliEnv, jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { jsonl, record } from "./fixtures.js";

const HOUR = 3_600_000;
const ESC = "\u001b";
const ago = (ms: number): string => new Date(Date.now() - ms).toISOString();

/** A project directory without a config: defaults apply, so the log is `.the-loop/logs/events.jsonl`. */
async function projectWithLog(text?: string): Promise<{ cwd: string; log: string }> {
  const cwd = await tempDir();
  const log = join(cwd, ".the-loop", "logs", "events.jsonl");
  await mkdir(join(cwd, ".the-loop", "logs"), { recursive: true });
  if (text !== undefined) await writeFile(log, text);
  return { cwd, log };
}

const FIXTURE = [
  record({ pid: 1, ts: ago(72 * HOUR), event: "item.opened", work_item: "local:default#1", actor: "ann", title: "Fix it", labels: [] }),
  record({ pid: 2, ts: ago(48 * HOUR), event: "item.labeled", work_item: "local:default#1", actor: "ann", label: "bug" }),
  record({ pid: 3, ts: ago(3 * HOUR), event: "item.opened", work_item: "local:default#2", actor: "bob", title: "More", labels: [] }),
  record({ pid: 4, ts: ago(2 * HOUR), event: "session.spawned", source: "daemon", level: "warning", work_items: ["local:default#2", "github:octo/app#15"] }),
  record({ pid: 5, ts: ago(30 * 60_000), event: "item.closed", source: "poll", work_item: "local:default#1", actor: "bob" }),
  record({ pid: 6, ts: ago(60_000), event: "dispatch.failed", source: "daemon", level: "error", work_item: "github:octo/app#15", reason: "tmux gone" }),
];

async function eventsJson(cwd: string, ...args: string[]): Promise<number[]> {
  const result = await runCli(["events", "--format", "json", ...args], { cwd });
  expect(result.code, result.stderr).toBe(0);
  return jsonOf<EventRecord[]>(result).map((r) => Number(r.pid));
}

describe("the-loop events", () => {
  it.each<[string, string[], number[]]>([
    ["everything, oldest first", [], [1, 2, 3, 4, 5, 6]],
    ["a type glob", ["--type", "item.*"], [1, 2, 3, 5]],
    ["several type globs", ["--type", "item.opened", "--type", "*.failed"], [1, 3, 6]],
    ["a canonical work item (work_item or work_items)", ["--work-item", "local:default#2"], [3, 4]],
    ["a bare number in the default local project", ["--work-item", "#1"], [1, 2, 5]],
    ["a GitHub URL", ["--work-item", "https://github.com/Octo/App/issues/15"], [4, 6]],
    ["a source", ["--source", "daemon"], [4, 6]],
    ["a minimum level", ["--level", "warning"], [4, 6]],
    ["a duration", ["--since", "4h"], [3, 4, 5, 6]],
    ["an ISO time", ["--since", ago(90 * 60_000)], [5, 6]],
    ["a limit", ["--limit", "2"], [5, 6]],
    ["a limit after filtering", ["--type", "item.*", "--limit", "3"], [2, 3, 5]],
    ["limit 0 for all", ["--limit", "0"], [1, 2, 3, 4, 5, 6]],
    ["filters together", ["--type", "item.*", "--since", "1d", "--work-item", "#2"], [3]],
  ])("selects by %s", async (_what, args, expected) => {
    const { cwd } = await projectWithLog(jsonl(...FIXTURE));
    expect(await eventsJson(cwd, ...args)).toEqual(expected);
  });

  it("--json is --format json, and jsonl prints each event as logged", async () => {
    const { cwd } = await projectWithLog(jsonl(...FIXTURE));
    expect(await eventsJson(cwd, "--limit", "1")).toEqual([6]);
    const json = await runCli(["events", "--json", "--limit", "1"], { cwd });
    expect(jsonOf<EventRecord[]>(json)).toEqual([FIXTURE[5]]);
    const lines = await runCli(["events", "--format", "jsonl", "--limit", "2"], { cwd });
    expect(lines.stdout).toBe(jsonl(...FIXTURE.slice(4)));
    expect(lines.stderr).toBe("");
  });

  it("prints a table with the remaining fields as details, and nothing but the table on stdout", async () => {
    const { cwd } = await projectWithLog(jsonl(...FIXTURE));
    const result = await runCli(["events", "--limit", "3"], { cwd });
    expect(result.code).toBe(0);
    const [header, ...rows] = result.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^TIME +LEVEL +SOURCE +EVENT +WORK ITEM +DETAILS$/);
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(/ warning +daemon +session\.spawned +local:default#2,github:octo\/app#15$/);
    expect(rows[2]).toMatch(/ error +daemon +dispatch\.failed +github:octo\/app#15 +reason="tmux gone"$/);
    expect(result.stdout).not.toContain(`${ESC}[`); // NO_COLOR is set by runCli
  });

  it("colours the level only when colour is wanted", async () => {
    const { cwd } = await projectWithLog(jsonl(...FIXTURE));
    const result = await runCli(["events", "--limit", "1"], { cwd, env: { NO_COLOR: undefined, FORCE_COLOR: "1" } });
    expect(result.stdout).toContain(`${ESC}[31merror${ESC}[39m`);
  });

  it("skips malformed lines with one warning and ignores a partial last line", async () => {
    const text = `${jsonl(FIXTURE[0] as EventRecord)}garbage\n{"broken\n${jsonl(FIXTURE[1] as EventRecord)}{"ts":"2025-`;
    const { cwd } = await projectWithLog(text);
    const result = await runCli(["events", "--format", "json"], { cwd });
    expect(result.code).toBe(0);
    expect(jsonOf<EventRecord[]>(result).map((r) => r.pid)).toEqual([1, 2]);
    expect(result.stderr).toBe("warning: skipped 2 malformed lines in .the-loop/logs/events.jsonl\n");
  });

  it("treats a missing log as no events, saying so on stderr in table mode", async () => {
    const cwd = await tempDir();
    const table = await runCli(["events"], { cwd });
    expect(table).toEqual({ code: 0, stdout: "", stderr: "no events yet: .the-loop/logs/events.jsonl does not exist\n" });
    const json = await runCli(["events", "--json"], { cwd });
    expect(json.code).toBe(0);
    expect(jsonOf(json)).toEqual([]);
  });

  it("says when nothing matches", async () => {
    const { cwd } = await projectWithLog(jsonl(...FIXTURE));
    expect(await runCli(["events", "--type", "poll.*"], { cwd })).toEqual({
      code: 0,
      stdout: "",
      stderr: "no matching events at level info or above (--level debug shows every level)\n",
    });
    expect(await runCli(["events", "--type", "poll.*", "--level", "debug"], { cwd })).toEqual({ code: 0, stdout: "", stderr: "no matching events\n" });
  });

  it("hides debug events from the table unless --level debug, and keeps them in json and jsonl", async () => {
    const debug = record({ pid: 7, ts: ago(30_000), event: "poll.cycle", source: "poll", level: "debug" });
    const { cwd } = await projectWithLog(jsonl(...FIXTURE, debug));
    const table = await runCli(["events"], { cwd });
    expect(table.stdout.trimEnd().split("\n")).toHaveLength(1 + FIXTURE.length);
    expect(table.stdout).not.toContain("poll.cycle");
    expect((await runCli(["events", "--level", "debug"], { cwd })).stdout).toContain("poll.cycle");
    expect(await eventsJson(cwd)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const lines = await runCli(["events", "--format", "jsonl", "--limit", "1"], { cwd });
    expect(lines.stdout).toBe(jsonl(debug));
    expect(await eventsJson(cwd, "--level", "info")).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("says on stderr when a listing is cut, and reads one work item whole unless --limit is given", async () => {
    const many = Array.from({ length: 60 }, (_, i) =>
      record({ pid: 100 + i, ts: ago((60 - i) * 1000), event: "item.commented", work_item: "local:default#3", actor: "ann" }),
    );
    const { cwd } = await projectWithLog(jsonl(...FIXTURE, ...many));
    const cut = await runCli(["events", "--limit", "2"], { cwd });
    expect(cut.stdout.trimEnd().split("\n")).toHaveLength(1 + 2);
    expect(cut.stderr).toContain(`showing the last 2 of ${FIXTURE.length + many.length}; --limit 0 for all`);
    const byDefault = await runCli(["events", "--format", "json"], { cwd });
    expect(jsonOf<EventRecord[]>(byDefault)).toHaveLength(50);
    expect(byDefault.stderr).toContain(`showing the last 50 of ${FIXTURE.length + many.length}; --limit 0 for all`);
    // The item's story from its start: every one of its 60 events, and no note.
    const item = await runCli(["events", "--work-item", "#3"], { cwd });
    expect(item.stdout.trimEnd().split("\n")).toHaveLength(1 + 60);
    expect(item.stderr).not.toContain("showing the last");
    expect(await eventsJson(cwd, "--work-item", "#3", "--limit", "5")).toEqual([155, 156, 157, 158, 159]);
    const whole = await runCli(["events", "--limit", "0"], { cwd });
    expect(whole.stderr).not.toContain("showing the last");
  });

  it("hides the-loop's own echoes from the table: they are written at debug level", async () => {
    const echo = record({
      pid: 8,
      ts: ago(20_000),
      event: "routing.dropped",
      source: "daemon",
      level: "debug",
      reason: "self-echo",
      actor: "the-loop",
      kind: "labeled",
      work_item: "local:default#1",
    });
    const { cwd } = await projectWithLog(jsonl(...FIXTURE, echo));
    const table = await runCli(["events", "--work-item", "#1"], { cwd });
    expect(table.stdout).not.toContain("self-echo");
    expect(table.stdout.trimEnd().split("\n")).toHaveLength(1 + 3);
    expect(await eventsJson(cwd, "--work-item", "#1")).toEqual([1, 2, 5, 8]);
  });

  it("--file reads another log, without needing a valid config", async () => {
    const cwd = await tempDir();
    await mkdir(join(cwd, ".the-loop"));
    await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), "no_such_key: true\n");
    await writeFile(join(cwd, "copy.jsonl"), jsonl(...FIXTURE));
    expect(await eventsJson(cwd, "--file", "copy.jsonl", "--work-item", "github:octo/app#15")).toEqual([4, 6]);
    // A bare `#1` needs the default project, so the (broken) config is read and reported.
    const bare = await runCli(["events", "--file", "copy.jsonl", "--work-item", "#1"], { cwd });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/no_such_key/);
  });

  it("lists the catalog with --types", async () => {
    const cwd = await tempDir();
    const json = await runCli(["events", "--types", "--json"], { cwd });
    expect(json.code).toBe(0);
    const entries = jsonOf<{ type: string; family: string; level: string; summary: string; fields: Record<string, string> }[]>(json);
    expect(entries.find((entry) => entry.type === "item.labeled")).toEqual({
      type: "item.labeled",
      family: "item",
      level: "info",
      summary: "A label was added to a local work item.",
      fields: { work_item: "string", actor: "string", label: "string" },
    });
    const narrowed = await runCli(["events", "--types", "--json", "--type", "item.*ed"], { cwd });
    expect(jsonOf<{ type: string }[]>(narrowed).every((entry) => entry.type.endsWith("ed"))).toBe(true);
    const table = await runCli(["events", "--types"], { cwd });
    expect(table.stdout).toMatch(/^TYPE +FAMILY +LEVEL +FIELDS +SUMMARY\n/);
    expect(table.stdout).toMatch(/item\.labeled +item +info +work_item, actor, label +A label was added/);
  });

  it.each<[string, string[], RegExp]>([
    ["a bad --since", ["--since", "yesterday"], /--since: invalid time "yesterday": expected .*30s.*ISO-8601/],
    ["a malformed work item", ["--work-item", "not a ref"], /--work-item: invalid work item reference "not a ref"/],
    ["--follow with --format json", ["--follow", "--format", "json"], /--follow cannot stream.*--format jsonl/],
    ["--follow with --json", ["--follow", "--json"], /--follow cannot stream/],
    ["--json with --format jsonl", ["--json", "--format", "jsonl"], /--json means --format json/],
    ["--types with --follow", ["--types", "--follow"], /--types .* cannot be combined with --follow/],
    ["an unknown level", ["--level", "loud"], /argument 'loud' is invalid/],
    ["a negative limit", ["--limit", "-1"], /./],
  ])("exits 2 for %s", async (_what, args, message) => {
    const { cwd } = await projectWithLog(jsonl(...FIXTURE));
    const result = await runCli(["events", ...args], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});

describe("the-loop events --follow", () => {
  const running: ChildProcessWithoutNullStreams[] = [];
  afterEach(() => {
    for (const child of running.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  });

  function startFollowing(cwd: string, args: readonly string[]) {
    const child = spawn(process.execPath, [BIN, "events", "--follow", ...args], { cwd, env: cliEnv({ cwd }) });
    running.push(child);
    const output = { stdout: "", stderr: "" };
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output.stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output.stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    const stdoutHas = (text: string) =>
      waitFor(`stdout to contain ${text}\n(stdout so far:\n${output.stdout})`, () => (output.stdout.includes(text) ? true : undefined));
    const stderrHas = (text: string) => waitFor(`stderr to contain ${text}`, () => (output.stderr.includes(text) ? true : undefined));
    return { child, output, exited, stdoutHas, stderrHas };
  }

  const pidsOn = (stdout: string): number[] =>
    stdout
      .trimEnd()
      .split("\n")
      .map((line) => Number((JSON.parse(line) as EventRecord).pid));

  it("waits for the log, streams appended lines whole, survives truncation, and stops on SIGTERM", async () => {
    const { cwd, log } = await projectWithLog();
    const follower = startFollowing(cwd, ["--format", "jsonl"]);
    await follower.stderrHas("waiting for it to be created");

    await writeFile(log, jsonl(record({ pid: 11 })));
    await follower.stdoutHas('"pid":11');

    // One complete line and the first half of the next in one write: once the complete one is
    // printed, the follower has read the half line too and must hold it until the rest arrives.
    const split = JSON.stringify(record({ pid: 12 }));
    await appendFile(log, `${JSON.stringify(record({ pid: 13, event: "item.closed" }))}\n${split.slice(0, 30)}`);
    await follower.stdoutHas('"pid":13');
    await appendFile(log, `${split.slice(30)}\n`);
    await follower.stdoutHas('"pid":12');

    await writeFile(log, jsonl(record({ pid: 14 })));
    await follower.stdoutHas('"pid":14');
    await follower.stderrHas("was truncated");
    await appendFile(log, jsonl(record({ pid: 15 })));
    await follower.stdoutHas('"pid":15');

    follower.child.kill("SIGTERM");
    expect(await follower.exited).toBe(0);
    expect(pidsOn(follower.output.stdout)).toEqual([11, 13, 12, 14, 15]);
  });

  it("prints the last --limit matches first, filters what follows, and exits 130 on Ctrl-C", async () => {
    const { cwd, log } = await projectWithLog(jsonl(...FIXTURE));
    const follower = startFollowing(cwd, ["--format", "jsonl", "--type", "item.*", "--limit", "2"]);
    await follower.stdoutHas('"pid":5');
    await appendFile(log, jsonl(record({ pid: 21, event: "session.closed" }), record({ pid: 22, event: "item.reopened" })));
    await follower.stdoutHas('"pid":22');

    follower.child.kill("SIGINT");
    expect(await follower.exited).toBe(130);
    expect(pidsOn(follower.output.stdout)).toEqual([3, 5, 22]);
    expect(follower.output.stderr).not.toMatch(/error/);
  });

  it("follows as a table too", async () => {
    const { cwd, log } = await projectWithLog(jsonl(...FIXTURE.slice(0, 1)));
    const follower = startFollowing(cwd, []);
    await follower.stdoutHas("item.opened");
    await appendFile(log, jsonl(record({ pid: 31, event: "item.closed", work_item: "local:default#9", actor: "cy" })));
    await follower.stdoutHas("local:default#9");
    follower.child.kill("SIGTERM");
    expect(await follower.exited).toBe(0);
    const [header, ...rows] = follower.output.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^TIME +LEVEL +SOURCE +EVENT +WORK ITEM +DETAILS$/);
    expect(rows[1]).toMatch(/ info +cli +item\.closed +local:default#9 +actor=cy$/);
  });
});
