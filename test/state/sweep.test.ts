import { spawnSync } from "node:child_process";
import { chmod, mkdir, readdir, readFile, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { sweepStaleTemporaries } from "../../src/state/atomic.js";
import { processStartTicks } from "../../src/state/process.js";
import { scratchFileName, scratchFileWriter, sweepScratchFiles } from "../../src/state/scratch.js";
import { tempDir } from "../support/temp.js";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** A pid that surely ran and has surely exited: a child we waited for. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

describe("sweepStaleTemporaries", () => {
  it("removes the temporary files of writers that are gone, and nothing else", async () => {
    const dir = await tempDir();
    const dead = deadPid();
    const names = [`.record.json.${dead}.ab12cd34.tmp`, `.record.json.${process.pid}.ab12cd34.tmp`, "record.json", `.notes.${dead}.tmp`, "other.tmp"];
    for (const name of names) await writeFile(join(dir, name), "x");
    expect(sweepStaleTemporaries(dir)).toBe(1);
    expect((await readdir(dir)).sort()).toEqual(names.slice(1).sort());
  });

  it("ignores a folder that does not exist", async () => {
    expect(sweepStaleTemporaries(join(await tempDir(), "missing"))).toBe(0);
  });
});

describe("sweepScratchFiles", () => {
  it("names this process as the writer", () => {
    const name = scratchFileName("paste", "0a1b");
    expect(name).toMatch(/^the-loop-paste-\d+(\.\d+)?-0a1b\.txt$/);
    expect(scratchFileWriter(name)).toEqual({
      pid: process.pid,
      ...(processStartTicks(process.pid) === undefined ? {} : { startTicks: processStartTicks(process.pid) }),
    });
    expect(() => scratchFileName("paste", "../x")).toThrow(/invalid/);
  });

  it("removes a dead writer's files however young, and keeps a live writer's", async () => {
    const dir = await tempDir();
    const dead = deadPid();
    const parent = process.ppid;
    const parentTicks = processStartTicks(parent);
    const gone = [`the-loop-paste-${dead}-0011.txt`, `the-loop-submit-${dead}-0011.txt`];
    const kept = [
      scratchFileName("paste", "aa"),
      `the-loop-paste-${parent}-0022.txt`,
      ...(parentTicks === undefined ? [] : [`the-loop-paste-${parent}.${parentTicks}-0033.txt`]),
      // Written before writers were named: the writer is unknown, so only age removes it.
      "the-loop-paste-0044.txt",
      "notes.txt",
    ];
    // The parent's pid with another start time: a reused pid, so the writer is gone.
    if (parentTicks !== undefined) gone.push(`the-loop-paste-${parent}.${parentTicks + 1}-0055.txt`);
    for (const name of [...gone, ...kept]) await writeFile(join(dir, name), "comment text");
    expect(sweepScratchFiles(dir)).toBe(gone.length);
    expect((await readdir(dir)).sort()).toEqual([...kept].sort());

    const old = new Date(Date.now() - 120_000);
    await utimes(join(dir, "the-loop-paste-0044.txt"), old, old);
    await utimes(join(dir, "notes.txt"), old, old);
    expect(sweepScratchFiles(dir)).toBe(1);
    expect(await readdir(dir)).not.toContain("the-loop-paste-0044.txt");
    expect(await readdir(dir)).toContain("notes.txt");
  });

  it("removes the paste files of a process killed in the middle of a delivery", async () => {
    const dir = await tempDir();
    const pasteDir = join(dir, "tmp");
    // A tmux that reports the pane live, then kills its caller (the-loop) as the paste loads.
    const fakeTmux = join(dir, "tmux");
    await writeFile(fakeTmux, `#!/bin/sh\ncase " $* " in\n  *" list-panes "*) echo 0 ;;\n  *" load-buffer "*) kill -9 "$PPID" ;;\nesac\n`);
    await chmod(fakeTmux, 0o755);
    await mkdir(pasteDir);
    const tmuxModule = pathToFileURL(join(REPO_ROOT, "src/harness/tmux.ts")).href;
    const main = `
      const { TmuxRunner } = await import(${JSON.stringify(tmuxModule)});
      const runner = new TmuxRunner({ remainOnExit: false, binary: ${JSON.stringify(fakeTmux)}, tempDir: ${JSON.stringify(pasteDir)} });
      await runner.pasteText("loop-sweep", "a comment the crash must not leave behind");
      console.log("delivered");
    `;
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", main], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(child.signal).toBe("SIGKILL");
    const left = await readdir(pasteDir);
    expect(left).toHaveLength(2);
    expect(await readFile(join(pasteDir, left.find((name) => name.includes("paste")) ?? ""), "utf8")).toContain("must not leave behind");

    expect(sweepScratchFiles(pasteDir)).toBe(2);
    expect(await readdir(pasteDir)).toEqual([]);
  });

  it("ignores a folder that does not exist", async () => {
    expect(sweepScratchFiles(join(await tempDir(), "missing"))).toBe(0);
  });
});
