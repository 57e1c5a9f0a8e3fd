import { promises as fs } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { jsonOf, runCli } from "../support/cli.js";
import type { CliResult } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { treeOf } from "../trackers/local/helpers.js";
import { readableComment } from "../../src/cli/commands/item.js";
import { SELF_COMMENT_ATTRIBUTION, SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";

interface ItemJson {
  ref: string;
  project: string;
  number: number;
  title: string;
  body: string;
  author: string;
  state: "open" | "closed";
  labels: string[];
  closedAt: string | null;
  commentCount: number;
  comments: { id: string; author: string; body: string; url: string }[];
}

interface LoggedEvent {
  event: string;
  source: string;
  work_item: string;
  actor: string;
  [field: string]: unknown;
}

let cwd: string;

beforeEach(async () => {
  cwd = await tempDir();
});

function cli(args: readonly string[], input?: string): Promise<CliResult> {
  return runCli(args, { cwd, input });
}

async function ok(args: readonly string[], input?: string): Promise<CliResult> {
  const result = await cli(args, input);
  if (result.code !== 0) throw new Error(`the-loop ${args.join(" ")} exited ${result.code}:\n${result.stderr}`);
  return result;
}

async function loggedEvents(): Promise<LoggedEvent[]> {
  let text: string;
  try {
    text = await fs.readFile(join(cwd, ".the-loop", "logs", "events.jsonl"), "utf8");
  } catch {
    return [];
  }
  return text
    .trimEnd()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LoggedEvent);
}

/** Runs a command and returns the events it added to the log. */
async function eventsOf(action: () => Promise<unknown>): Promise<LoggedEvent[]> {
  const before = (await loggedEvents()).length;
  await action();
  return (await loggedEvents()).slice(before);
}

async function show(ref: string): Promise<ItemJson> {
  return jsonOf<ItemJson>(await ok(["item", "show", ref, "--json"]));
}

