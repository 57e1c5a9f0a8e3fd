import { describe, expect, expectTypeOf, it, vi } from "vitest";
import { z } from "zod";
import { ExitError } from "../../src/errors.js";
import { DamagedRecordError, compileShape, keysGoTogether } from "../../src/state/index.js";
import type { RecordDamage, RecordKind, RecordOf, RecordShape, RecordStore, RecordTransaction, SyncRecordStore } from "../../src/state/index.js";
import { RefError } from "../../src/workitem/index.js";

/**
 * What every RecordStore backend does alike, run against each (the file store in
 * record-store.test.ts, PostgreSQL in postgres-record-store.test.ts). A backend says how to make a
 * store, a second store over the same records, how to put a value in place of an item's record
 * without the store's checks (to test what a read makes of damage), and how it names where an
 * item's record is.
 */

export const noteSchema = keysGoTogether(
  z.strictObject({
    version: z.literal(1),
    item: z.object({ ref: z.string().min(1) }),
    text: z.string().min(1),
    at: z.string(),
    tags: z.array(z.string()).optional(),
    doneAt: z.string().optional(),
    doneBy: z.string().optional(),
  }),
  "doneAt",
  "doneBy",
);
export type Note = z.output<typeof noteSchema>;

export const noteKind: RecordKind<typeof noteSchema> = {
  name: "note",
  itemField: "item.ref",
  schema: noteSchema,
  order: (a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0),
  remedy: "throw it away",
};

class NoteError extends DamagedRecordError {
  override readonly name: string = "NoteError";
}

export const REF = "github:octo/repo#15";
export const OTHER = "local:demo#3";

export const noteOf = (ref: string, fields: Partial<Note> = {}): Note => ({ version: 1, item: { ref }, text: "hello", at: "2025-03-01T10:00:00Z", ...fields });

/** A store under test, with what the contract needs beyond the interface. */
export type ContractStore = SyncRecordStore<Note> & {
  moveAside(item: string, reason: string): Promise<string | undefined>;
};

export interface RecordStoreBackend {
  readonly name: string;
  /** A store over records of its own (a fresh folder, a fresh database). */
  make<S extends z.ZodType>(kind: RecordKind<S>): Promise<ContractStore>;
  /** Another store of `kind` over the same records as `store`, as another process would open it. */
  twin<S extends z.ZodType>(store: ContractStore, kind: RecordKind<S>): Promise<ContractStore>;
  /** Stores `value` as the record of `ref`, unchecked; once it resolves, `store`'s synchronous reads see it. */
  putRaw(store: ContractStore, ref: string, value: unknown): Promise<void>;
  /** Where `store` keeps the record of (canonical) `ref`, as its messages name it. */
  where(store: ContractStore, ref: string): string;
  /** How a listing names the home of `ref` when a record naming it sits elsewhere. */
  home(store: ContractStore, ref: string): string;
  /** What a damaged record's message tells to do, from the kind's remedy (files: the remedy itself; rows add the SQL). */
  remedy?(ref: string, remedy: string): string;
  /** Whether an aside answered by moveAside names what was moved for this item. */
  asideOf(aside: string, store: ContractStore, ref: string): boolean;
}

/** What `run` throws, or undefined when it returns. */
export function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

