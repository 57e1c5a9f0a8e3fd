import { promises as fs } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { StartQueue, StartQueueError, startQueueFile } from "../../src/registry/start-queue.js";
import { tempDir } from "../support/temp.js";

const entry = (ref: string, harness = "claude") => ({ ref, harness, queuedAt: "2026-01-01T00:00:00.000Z" });

describe("StartQueue: the starts waiting for a slot, in order, in one file", () => {
  it("is empty without a file, keeps its order across instances, and removes one entry", async () => {
    const root = await tempDir();
    const file = startQueueFile(root);
    expect(file).toBe(join(root, "queue", "starts.json"));
    const queue = new StartQueue({ file });
    expect(queue.read()).toEqual([]);
    await queue.transaction(async (entries) => ({ entries: [...entries, entry("a"), entry("b", "codex")], result: undefined }));
    await queue.transaction(async (entries) => ({ entries: [...entries, entry("c")], result: undefined }));
    // Another process reads the same file.
    const other = new StartQueue({ file });
    expect(other.read().map((e) => e.ref)).toEqual(["a", "b", "c"]);
    expect(other.positionOf("b")).toBe(2);
    expect(other.positionOf("z")).toBeUndefined();
    expect(await other.remove("b")).toBe(true);
    expect(await other.remove("b")).toBe(false);
    expect(queue.read().map((e) => e.ref)).toEqual(["a", "c"]);
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600);
  });

  it("leaves the file untouched when a transaction changes nothing, and as it was when one throws", async () => {
    const file = startQueueFile(await tempDir());
    const queue = new StartQueue({ file });
    await queue.transaction(async () => ({ entries: [entry("a")], result: undefined }));
    const before = await fs.stat(file);
    expect(await queue.transaction(async (entries) => ({ entries, result: "same" }))).toBe("same");
    expect((await fs.stat(file)).mtimeMs).toBe(before.mtimeMs);
    await expect(
      queue.transaction(async () => {
        throw new Error("the claim failed");
      }),
    ).rejects.toThrow("the claim failed");
    expect(queue.read().map((e) => e.ref)).toEqual(["a"]);
  });

  it("serializes concurrent transactions: none of them loses another's entry", async () => {
    const queue = new StartQueue({ file: startQueueFile(await tempDir()) });
    const refs = Array.from({ length: 8 }, (_, index) => `item-${index}`);
    await Promise.all(refs.map((ref) => queue.transaction(async (entries) => ({ entries: [...entries, entry(ref)], result: undefined }))));
    expect(new Set(queue.read().map((e) => e.ref))).toEqual(new Set(refs));
  });

  it.each([
    ["not JSON", "{", /damaged/],
    ["the wrong shape", JSON.stringify({ version: 2, entries: [] }), /not \{ version: 1/],
    ["an entry without its harness", JSON.stringify({ version: 1, entries: [{ ref: "a", queuedAt: "x" }] }), /entry 0 needs ref, harness and queuedAt/],
  ])("names a damaged file (%s) and how to mend it", async (_name, text, message) => {
    const file = startQueueFile(await tempDir());
    await fs.mkdir(join(file, ".."), { recursive: true });
    await fs.writeFile(file, text);
    const queue = new StartQueue({ file });
    expect(() => queue.read()).toThrow(StartQueueError);
    expect(() => queue.read()).toThrow(message);
    expect(() => queue.read()).toThrow(/remove it/);
  });
});