describe("the-loop item", () => {
  it("round-trips new, comment, label, close and reopen, one event each", async () => {
    const me = userInfo().username;

    let created!: CliResult;
    const opened = await eventsOf(async () => {
      created = await ok(["item", "new", "Fix the login page", "--body", "It breaks on Safari.", "--label", "bug"]);
    });
    expect(created.stdout).toBe("created local:default#1: Fix the login page\n");
    expect(opened).toMatchObject([
      { event: "item.opened", source: "cli", work_item: "local:default#1", actor: me, title: "Fix the login page", labels: ["bug"] },
    ]);
    expect(await show("local:default#1")).toMatchObject({
      ref: "local:default#1",
      project: "default",
      number: 1,
      title: "Fix the login page",
      body: "It breaks on Safari.",
      author: me,
      state: "open",
      labels: ["bug"],
      comments: [],
    });

    const commented = await eventsOf(() => ok(["item", "comment", "#1", "the-loop:start-execution", "--as", "octocat"]));
    expect(commented).toMatchObject([{ event: "item.commented", work_item: "local:default#1", actor: "octocat", comment_id: "default:c2", marked: false }]);
    const piped = await eventsOf(async () => {
      const result = jsonOf<{ workItem: string; id: string; body: string; author: string }>(
        await ok(["item", "comment", "1", "-", "--json"], "from stdin\nsecond line\n"),
      );
      expect(result).toMatchObject({ workItem: "local:default#1", id: "default:c3", body: "from stdin\nsecond line", author: me });
    });
    expect(piped).toHaveLength(1);

    const labeled = await eventsOf(async () => {
      const result = await ok(["item", "label", "#1", "--add", "the-loop: auto-execute", "--add", "ui", "--remove", "bug"]);
      expect(result.stdout).toContain('added the label "ui" to local:default#1');
    });
    expect(labeled.map((event) => [event.event, event.label])).toEqual([
      ["item.unlabeled", "bug"],
      ["item.labeled", "the-loop: auto-execute"],
      ["item.labeled", "ui"],
    ]);

    const closed = await eventsOf(async () => {
      const item = jsonOf<ItemJson>(await ok(["item", "close", "local:default#1", "--json", "--as", "reviewer"]));
      expect(item).toMatchObject({ state: "closed", labels: ["the-loop: auto-execute", "ui"] });
      expect(item.closedAt).not.toBeNull();
    });
    expect(closed).toMatchObject([{ event: "item.closed", work_item: "local:default#1", actor: "reviewer" }]);

    const reopened = await eventsOf(async () => {
      expect((await ok(["item", "reopen", "#1"])).stdout).toBe("reopened local:default#1\n");
    });
    expect(reopened).toMatchObject([{ event: "item.reopened", work_item: "local:default#1", actor: me }]);

    const final = await show("#1");
    expect(final).toMatchObject({ state: "open", closedAt: null, commentCount: 2, labels: ["the-loop: auto-execute", "ui"] });
    expect(final.comments.map((comment) => [comment.id, comment.author, comment.body])).toEqual([
      ["default:c2", "octocat", "the-loop:start-execution"],
      ["default:c3", me, "from stdin\nsecond line"],
    ]);
    expect(final.comments[0]?.url).toMatch(/^file:\/\/.*\/\.the-loop\/tracker\/default\/items\/1\.json#c2$/);
  });

  it("reports a no-op on stderr, exits 0 and writes nothing", async () => {
    await ok(["item", "new", "t", "--label", "bug"]);
    await ok(["item", "close", "#1"]);
    const before = await treeOf(join(cwd, ".the-loop"));

    const again = await cli(["item", "close", "#1"]);
    expect(again).toMatchObject({ code: 0, stdout: "" });
    expect(again.stderr).toContain("local:default#1 is already closed; nothing changed");
    const label = await cli(["item", "label", "#1", "--add", "BUG", "--remove", "absent", "--json"]);
    expect(label.code).toBe(0);
    expect(jsonOf<ItemJson>(label).labels).toEqual(["bug"]);
    expect(label.stderr).toContain('already has the label "BUG"');
    expect(label.stderr).toContain('does not have the label "absent"');

    expect(await treeOf(join(cwd, ".the-loop"))).toEqual(before);
  });

  it("creates items in another project, and lists with filters", async () => {
    await ok(["item", "new", "one", "--label", "bug", "--label", "ui"]);
    await ok(["item", "new", "two", "--label", "bug"]);
    const other = await ok(["item", "new", "three", "--project", "Web", "--label", "UI", "--json"]);
    expect(jsonOf<ItemJson>(other)).toMatchObject({ ref: "local:web#1", project: "web", labels: ["UI"] });
    await ok(["item", "close", "#2"]);

    const list = async (...args: string[]): Promise<string[]> => jsonOf<ItemJson[]>(await ok(["item", "list", "--json", ...args])).map((item) => item.ref);
    const listings = await Promise.all([
      list(),
      list("--state", "closed"),
      list("--state", "all", "--label", "bug"),
      list("--label", "ui"),
      list("--label", "ui", "--label", "bug"),
      list("--project", "web"),
      list("--project", "nothing-here"),
    ]);
    expect(listings).toEqual([
      ["local:default#1", "local:web#1"],
      ["local:default#2"],
      ["local:default#1", "local:default#2"],
      ["local:default#1", "local:web#1"],
      ["local:default#1"],
      ["local:web#1"],
      [],
    ]);
    const first = jsonOf<(ItemJson & { comments?: unknown })[]>(await ok(["item", "list", "--json"]))[0];
    expect(first).toMatchObject({ commentCount: 0 });
    expect(first).not.toHaveProperty("comments");

    const table = (await ok(["item", "list", "--state", "all"])).stdout.split("\n");
    expect(table[0]).toMatch(/^REF\s+STATE\s+LABELS\s+COMMENTS\s+UPDATED\s+TITLE$/);
    expect(table[1]).toMatch(/^local:default#1\s+open\s+bug, ui\s+0\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+one$/);
    expect(table).toHaveLength(5);
    expect((await ok(["item", "list", "--label", "none-such"])).stdout).toBe("no open items match\n");
  });

  it("shows an item for people", async () => {
    await ok(["item", "new", "Fix it", "--body", "Steps:\n1. open\n2. click", "--label", "bug"]);
    await ok(["item", "comment", "#1", "Can reproduce.", "--as", "bob"]);
    const { stdout } = await ok(["item", "show", "#1"]);
    expect(stdout).toContain("local:default#1  Fix it");
    expect(stdout).toMatch(/state:\s+open/);
    expect(stdout).toMatch(/labels:\s+bug/);
    expect(stdout).toContain("    Steps:\n    1. open\n    2. click");
    expect(stdout).toContain("1 comment:");
    expect(stdout).toMatch(/bob\s+\S+Z\s+default:c2\n {4}Can reproduce\./);
  });

  it("shows the-loop's own comment as its own, without the machine marker; --json keeps the text", async () => {
    await ok(["item", "new", "Fix it"]);
    const marked = `Session started.\n\n${SELF_COMMENT_ATTRIBUTION}\n${SELF_COMMENT_MARKER}\n`;
    await ok(["item", "comment", "#1", marked, "--as", "the-loop"]);
    const { stdout } = await ok(["item", "show", "#1"]);
    expect(stdout).toMatch(/the-loop\s+\S+Z\s+default:c2\s+the-loop's own\n {4}Session started\.\n/);
    expect(stdout).not.toContain(SELF_COMMENT_MARKER);
    expect(stdout).not.toContain("autonomous comment");
    expect((await show("#1")).comments[0]?.body).toBe(marked);
  });

  it.each([
    ["a person's comment", "Can reproduce.\n", { text: "Can reproduce.", own: false }],
    ["the-loop's, marked", `Done.\n\n${SELF_COMMENT_ATTRIBUTION}\n${SELF_COMMENT_MARKER}\n`, { text: "Done.", own: true }],
    ["a quoted marker mid-text", `see ${SELF_COMMENT_MARKER} here`, { text: "see  here", own: true }],
  ])("readableComment: %s", (_what, body, expected) => {
    expect(readableComment(body)).toEqual(expected);
  });

  it("fails cleanly on bad input and missing items, changing nothing", async () => {
    await ok(["item", "new", "existing"]);
    const before = await treeOf(join(cwd, ".the-loop"));
    const failures: [string[], number, RegExp][] = [
      [["item", "show", "local:-bad#1"], 2, /invalid local project/],
      [["item", "comment", "not a ref", "hi"], 2, /invalid work item reference/],
      [["item", "close", "octo/repo#1"], 2, /github:octo\/repo#1 is a GitHub work item; the item commands act on the local tracker/],
      [["item", "show", "https://github.com/octo/repo/issues/3"], 2, /act on the local tracker/],
      [["item", "label", "#1"], 2, /--add LABEL and\/or --remove LABEL/],
      [["item", "label", "#1", "--add", "x".repeat(51)], 2, /at most 50/],
      [["item", "new", "x".repeat(257)], 2, /at most 256/],
      [["item", "new", "t", "--project", "no/slash"], 2, /invalid local project/],
      [["item", "comment", "#1", "hi", "--as", "not a login"], 2, /invalid login/],
      [["item", "comment", "#1", "   "], 2, /comment is empty/],
      [["item", "show", "#9"], 1, /no work item local:default#9; the items of "default" are #1 to #1/],
      [["item", "comment", "local:elsewhere#1", "hi"], 1, /no work item local:elsewhere#1; the local project "elsewhere" has no items/],
      [["item", "close", "#2"], 1, /no work item local:default#2/],
      [["item", "label", "#3", "--add", "bug"], 1, /no work item local:default#3/],
    ];
    // Failures write nothing, so they may run side by side; the tree comparison below proves it.
    const results = await Promise.all(failures.map(([args]) => cli(args)));
    for (const [index, [args, code, message]] of failures.entries()) {
      const result = results[index]!;
      expect({ args, code: result.code }).toEqual({ args, code });
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stdout).toBe("");
    }
    const json = await cli(["item", "show", "#9", "--json"]);
    expect(json.code).toBe(1);
    expect(jsonOf<{ error: { code: string } }>(json).error.code).toBe("not-found");
    expect(await treeOf(join(cwd, ".the-loop"))).toEqual(before);
  });

  it("refuses to write to a journal with a damaged line, and `item repair` moves it aside", async () => {
    await ok(["item", "new", "t"]);
    await ok(["item", "comment", "#1", "one"]);
    await ok(["item", "comment", "#1", "two"]);
    const dir = join(cwd, ".the-loop", "tracker", "default");
    const journal = join(dir, "journal.jsonl");
    const lines = (await fs.readFile(journal, "utf8")).split("\n");
    await fs.writeFile(journal, [lines[0], "{ not json", lines[2], ""].join("\n"));

    const refused = await cli(["item", "comment", "#1", "three"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain(`${journal} is damaged: line 2 is not JSON; run \`the-loop item repair --project default\``);
    expect((await fs.readFile(journal, "utf8")).split("\n")).toHaveLength(4);

    let report!: { project: string; journal: string; kept: number; moved: { line: number; reason: string }[]; aside: string };
    const repaired = await eventsOf(async () => {
      report = jsonOf(await ok(["item", "repair", "--json"]));
    });
    expect(report).toMatchObject({ project: "default", journal, kept: 2, moved: [{ line: 2, reason: "line 2 is not JSON" }] });
    expect(report.aside).toMatch(/\/journal\.jsonl\.damaged-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z$/);
    expect(await fs.readFile(report.aside, "utf8")).toBe("{ not json\n");
    expect(repaired).toMatchObject([
      { event: "item.repaired", level: "warning", project: "default", journal, kept: 2, moved: 1, torn: false, aside: report.aside },
    ]);

    expect((await ok(["item", "comment", "#1", "three"])).stdout).toBe("commented on local:default#1 (default:c4)\n");
    const again = await ok(["item", "repair"]);
    expect(again.stdout).toBe(`${journal}: all 3 lines are readable; nothing to repair\n`);
    expect(jsonOf(await ok(["item", "repair", "--json"]))).toEqual({ project: "default", journal, kept: 3, moved: [], torn: false, aside: null });
  });

  it("prints what a repair kept and moved", async () => {
    await ok(["item", "new", "t", "--project", "web"]);
    await ok(["item", "comment", "local:web#1", "one"]);
    const journal = join(cwd, ".the-loop", "tracker", "web", "journal.jsonl");
    const lines = (await fs.readFile(journal, "utf8")).split("\n");
    await fs.writeFile(journal, ["garbage", lines[0], lines[1], ""].join("\n"));
    const { stdout } = await ok(["item", "repair", "--project", "Web"]);
    expect(stdout).toMatch(/^kept 2 lines of .*journal\.jsonl; moved 1 aside to .*journal\.jsonl\.damaged-\S+\n {2}line 1 is not JSON\n$/);
    const missing = await cli(["item", "repair", "--project", "nothing-here"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/the local project "nothing-here" has no journal/);
  });

  it("uses the configured default project for #N", async () => {
    await fs.mkdir(join(cwd, ".the-loop"), { recursive: true });
    await fs.writeFile(join(cwd, ".the-loop", "cli-config.yaml"), "integrations:\n  local:\n    project: Acme\n");
    expect((await ok(["item", "new", "configured"])).stdout).toBe("created local:acme#1: configured\n");
    expect((await show("#1")).ref).toBe("local:acme#1");
  });
});
