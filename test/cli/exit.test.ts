import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { BIN, REPO_ROOT, cliEnv, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[`);

describe("the CLI's exit codes and output streams", () => {
  it("prints the package version", async () => {
    const { version } = JSON.parse(await readFile(`${REPO_ROOT}/package.json`, "utf8")) as { version: string };
    const result = await runCli(["--version"], { cwd: await tempDir() });
    expect(result).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("prints help and exits 0", async () => {
    const result = await runCli(["--help"], { cwd: await tempDir() });
    expect(result.code).toBe(0);
    for (const command of ["init", "config", "events", "item", "demo"]) expect(result.stdout).toContain(`  ${command}`);
  });

  it("answers --help from generated text that is exactly commander's, and keeps it current", async () => {
    const { HELP_TEXT_FILE, helpTextModule, topLevelHelp } = await import("../../src/cli/help-source.js");
    const checkedIn = await readFile(`${REPO_ROOT}/${HELP_TEXT_FILE}`, "utf8");
    expect(checkedIn, "stale generated file: run `npm run generate` and commit the result").toBe(helpTextModule());
    for (const flag of ["--help", "-h"]) {
      expect(await runCli([flag], { cwd: await tempDir() })).toEqual({ code: 0, stdout: topLevelHelp(), stderr: "" });
    }
    // Help of a command still comes from commander itself.
    const sub = await runCli(["sessions", "--help"], { cwd: await tempDir() });
    expect(sub.code).toBe(0);
    expect(sub.stdout).toContain("link-pr");
  });

  it.each([
    ["an unknown command", ["frobnicate"]],
    ["an unknown option", ["events", "--frobnicate"]],
    ["a missing argument", ["item", "show"]],
    ["a bad option value", ["events", "--limit", "many"]],
    ["a bad choice", ["events", "--format", "xml"]],
    ["no command at all", []],
  ])("exits 2 on %s", async (_name, args) => {
    const result = await runCli(args, { cwd: await tempDir() });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).not.toBe("");
  });

  it("writes no colour under NO_COLOR, even when FORCE_COLOR asks for it", async () => {
    const cwd = await tempDir();
    const forced = await runCli(["config", "validate"], { cwd, env: { NO_COLOR: undefined, FORCE_COLOR: "1" } });
    expect(forced.stdout).toMatch(ANSI);
    const plain = await runCli(["config", "validate"], { cwd, env: { NO_COLOR: "1", FORCE_COLOR: "1" } });
    expect(plain.code).toBe(0);
    expect(plain.stdout).not.toMatch(ANSI);
  });

  it("ends quietly with its exit code when the reader closes the pipe early (`| head`)", async () => {
    const cwd = await tempDir();
    // An event log far larger than a pipe's buffer, so the writer is still writing when the reader leaves.
    const line = JSON.stringify({ ts: "2026-11-30T00:00:00.000Z", source: "daemon", event: "daemon.started", level: "info", pid: 1, services: ["poller"] });
    await mkdir(join(cwd, ".the-loop", "logs"), { recursive: true });
    await writeFile(join(cwd, ".the-loop", "logs", "events.jsonl"), `${line}\n`.repeat(20_000));
    const child = spawn(process.execPath, [BIN, "events", "--limit", "0", "--json"], { cwd, env: cliEnv({ cwd }), stdio: ["ignore", "pipe", "pipe"] });
    let stderrText = "";
    child.stderr.on("data", (chunk: Buffer) => (stderrText += chunk.toString()));
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on("close", (exit) => resolve(exit)));
    expect(stderrText).not.toContain("EPIPE");
    expect(stderrText).not.toContain("bug in the-loop");
    expect(code).toBe(0);
  });
});