export function recordStoreContract(backend: RecordStoreBackend): void {
  const storeOf = <S extends z.ZodType>(kind: RecordKind<S> = noteKind as unknown as RecordKind<S>): Promise<ContractStore> => backend.make(kind);

  describe(`the record store contract: ${backend.name}`, () => {
    it("names work items and kinds, with the type inferred from the schema", async () => {
      const store = await storeOf();
      const seam: RecordStore<Note> = store;
      expectTypeOf<RecordOf<typeof noteKind>>().toEqualTypeOf<Note>();
      await seam.transaction(REF, (tx) => tx.write(noteOf(REF)));
      expect(await seam.get("GitHub:Octo/Repo#15")).toEqual(noteOf(REF));
      expect(await seam.list()).toEqual({ records: [noteOf(REF)], problems: [] });
      expect(store.readSync("github:github.com/Octo/Repo#15")).toEqual(noteOf(REF));
      expect(store.listSync()).toEqual({ records: [noteOf(REF)], problems: [] });
      expect(await seam.remove(REF)).toBe(true);
      expect(await seam.get(REF)).toBeUndefined();
      expect(store.readSync(REF)).toBeUndefined();
    });

    it("refuses a ref that does not parse", async () => {
      const store = await storeOf();
      expect(() => store.readSync("not a ref")).toThrow(RefError);
      await expect(store.get("octo/repo#15")).rejects.toThrow(RefError);
      await expect(store.transaction("nope", async () => 1)).rejects.toThrow(RefError);
    });

    it("answers undefined for an item without a record, and lists nothing when it holds none", async () => {
      const store = await storeOf();
      expect(store.readSync(REF)).toBeUndefined();
      expect(await store.get(REF)).toBeUndefined();
      expect(store.listSync()).toEqual({ records: [], problems: [] });
      expect(await store.list()).toEqual({ records: [], problems: [] });
    });

    it("parses with the schema: what it does not know is dropped", async () => {
      const store = await storeOf({ ...noteKind, schema: z.object(noteSchema.shape) });
      await backend.putRaw(store, REF, { ...noteOf(REF), extra: true });
      expect(store.readSync(REF)).toEqual(noteOf(REF));
      expect(await store.get(REF)).toEqual(noteOf(REF));
    });

    it.each([
      ["does not validate", noteOf(REF, { text: "" }), /^not a note \(text: /],
      ["breaks a rule of the schema", noteOf(REF, { doneAt: "now" }), /^not a note \(doneAt and doneBy go together\)$/],
      ["holds another item's record", noteOf(OTHER), new RegExp(`^it holds ${OTHER}, not ${REF}$`)],
      ["holds this item's record spelt another way", noteOf("GitHub:Octo/Repo#15"), /^it holds GitHub:Octo\/Repo#15, not github:octo\/repo#15$/],
    ])("throws a DamagedRecordError naming the item, the place and the reason when the record %s", async (_case, value, reason) => {
      const store = await storeOf();
      await backend.putRaw(store, REF, value);
      const where = backend.where(store, REF);
      const error = thrown(() => store.readSync("GitHub:Octo/Repo#15"));
      expect(error).toBeInstanceOf(DamagedRecordError);
      expect(error).toBeInstanceOf(ExitError);
      const damaged = error as DamagedRecordError;
      expect({ kind: damaged.kind, item: damaged.item, where: damaged.where, exitCode: damaged.exitCode }).toEqual({
        kind: "note",
        item: REF,
        where,
        exitCode: 1,
      });
      expect(damaged.reason).toMatch(reason);
      expect(damaged.message).toBe(`note ${where} is damaged: ${damaged.reason}; ${backend.remedy?.(REF, "throw it away") ?? "throw it away"}`);
      await expect(store.get(REF)).rejects.toBeInstanceOf(DamagedRecordError);
      await expect(store.transaction(REF, async (tx) => tx.read())).rejects.toBeInstanceOf(DamagedRecordError);
    });

    it("throws the kind's own error when it has one", async () => {
      const store = await storeOf({ ...noteKind, damaged: (damage: RecordDamage) => new NoteError(damage, "ask") });
      await backend.putRaw(store, REF, []);
      const error = thrown(() => store.readSync(REF));
      expect(error).toBeInstanceOf(NoteError);
      expect((error as NoteError).message).toMatch(/is damaged: not a note \(.*\); ask/);
      expect((error as NoteError).message.endsWith(backend.remedy?.(REF, "ask") ?? "; ask")).toBe(true);
    });

    it("checks with the kind's zod-free check instead of the schema when it has one, returning the record as stored", async () => {
      const check = vi.fn(compileShape(z.toJSONSchema(noteSchema, { io: "input" }) as RecordShape));
      const lazy = vi.fn(async () => noteSchema);
      const store = await storeOf({ ...noteKind, schema: lazy, check });
      await backend.putRaw(store, REF, noteOf(REF));
      await backend.putRaw(store, OTHER, { ...noteOf(OTHER), text: 7 });
      expect(store.readSync(REF)).toEqual(noteOf(REF));
      expect((thrown(() => store.readSync(OTHER)) as DamagedRecordError).reason).toBe("not a note (text: expected a non-empty string; got 7)");
      expect(store.listSync().problems.map((problem) => problem.message)).toEqual(["text: expected a non-empty string; got 7"]);
      expect((await store.list()).problems.map((problem) => problem.message)).toEqual(["text: expected a non-empty string; got 7"]);
      expect(lazy).not.toHaveBeenCalled();
      expect(check).toHaveBeenCalled();
    });

    it("refuses to read with a schema it has not loaded rather than skip the check", async () => {
      const store = await storeOf({ ...noteKind, schema: async () => noteSchema });
      await backend.putRaw(store, REF, noteOf(REF));
      expect(() => store.readSync(REF)).toThrow(/read with its schema, which is not loaded/);
      // A transaction loads it; reads use it from then on.
      await store.transaction(OTHER, async () => undefined);
      expect(store.readSync(REF)).toEqual(noteOf(REF));
    });

    it("reads, writes and returns what the work returns, the write following the read", async () => {
      const store = await storeOf();
      const result = await store.transaction(REF, async (tx) => {
        expect(tx.read()).toBeUndefined();
        const written = await tx.write(noteOf(REF, { text: "first" }));
        expect(written).toEqual(noteOf(REF, { text: "first" }));
        expect(tx.read()).toEqual(written);
        return "done";
      });
      expect(result).toBe("done");
      expect(await store.get(REF)).toEqual(noteOf(REF, { text: "first" }));
      expect(store.readSync(REF)).toEqual(noteOf(REF, { text: "first" }));
      // A write is kept when the work throws after it, as an atomic rename is.
      await expect(
        store.transaction(REF, async (tx) => {
          await tx.write(noteOf(REF, { text: "second" }));
          throw new Error("then it failed");
        }),
      ).rejects.toThrow("then it failed");
      expect(await store.get(REF)).toEqual(noteOf(REF, { text: "second" }));
    });

    it("validates every write: the schema, then the kind's check, then the item", async () => {
      const strictCheck = (value: unknown): string | undefined => ((value as Note).text === "banned" ? "text: banned" : undefined);
      const store = await storeOf({ ...noteKind, check: strictCheck });
      await expect(store.transaction(REF, (tx) => tx.write(noteOf(REF, { text: "" })))).rejects.toThrow(
        /^refusing to write an invalid note for github:octo\/repo#15: text: /,
      );
      await expect(store.transaction(REF, (tx) => tx.write(noteOf(REF, { text: "banned" })))).rejects.toThrow(
        "refusing to write an invalid note for github:octo/repo#15: text: banned",
      );
      await expect(store.transaction(REF, (tx) => tx.write(noteOf(OTHER)))).rejects.toThrow(`refusing to write a note for ${OTHER} as the record of ${REF}`);
      const worded = await storeOf({ ...noteKind, misaddressed: (named, item) => `${named} is not ${item}` });
      await expect(worded.transaction(REF, (tx) => tx.write(noteOf(OTHER)))).rejects.toThrow(`${OTHER} is not ${REF}`);
      expect(await store.list()).toEqual({ records: [], problems: [] });
    });

    it("removes the record, and refuses anything once the transaction is over", async () => {
      const store = await storeOf();
      await store.transaction(REF, (tx) => tx.write(noteOf(REF)));
      let leaked: RecordTransaction<Note> | undefined;
      await store.transaction(REF, async (tx) => {
        leaked = tx;
        await tx.remove();
        await tx.remove();
        expect(tx.read()).toBeUndefined();
      });
      expect(await store.list()).toEqual({ records: [], problems: [] });
      expect(store.readSync(REF)).toBeUndefined();
      expect(() => leaked?.read()).toThrow(/the note transaction on github:octo\/repo#15 is over; a read after it would not be locked/);
      await expect(leaked?.write(noteOf(REF))).rejects.toThrow(/is over/);
      await expect(leaked?.remove()).rejects.toThrow(/is over/);
    });

    it("is not reentrant on one item, across stores of the records, and waits for a write the work left running", async () => {
      const store = await storeOf();
      const twin = await backend.twin(store, noteKind);
      const started = Date.now();
      await expect(store.transaction(REF, () => twin.transaction("GitHub:Octo/Repo#15", async () => 1))).rejects.toThrow(
        /a note transaction on github:octo\/repo#15 is already open in this call chain; transactions are not reentrant/,
      );
      await expect(store.transaction(REF, () => store.remove(REF))).rejects.toThrow(/not reentrant/);
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(await store.transaction(REF, () => store.transaction(OTHER, async () => "inner"))).toBe("inner");
      let write: Promise<unknown> | undefined;
      await store.transaction(REF, async (tx) => {
        write = tx.write(noteOf(REF));
      });
      expect(store.readSync(REF)).toEqual(noteOf(REF));
      await write;
    });

    it("serialises transactions on one item across stores: no read-decide-write is lost", async () => {
      const store = await storeOf();
      const twin = await backend.twin(store, noteKind);
      const bump = (on: ContractStore) =>
        on.transaction(REF, async (tx) => {
          const count = Number(tx.read()?.text ?? "0");
          await new Promise((resolve) => setImmediate(resolve));
          await tx.write(noteOf(REF, { text: String(count + 1) }));
        });
      await Promise.all(Array.from({ length: 10 }, (_, index) => bump(index % 2 === 0 ? store : twin)));
      expect((await store.get(REF))?.text).toBe("10");
    });

    it("loads a lazy schema once, before taking the lock", async () => {
      const load = vi.fn(async () => noteSchema);
      const store = await storeOf({ ...noteKind, schema: load, check: () => undefined });
      await store.transaction(REF, (tx) => tx.write(noteOf(REF)));
      await store.transaction(OTHER, (tx) => tx.write(noteOf(OTHER)));
      expect(load).toHaveBeenCalledTimes(1);
    });

    it("lists every record in the kind's order, and keeps what a filter keeps", async () => {
      const store = await storeOf();
      const late = noteOf(REF, { at: "2025-03-02T00:00:00Z" });
      const early = noteOf(OTHER, { at: "2025-03-01T00:00:00Z" });
      await store.transaction(REF, (tx) => tx.write(late));
      await store.transaction(OTHER, (tx) => tx.write(early));
      expect(store.listSync()).toEqual({ records: [early, late], problems: [] });
      expect(await store.list()).toEqual({ records: [early, late], problems: [] });
      expect(store.listSync({ keep: (note) => note.item.ref === REF }).records).toEqual([late]);
      expect((await store.list({ keep: (note) => note.item.ref === OTHER })).records).toEqual([early]);
    });

    it("reports a damaged or misplaced record among the problems and lists the rest", async () => {
      const store = await storeOf();
      await store.transaction(REF, (tx) => tx.write(noteOf(REF)));
      await backend.putRaw(store, "github:acme/app#7", noteOf(REF));
      await backend.putRaw(store, "github:acme/app#8", noteOf("GitHub:Acme/App#8"));
      await backend.putRaw(store, "github:acme/app#9", noteOf("acme/app#9"));
      await backend.putRaw(store, OTHER, { version: 2 });
      for (const listing of [store.listSync(), await store.list()]) {
        expect(listing.records).toEqual([noteOf(REF)]);
        const byPlace = new Map(listing.problems.map((problem) => [problem.where, problem.message]));
        expect(byPlace.size).toBe(4);
        expect(byPlace.get(backend.where(store, "github:acme/app#7"))).toBe(`it holds ${REF}, whose record is ${backend.home(store, REF)}`);
        expect(byPlace.get(backend.where(store, "github:acme/app#8"))).toBe("item.ref: GitHub:Acme/App#8 is not canonical (github:acme/app#8)");
        expect(byPlace.get(backend.where(store, "github:acme/app#9"))).toMatch(/^item\.ref: invalid work item reference/);
        expect(byPlace.get(backend.where(store, OTHER))).toMatch(/^version: /);
      }
    });

    it("checks a listing with the kind's listCheck when it has one", async () => {
      const store = await storeOf({ ...noteKind, listCheck: (value) => ((value as Note).version === 1 ? undefined : "old") });
      await backend.putRaw(store, REF, { version: 1, item: { ref: REF } });
      await backend.putRaw(store, OTHER, { version: 0, item: { ref: OTHER } });
      const listing = store.listSync();
      expect(listing.records).toEqual([{ version: 1, item: { ref: REF } }]);
      expect(listing.problems).toEqual([{ where: backend.where(store, OTHER), message: "old" }]);
    });

    it("removes an item's record under its lock, whatever it holds", async () => {
      const store = await storeOf();
      await backend.putRaw(store, REF, "damaged");
      expect(await store.remove("GitHub:Octo/Repo#15")).toBe(true);
      expect(await store.remove(REF)).toBe(false);
      expect(await store.list()).toEqual({ records: [], problems: [] });
    });

    it("moves a record aside, where no read or listing takes it for a record", async () => {
      const store = await storeOf();
      await backend.putRaw(store, REF, "damaged");
      const aside = await store.moveAside(REF, "Damaged record!");
      expect(aside !== undefined && backend.asideOf(aside, store, REF), String(aside)).toBe(true);
      expect(store.readSync(REF)).toBeUndefined();
      expect(await store.get(REF)).toBeUndefined();
      expect(store.listSync()).toEqual({ records: [], problems: [] });
      expect(await store.moveAside(REF, "again")).toBeUndefined();
    });
  });
}
