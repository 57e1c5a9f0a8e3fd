import { appendFile, rename, rm, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LineSplitter, LogCursor, MAX_LINE_BYTES } from "../../src/events/cursor.js";
import { tempDir } from "../support/temp.js";

/** A cursor over a file in a fresh directory, with the lines and overlong skips each poll saw. */
async function setup(): Promise<{ path: string; poll: () => Promise<{ change: string; lines: string[]; overlong: number }> }> {
  const path = join(await tempDir(), "events.jsonl");
  const cursor = new LogCursor(path);
  const poll = async (): Promise<{ change: string; lines: string[]; overlong: number }> => {
    const lines: string[] = [];
    let overlong = 0;
    const change = await cursor.poll({ onLine: (line) => lines.push(line), onOverlong: () => (overlong += 1) });
    return { change, lines, overlong };
  };
  return { path, poll };
}

describe("LogCursor", () => {
  it("waits for a missing file, then reads it from the start once it appears", async () => {
    const { path, poll } = await setup();
    expect(await poll()).toEqual({ change: "missing", lines: [], overlong: 0 });
    expect(await poll()).toEqual({ change: "missing", lines: [], overlong: 0 });
    await writeFile(path, "a\nb\n");
    expect(await poll()).toEqual({ change: "appeared", lines: ["a", "b"], overlong: 0 });
  });

  it("reads an existing file on the first poll without calling it a change, then only what is appended", async () => {
    const { path, poll } = await setup();
    await writeFile(path, "a\n");
    expect(await poll()).toEqual({ change: "read", lines: ["a"], overlong: 0 });
    expect(await poll()).toEqual({ change: "unchanged", lines: [], overlong: 0 });
    await appendFile(path, "b\nc\n");
    expect(await poll()).toEqual({ change: "read", lines: ["b", "c"], overlong: 0 });
  });

  it("holds a partial line until its newline arrives", async () => {
    const { path, poll } = await setup();
    await writeFile(path, 'a\n{"half":');
    expect((await poll()).lines).toEqual(["a"]);
    await appendFile(path, '"way"');
    expect((await poll()).lines).toEqual([]);
    await appendFile(path, "}\nb\n");
    expect((await poll()).lines).toEqual(['{"half":"way"}', "b"]);
  });

  it("starts again from the top when the file shrinks", async () => {
    const { path, poll } = await setup();
    await writeFile(path, "first line\nsecond line\n");
    await poll();
    await truncate(path, 0);
    await appendFile(path, "new\n");
    expect(await poll()).toEqual({ change: "truncated", lines: ["new"], overlong: 0 });
  });

  it("notices a truncation even when the file has regrown past where it was", async () => {
    const { path, poll } = await setup();
    await writeFile(path, "first line\n");
    await poll();
    await writeFile(path, "a different, longer first line\nand a second\n");
    expect(await poll()).toEqual({
      change: "truncated",
      lines: ["a different, longer first line", "and a second"],
      overlong: 0,
    });
  });

  it("drops a partial line when the file is truncated under it", async () => {
    const { path, poll } = await setup();
    await writeFile(path, "a\npartial");
    await poll();
    await writeFile(path, "b\n");
    expect(await poll()).toEqual({ change: "truncated", lines: ["b"], overlong: 0 });
  });

  it("reads a replacing file (rotation by rename) from its start", async () => {
    const { path, poll } = await setup();
    await writeFile(path, "old 1\nold 2\n");
    await poll();
    await rename(path, `${path}.1`);
    await writeFile(path, "new 1\nnew 2\nnew 3\n");
    expect(await poll()).toEqual({ change: "replaced", lines: ["new 1", "new 2", "new 3"], overlong: 0 });
  });

  it("reports a removed file once, then waits for it to come back", async () => {
    const { path, poll } = await setup();
    await writeFile(path, "a\n");
    await poll();
    await rm(path);
    expect((await poll()).change).toBe("removed");
    expect((await poll()).change).toBe("missing");
    await writeFile(path, "b\n");
    expect(await poll()).toEqual({ change: "appeared", lines: ["b"], overlong: 0 });
  });
});

describe("LineSplitter", () => {
  it("skips a line longer than the cap instead of holding it, and carries on after its newline", () => {
    const splitter = new LineSplitter();
    const lines: string[] = [];
    let overlong = 0;
    const push = (text: string | Buffer): void =>
      splitter.push(
        Buffer.isBuffer(text) ? text : Buffer.from(text),
        (line) => lines.push(line),
        () => (overlong += 1),
      );
    push("ok\n");
    push(Buffer.alloc(MAX_LINE_BYTES, "x"));
    push("xx");
    expect(splitter.hasPartialLine).toBe(true);
    push("tail\nnext\n");
    expect(lines).toEqual(["ok", "next"]);
    expect(overlong).toBe(1);
    expect(splitter.hasPartialLine).toBe(false);
  });
});
