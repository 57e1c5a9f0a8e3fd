import { spawnSync } from "node:child_process";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sweepStaleTemporaries } from "../../src/state/atomic.js";
import { tempDir } from "../support/temp.js";

/** A pid that surely ran and has surely exited: a child we waited for. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

describe("sweepStaleTemporaries", () => {
  it("removes the temporary files of writers that are gone, and nothing else", async () => {
    const dir = await tempDir();
    const dead = deadPid();
    const names = [
      `.record.json.${dead}.ab12cd34.tmp`,
      `.record.json.${process.pid}.ab12cd34.tmp`,
      "record.json",
      `.notes.${dead}.tmp`,
      "other.tmp",
    ];
    for (const name of names) await writeFile(join(dir, name), "x");
    expect(sweepStaleTemporaries(dir)).toBe(1);
    expect((await readdir(dir)).sort()).toEqual(names.slice(1).sort());
  });

  it("ignores a folder that does not exist", async () => {
    expect(sweepStaleTemporaries(join(await tempDir(), "missing"))).toBe(0);
  });
});
