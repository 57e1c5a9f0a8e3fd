import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CorruptFileError, createFileExclusive, isTemporaryName, readJsonFile, toJsonText, writeFileAtomic, writeJsonAtomic } from "../../src/state/atomic.js";
import { tempDir } from "../support/temp.js";

const modeOf = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

describe("writeFileAtomic", () => {
  it("creates a file, then replaces its content whole", async () => {
    const dir = await tempDir();
    const path = join(dir, "record.json");
    await writeFileAtomic(path, "a much longer first version\n");
    expect(await readFile(path, "utf8")).toBe("a much longer first version\n");
    await writeFileAtomic(path, "short\n");
    // A shorter rewrite must not keep the tail of the longer one.
    expect(await readFile(path, "utf8")).toBe("short\n");
    expect(await readdir(dir)).toEqual(["record.json"]);
  });

  it("writes binary data byte for byte", async () => {
    const dir = await tempDir();
    const bytes = Uint8Array.from([0, 255, 10, 13, 128]);
    await writeFileAtomic(join(dir, "blob"), bytes);
    expect(new Uint8Array(await readFile(join(dir, "blob")))).toEqual(bytes);
  });

  it("creates missing parent directories", async () => {
    const dir = await tempDir();
    const path = join(dir, "sessions", "control", "item.json");
    await writeFileAtomic(path, "{}\n");
    expect(await readFile(path, "utf8")).toBe("{}\n");
  });

  it("honours the requested mode, also when replacing a file that had another", async () => {
    const dir = await tempDir();
    const path = join(dir, "private.json");
    await writeFileAtomic(path, "public\n", { mode: 0o644 });
    expect(await modeOf(path)).toBe(0o644);
    await writeFileAtomic(path, "secret\n", { mode: 0o600 });
    expect(await modeOf(path)).toBe(0o600);
  });

  it("keeps a file's mode when a rewrite names none, so a private file never widens", async () => {
    const dir = await tempDir();
    const path = join(dir, "private.json");
    await writeFileAtomic(path, "secret\n", { mode: 0o600 });
    await writeFileAtomic(path, "still secret\n");
    expect(await modeOf(path)).toBe(0o600);
    await writeFileAtomic(join(dir, "new.json"), "{}\n");
    expect(await modeOf(join(dir, "new.json"))).toBe(0o600);
  });

  it("makes a new file 0600 and a missing folder 0700, whatever the umask", async () => {
    const dir = await tempDir();
    const previous = process.umask(0);
    try {
      await writeJsonAtomic(join(dir, "made", "deep", "record.json"), {});
      await createFileExclusive(join(dir, "made", "once.json"), "{}\n");
    } finally {
      process.umask(previous);
    }
    expect(await modeOf(join(dir, "made"))).toBe(0o700);
    expect(await modeOf(join(dir, "made", "deep"))).toBe(0o700);
    expect(await modeOf(join(dir, "made", "deep", "record.json"))).toBe(0o600);
    expect(await modeOf(join(dir, "made", "once.json"))).toBe(0o600);
  });

  it("removes its temporary file when the write fails", async () => {
    const dir = await tempDir();
    const target = join(dir, "occupied");
    await mkdir(target);
    await expect(writeFileAtomic(target, "data")).rejects.toMatchObject({ code: "EISDIR" });
    expect(await readdir(dir)).toEqual(["occupied"]);
    expect(await readdir(target)).toEqual([]);
  });

  it("fails, leaving nothing behind, when the parent path is a file", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "file"), "x");
    await expect(writeFileAtomic(join(dir, "file", "child.json"), "{}")).rejects.toMatchObject({ code: "EEXIST" });
    expect(await readdir(dir)).toEqual(["file"]);
  });
});

describe("createFileExclusive", () => {
  it("creates the file when nothing is there, with the requested mode", async () => {
    const dir = await tempDir();
    const path = join(dir, "claims", "claim.json");
    expect(await createFileExclusive(path, "mine\n", { mode: 0o600 })).toBe(true);
    expect(await readFile(path, "utf8")).toBe("mine\n");
    expect(await modeOf(path)).toBe(0o600);
    expect(await readdir(join(dir, "claims"))).toEqual(["claim.json"]);
  });

  it("returns false and leaves an existing file untouched", async () => {
    const dir = await tempDir();
    const path = join(dir, "claim.json");
    await writeFile(path, "first\n", { mode: 0o640 });
    const before = await stat(path);
    expect(await createFileExclusive(path, "second\n", { mode: 0o600 })).toBe(false);
    expect(await readFile(path, "utf8")).toBe("first\n");
    const after = await stat(path);
    expect(after.ino).toBe(before.ino);
    expect(after.mode & 0o777).toBe(0o640);
    expect(after.nlink).toBe(1);
    expect(await readdir(dir)).toEqual(["claim.json"]);
  });
});

describe("isTemporaryName", () => {
  it.each([
    [".record.json.1234.0a1b2c3d.tmp", true],
    [".x.tmp", true],
    ["record.json", false],
    ["record.tmp", false],
    [".record.json", false],
  ])("%s → %s", (name, expected) => {
    expect(isTemporaryName(name)).toBe(expected);
  });
});

describe("JSON files", () => {
  it("writes pretty JSON with a final newline and reads it back", async () => {
    const dir = await tempDir();
    const path = join(dir, "state.json");
    const value = { status: "active", list: [1, 2], nested: { ok: true } };
    await writeJsonAtomic(path, value);
    expect(await readFile(path, "utf8")).toBe(toJsonText(value));
    expect(toJsonText(value)).toBe(`${JSON.stringify(value, null, 2)}\n`);
    expect(await readJsonFile(path)).toEqual(value);
  });

  it("reads a missing file as undefined", async () => {
    const dir = await tempDir();
    expect(await readJsonFile(join(dir, "absent.json"))).toBeUndefined();
    expect(await readJsonFile(join(dir, "no-such-dir", "absent.json"))).toBeUndefined();
  });

  it("reports bad JSON as a CorruptFileError naming the path", async () => {
    const dir = await tempDir();
    const path = join(dir, "torn.json");
    await writeFile(path, '{"status": "act');
    const error: unknown = await readJsonFile(path).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CorruptFileError);
    expect(error).toMatchObject({ name: "CorruptFileError", path });
    expect((error as CorruptFileError).message).toContain(path);
    expect((error as CorruptFileError).message).toMatch(/move it aside/);
  });

  it("reports an empty file as corrupt, not as missing", async () => {
    const dir = await tempDir();
    const path = join(dir, "empty.json");
    await writeFile(path, "");
    await expect(readJsonFile(path)).rejects.toBeInstanceOf(CorruptFileError);
  });

  it("passes other read errors through", async () => {
    const dir = await tempDir();
    await expect(readJsonFile(dir)).rejects.toMatchObject({ code: "EISDIR" });
  });
});
