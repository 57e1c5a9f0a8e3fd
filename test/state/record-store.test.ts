import { mkdir, readFile, readdir, utimes, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import { DamagedRecordError, FileRecordStore } from "../../src/state/index.js";
import type { RecordKind, RecordOf, RecordStore } from "../../src/state/index.js";
import { RefError, workItemSlug } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";
import { OTHER, REF, noteKind, noteOf, recordStoreContract, thrown } from "./record-store-contract.js";
import type { ContractStore, Note, noteSchema } from "./record-store-contract.js";

/**
 * The file store: what only it does (its files, folders, locks and listing cache). What every
 * backend does alike is the contract's (record-store-contract.ts, run at the end), with its note
 * kind: a schema, a few facts, a folder; nothing of sessions or control records.
 */
const jsonOf = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

async function storeOf(
  kind: RecordKind<typeof noteSchema> = noteKind,
  extra: { listingCache?: string; trustPlacement?: boolean; foreignFiles?: string[] } = {},
) {
  const dir = join(await tempDir(), "notes");
  return new FileRecordStore({ kind, dir, lock: { timeoutMs: 2_000 }, ...extra });
}

async function put(store: FileRecordStore<typeof noteSchema>, ref: string, text: string): Promise<string> {
  await mkdir(store.dir, { recursive: true });
  const file = store.locate(ref);
  await writeFile(file, text);
  return file;
}

describe("the record store's interface", () => {
  it("names work items and kinds, and the file store implements it with the type inferred from the schema", async () => {
    const store = await storeOf();
    const seam: RecordStore<Note> = store;
    expectTypeOf<RecordOf<typeof noteKind>>().toEqualTypeOf<Note>();
    expectTypeOf(seam.get).parameter(0).toEqualTypeOf<string>();
    expectTypeOf(seam.get).returns.toEqualTypeOf<Promise<Note | undefined>>();
    await seam.transaction(REF, (tx) => tx.write(noteOf(REF)));
    expect(await seam.get("GitHub:Octo/Repo#15")).toEqual(noteOf(REF));
    expect(await seam.list()).toEqual({ records: [noteOf(REF)], problems: [] });
    expect(await seam.remove(REF)).toBe(true);
    expect(await seam.get(REF)).toBeUndefined();
  });
});

describe("FileRecordStore reads", () => {
  it("keeps one file per work item, <dir>/<slug>.json, for every spelling of its ref", async () => {
    const store = await storeOf();
    expect(store.locate(REF)).toBe(join(store.dir, `${workItemSlug(REF)}.json`));
    expect(store.locate("github:github.com/Octo/Repo#15")).toBe(store.locate(REF));
    expect(() => store.locate("octo/repo#15")).toThrow(RefError);
  });

  // What a record that parses but is wrong makes of a read is the contract's; a file alone can hold what is not JSON.
  it("throws a DamagedRecordError naming the item, the file and the reason when the record is not JSON", async () => {
    const store = await storeOf();
    const file = await put(store, REF, "{ torn");
    const error = thrown(() => store.readSync("GitHub:Octo/Repo#15"));
    expect(error).toBeInstanceOf(DamagedRecordError);
    const damaged = error as DamagedRecordError;
    expect({ kind: damaged.kind, item: damaged.item, where: damaged.where, exitCode: damaged.exitCode }).toEqual({
      kind: "note",
      item: REF,
      where: file,
      exitCode: 1,
    });
    expect(damaged.reason).toMatch(/^not valid JSON \(/);
    expect(damaged.message).toBe(`note ${file} is damaged: ${damaged.reason}; throw it away`);
    await expect(store.get(REF)).rejects.toBeInstanceOf(DamagedRecordError);
  });
});

describe("FileRecordStore.transaction", () => {
  it("writes 2-space JSON and a newline, leaving no lock or temporary file", async () => {
    const store = await storeOf();
    await store.transaction(REF, (tx) => tx.write(noteOf(REF, { text: "first" })));
    expect(await readFile(store.locate(REF), "utf8")).toBe(jsonOf(noteOf(REF, { text: "first" })));
    expect(await readdir(store.dir)).toEqual([`${workItemSlug(REF)}.json`]);
  });

  it("writes nothing into the folder for a write it refuses", async () => {
    const store = await storeOf();
    await expect(store.transaction(REF, (tx) => tx.write(noteOf(REF, { text: "" })))).rejects.toThrow(/^refusing to write an invalid note/);
    await expect(store.transaction(REF, (tx) => tx.write(noteOf(OTHER)))).rejects.toThrow(`refusing to write a note for ${OTHER} as the record of ${REF}`);
    // The lock made the folder; nothing was written into it.
    expect(await readdir(store.dir)).toEqual([]);
  });

  it("removes the record's file durably", async () => {
    const store = await storeOf();
    await store.transaction(REF, (tx) => tx.write(noteOf(REF)));
    await store.transaction(REF, (tx) => tx.remove());
    expect(await readdir(store.dir)).toEqual([]);
  });
});

describe("FileRecordStore.list", () => {
  it("lists every record in the kind's order, skipping temporaries, folders, lock folders, foreign and other names", async () => {
    const store = await storeOf(noteKind, { foreignFiles: ["state.json"] });
    const late = noteOf(REF, { at: "2025-03-02T00:00:00Z" });
    const early = noteOf(OTHER, { at: "2025-03-01T00:00:00Z" });
    await store.transaction(REF, (tx) => tx.write(late));
    await store.transaction(OTHER, (tx) => tx.write(early));
    await writeFile(join(store.dir, `.${workItemSlug(REF)}.json.4242.deadbeef.tmp`), "{ torn");
    await writeFile(join(store.dir, "state.json"), "{}");
    await writeFile(join(store.dir, "README.md"), "notes");
    await mkdir(join(store.dir, "sub.json"));
    await mkdir(join(store.dir, `${workItemSlug(REF)}.json.lock`));
    expect(store.listSync()).toEqual({ records: [early, late], problems: [] });
    expect(store.listSync({ keep: (note) => note.item.ref === REF }).records).toEqual([late]);
  });

  it("reports a damaged or misplaced record among the problems and lists the rest", async () => {
    const store = await storeOf();
    await store.transaction(REF, (tx) => tx.write(noteOf(REF)));
    const torn = await put(store, OTHER, "{ torn");
    const elsewhere = await put(store, "github:acme/app#7", jsonOf(noteOf(REF)));
    const spelt = await put(store, "github:acme/app#8", jsonOf(noteOf("GitHub:Acme/App#8")));
    const malformed = await put(store, "github:acme/app#9", jsonOf(noteOf("acme/app#9")));
    const listing = store.listSync();
    expect(listing.records).toEqual([noteOf(REF)]);
    const byPlace = new Map(listing.problems.map((problem) => [problem.where, problem.message]));
    expect(byPlace.size).toBe(4);
    expect(byPlace.get(torn)).toMatch(/^not valid JSON \(/);
    expect(byPlace.get(elsewhere)).toBe(`it holds ${REF}, whose record is ${workItemSlug(REF)}.json`);
    expect(byPlace.get(spelt)).toBe("item.ref: GitHub:Acme/App#8 is not canonical (github:acme/app#8)");
    expect(byPlace.get(malformed)).toMatch(/^item\.ref: invalid work item reference/);
    // Trusting placement, a record is taken where it is found.
    const trusting = new FileRecordStore({ kind: noteKind, dir: store.dir, trustPlacement: true });
    expect(trusting.listSync().records).toHaveLength(4);
  });

  it("answers from the folder cache while the folder is unchanged, and never caches problems", async () => {
    const cache = join(await tempDir(), "cache", "notes.json");
    const store = await storeOf(noteKind, { listingCache: cache });
    await store.transaction(REF, (tx) => tx.write(noteOf(REF)));
    const longAgo = new Date(Date.now() - 60_000);
    await utimes(store.dir, longAgo, longAgo);
    expect(store.listSync().records).toEqual([noteOf(REF)]);
    expect(JSON.parse(await readFile(cache, "utf8"))).toMatchObject({ dir: store.dir, entries: [noteOf(REF)] });
    // Edited in place, without the rename every write makes: the cache answered.
    await writeFile(store.locate(REF), jsonOf(noteOf(REF, { text: "edited" })));
    expect(store.listSync().records).toEqual([noteOf(REF)]);
    expect(store.listSync({ keep: () => false }).records).toEqual([]);
    // A write renames a file into the folder: seen at once.
    await store.transaction(OTHER, (tx) => tx.write(noteOf(OTHER, { at: "2025-03-03T00:00:00Z" })));
    expect(store.listSync().records.map((note) => note.text)).toEqual(["edited", "hello"]);
    await put(store, "local:demo#9", "{");
    await utimes(store.dir, longAgo, longAgo);
    expect(store.listSync().problems).toHaveLength(1);
    expect(store.listSync().problems).toHaveLength(1);
  });
});

describe("FileRecordStore.remove and moveAside", () => {
  it("removes an item's record under its lock, whatever it holds", async () => {
    const store = await storeOf();
    await put(store, REF, "{ damaged");
    expect(await store.remove("GitHub:Octo/Repo#15")).toBe(true);
    expect(await store.remove(REF)).toBe(false);
    expect(await readdir(store.dir)).toEqual([]);
  });

  it("moves a record aside to a name no read or listing takes for a record", async () => {
    const store = await storeOf();
    const file = await put(store, REF, "{ damaged");
    const aside = await store.moveAside(REF, "Damaged record!");
    expect(aside).toMatch(new RegExp(`^${file.replace(/[.]/g, "\\.")}\\.damaged-record-\\d{4}-\\d\\d-\\d\\dT[\\d-]+Z$`));
    expect(await readFile(aside as string, "utf8")).toBe("{ damaged");
    expect(store.readSync(REF)).toBeUndefined();
    expect(store.listSync()).toEqual({ records: [], problems: [] });
    expect(await store.moveAside(REF, "again")).toBeUndefined();
  });
});

recordStoreContract({
  name: "FileRecordStore",
  async make(kind) {
    return new FileRecordStore({ kind, dir: join(await tempDir(), "notes"), lock: { timeoutMs: 2_000 } }) as unknown as ContractStore;
  },
  async twin(store, kind) {
    return new FileRecordStore({ kind, dir: (store as unknown as FileRecordStore<typeof noteSchema>).dir }) as unknown as ContractStore;
  },
  async putRaw(store, ref, value) {
    await put(store as unknown as FileRecordStore<typeof noteSchema>, ref, jsonOf(value));
  },
  where: (store, ref) => (store as unknown as FileRecordStore<typeof noteSchema>).locate(ref),
  home: (store, ref) => basename((store as unknown as FileRecordStore<typeof noteSchema>).locate(ref)),
  asideOf: (aside, store, ref) =>
    aside.startsWith(`${(store as unknown as FileRecordStore<typeof noteSchema>).locate(ref)}.damaged-record-`) && existsSync(aside),
});
