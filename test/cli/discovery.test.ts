import { mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { jsonOf, runCli } from "../support/cli.js";
import type { CliResult } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

/** A project with a config and a `src/deep` folder to run commands from. */
async function projectWithSubfolder(): Promise<{ dir: string; deep: string; home: string }> {
  const dir = await tempDir();
  const home = await tempDir();
  await mkdir(join(dir, ".the-loop"));
  await writeFile(join(dir, ".the-loop", "cli-config.yaml"), "integrations:\n  local:\n    project: app\n");
  const deep = join(dir, "src", "deep");
  await mkdir(deep, { recursive: true });
  return { dir, deep, home };
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

function ok(result: CliResult): CliResult {
  expect(result.code, result.stderr).toBe(0);
  return result;
}

describe("config discovery from the CLI", () => {
  it("uses the project above the current directory, says so once on stderr, and keeps --json stdout clean", async () => {
    const { dir, deep, home } = await projectWithSubfolder();
    const created = ok(await runCli(["item", "new", "From deep inside", "--json"], { cwd: deep, home }));
    expect(jsonOf<{ ref: string }>(created).ref).toBe("local:app#1");
    expect(created.stderr).toBe(`using ${join(dir, ".the-loop", "cli-config.yaml")}\n`);
    expect(await exists(join(deep, ".the-loop"))).toBe(false);
    expect(await exists(join(dir, "src", ".the-loop"))).toBe(false);

    const here = ok(await runCli(["item", "list", "--json"], { cwd: dir, home }));
    expect(here.stderr).toBe("");
    expect(jsonOf<{ ref: string }[]>(here).map((item) => item.ref)).toEqual(["local:app#1"]);
    const listed = ok(await runCli(["sessions", "list"], { cwd: deep, home }));
    expect(listed.stderr).toBe(`using ${join(dir, ".the-loop", "cli-config.yaml")}\n`);
  });

  it("says nothing about a config named with --config", async () => {
    const { dir, deep, home } = await projectWithSubfolder();
    const result = ok(await runCli(["--config", join(dir, ".the-loop", "cli-config.yaml"), "item", "list"], { cwd: deep, home }));
    expect(result.stderr).toBe("");
  });

  it("start with no config anywhere says where it looked and that init writes one", async () => {
    const cwd = await tempDir();
    const home = await tempDir();
    const start = await runCli(["start"], { cwd, home });
    expect(start.code).toBe(2);
    expect(start.stderr).toContain("no config found");
    expect(start.stderr).toContain(".the-loop/cli-config.yaml in the current directory or a folder above it");
    expect(start.stderr).toContain("`the-loop init`");
    expect(start.stderr).not.toContain("no service is enabled");
  });

  it("init still writes the config in the current directory, even inside a project", async () => {
    const { deep, home } = await projectWithSubfolder();
    ok(await runCli(["init"], { cwd: deep, home }));
    expect(await exists(join(deep, ".the-loop", "cli-config.yaml"))).toBe(true);
  });
});

describe("refs and help", () => {
  it.each(["1", "#1", "local:app#1"])("accepts %s for a work item in the default local project", async (ref) => {
    const { dir, home } = await projectWithSubfolder();
    ok(await runCli(["item", "new", "First"], { cwd: dir, home }));
    const shown = ok(await runCli(["item", "show", ref, "--json"], { cwd: dir, home }));
    expect(jsonOf<{ ref: string }>(shown).ref).toBe("local:app#1");
  });

  it.each<[string, string[]]>([
    ["a missing ref argument", ["item", "show"]],
    ["a --work-item without its value", ["sessions", "attach", "--work-item"]],
    ["a required --work-item left out", ["sessions", "close"]],
    ["a control command with neither --work-item nor THE_LOOP_WORK_ITEM", ["sessions", "stop"]],
  ])("says a shell may have eaten an unquoted #1 for %s", async (_what, args) => {
    const { dir, home } = await projectWithSubfolder();
    const result = await runCli(args, { cwd: dir, home });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("an unquoted #1 is a comment to the shell");
    expect(result.stderr).toContain("quote it ('#1') or write 1");
  });

  it("does not add the hint to other missing arguments", async () => {
    const { dir, home } = await projectWithSubfolder();
    const result = await runCli(["item", "new"], { cwd: dir, home });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("missing required argument 'title'");
    expect(result.stderr).not.toContain("#1");
  });

  it.each<[string[], string]>([
    [["help", "sessions", "attach"], "Usage: the-loop sessions attach [options]"],
    [["--config", "x.yaml", "help", "item", "show"], "Usage: the-loop item show [options] <ref>"],
    [["help", "sessions"], "Usage: the-loop sessions [options] [command]"],
    [["sessions", "help", "attach"], "Usage: the-loop sessions attach [options]"],
  ])("the-loop %j prints that command's help", async (args, usage) => {
    const cwd = await tempDir();
    const result = await runCli(args, { cwd });
    expect(result.code).toBe(0);
    expect(result.stdout.split("\n")[0]).toBe(usage);
  });
});
