import { spawnSync } from "node:child_process";
import { mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { ExitError } from "../../src/errors.js";
import { controlRecordSchema } from "../../src/control/record-schema.js";
import { ControlRecordError, ControlStore, controlRecordProblem } from "../../src/control/store.js";
import type { ControlRecord } from "../../src/control/types.js";
import { RefError, parseWorkItemRef, workItemSlug } from "../../src/workitem/index.js";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

const T0 = new Date("2025-03-01T10:00:00.000Z");
const at = (minutes: number): Date => new Date(T0.getTime() + minutes * 60_000);

const REF = "github:octo/repo#15";
const OTHER = "local:demo#3";

function recordOf(ref: string, fields: Partial<ControlRecord> = {}): ControlRecord {
  return {
    version: 1,
    ref,
    command: "pause",
    source: "comment",
    actor: "alice",
    requestedAt: T0.toISOString(),
    effect: "recorded",
    note: "https://github.com/octo/repo/issues/15#issuecomment-1",
    deliveryId: "delivery-1",
    ...fields,
  };
}

async function storeWith(...files: { ref: string; text: string }[]): Promise<ControlStore> {
  const store = new ControlStore({ dir: join(await tempDir(), "sessions", "control"), lock: { timeoutMs: 2_000 } });
  await mkdir(store.dir, { recursive: true });
  for (const file of files) await writeFile(store.pathFor(file.ref), file.text);
  return store;
}

const jsonOf = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

async function put(store: ControlStore, record: ControlRecord): Promise<void> {
  await store.transaction(record.ref, (tx) => tx.write(record));
}

describe("ControlStore.pathFor", () => {
  it("puts an item's record at <dir>/<slug>.json, one file for every spelling of the ref", async () => {
    const store = await storeWith();
    expect(store.pathFor(REF)).toBe(join(store.dir, `${workItemSlug(parseWorkItemRef(REF))}.json`));
    expect(store.pathFor("GitHub:Octo/Repo#15")).toBe(store.pathFor(REF));
    expect(store.pathFor("github:github.com/octo/repo#15")).toBe(store.pathFor(REF));
    expect(store.pathFor(OTHER)).not.toBe(store.pathFor(REF));
  });

  it("refuses a malformed ref", async () => {
    const store = await storeWith();
    expect(() => store.pathFor("octo/repo#15")).toThrow(RefError);
    expect(() => store.get("not a ref")).toThrow(RefError);
    await expect(store.transaction("nope", async () => 1)).rejects.toThrow(RefError);
  });
});

describe("ControlStore.get and transaction", () => {
  it("round-trips a record, written as 2-space JSON and a newline", async () => {
    const store = await storeWith();
    const record = recordOf(REF);
    await put(store, record);
    expect(store.get(REF)).toEqual(record);
    expect(store.get("GitHub:Octo/Repo#15")).toEqual(record);
    expect(await readFile(store.pathFor(REF), "utf8")).toBe(jsonOf(record));
    // Nothing else is left behind: no lock, no temporary file.
    expect(await readdir(store.dir)).toEqual([`${workItemSlug(REF)}.json`]);
  });

  it("creates the directory on the first write", async () => {
    const store = new ControlStore({ dir: join(await tempDir(), "sessions", "control") });
    await put(store, recordOf(REF));
    expect(store.get(REF)).toEqual(recordOf(REF));
  });

  it("answers undefined for an item with no record, and lists nothing when the folder does not exist", async () => {
    const store = new ControlStore({ dir: join(await tempDir(), "missing") });
    expect(store.get(REF)).toBeUndefined();
    expect(store.list()).toEqual({ records: [], problems: [] });
  });

  it("keeps only the fields it knows with the values given: optional ones may be left out", async () => {
    const store = await storeWith();
    const bare: ControlRecord = {
      version: 1,
      ref: OTHER,
      command: "start",
      source: "cli",
      actor: "dev",
      requestedAt: "2025-03-01T10:00:00Z",
      effect: "started",
    };
    await put(store, bare);
    expect(store.get(OTHER)).toEqual(bare);
  });

  it("reads the record as it is now, under the lock, and returns what the work returns", async () => {
    const store = await storeWith();
    const result = await store.transaction(REF, async (tx) => {
      expect(tx.read()).toBeUndefined();
      await tx.write(recordOf(REF, { command: "stop" }));
      expect(tx.read()).toMatchObject({ command: "stop" });
      await tx.write(recordOf(REF, { command: "start", effect: "started" }));
      return tx.read()?.command;
    });
    expect(result).toBe("start");
    expect(store.get(REF)).toMatchObject({ command: "start", effect: "started" });
  });

  it("releases the lock when the work throws, having written nothing it did not write", async () => {
    const store = await storeWith();
    await put(store, recordOf(REF));
    await expect(
      store.transaction(REF, async (tx) => {
        tx.read();
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(store.get(REF)).toEqual(recordOf(REF));
    await put(store, recordOf(REF, { command: "stop", effect: "recorded" }));
    expect(store.get(REF)).toMatchObject({ command: "stop" });
  });

  it("serializes transactions on one item within a process", async () => {
    const store = await storeWith();
    const ids = Array.from({ length: 10 }, (_, index) => `writer-${index}`);
    await Promise.all(
      ids.map((id) =>
        store.transaction(REF, async (tx) => {
          const current = tx.read();
          await new Promise((resolve) => setTimeout(resolve, 2));
          const seen = current?.note ? current.note.split(",") : [];
          await tx.write(recordOf(REF, { note: [...seen, id].join(",") }));
        }),
      ),
    );
    expect(store.get(REF)?.note?.split(",").sort()).toEqual([...ids].sort());
  });

  it("is not reentrant: a nested transaction on the same item throws at once instead of waiting", async () => {
    const store = await storeWith();
    const started = Date.now();
    await expect(store.transaction(REF, () => store.transaction("GitHub:Octo/Repo#15", async () => "inner"))).rejects.toThrow(
      /already open in this call chain; transactions are not reentrant/,
    );
    expect(Date.now() - started).toBeLessThan(1_500);
    // Another item's transaction inside one is fine.
    const inner = await store.transaction(REF, () => store.transaction(OTHER, async () => "inner"));
    expect(inner).toBe("inner");
  });

  it("refuses a read or a write through a transaction that has ended", async () => {
    const store = await storeWith();
    let leaked: Parameters<Parameters<ControlStore["transaction"]>[1]>[0] | undefined;
    await store.transaction(REF, async (tx) => {
      leaked = tx;
    });
    expect(() => leaked?.read()).toThrow(/transaction on github:octo\/repo#15 is over/);
    await expect(leaked?.write(recordOf(REF))).rejects.toThrow(/is over/);
    expect(store.get(REF)).toBeUndefined();
  });

  it("removes the record under the lock, durably, and refuses a removal once the transaction is over", async () => {
    const store = await storeWith();
    await put(store, recordOf(REF));
    let leaked: Parameters<Parameters<ControlStore["transaction"]>[1]>[0] | undefined;
    await store.transaction(REF, async (tx) => {
      leaked = tx;
      await tx.remove();
      expect(tx.read()).toBeUndefined();
      // Removing what is not there is no error: the item has no record either way.
      await tx.remove();
    });
    expect(store.get(REF)).toBeUndefined();
    expect(await readdir(store.dir)).toEqual([]);
    await expect(leaked?.remove()).rejects.toThrow(/is over/);
  });

  it("waits for a write the work did not await before releasing the lock", async () => {
    const store = await storeWith();
    let write: Promise<void> | undefined;
    await store.transaction(REF, async (tx) => {
      write = tx.write(recordOf(REF));
    });
    expect(store.get(REF)).toEqual(recordOf(REF));
    await write;
  });
});

describe("ControlStore.get of a damaged file", () => {
  const fix = "inspect it and repair it, or delete it to forget the item's last control command";

  async function damaged(text: string): Promise<{ store: ControlStore; error: ControlRecordError }> {
    const store = await storeWith({ ref: REF, text });
    let caught: unknown;
    try {
      store.get(REF);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ControlRecordError);
    return { store, error: caught as ControlRecordError };
  }

  it("refuses a file that is not JSON, naming the path, the problem and the fix", async () => {
    const { store, error } = await damaged("{ not json");
    expect(error).toBeInstanceOf(ExitError);
    expect(error.exitCode).toBe(1);
    expect(error.path).toBe(store.pathFor(REF));
    expect(error.message).toContain(`control record ${store.pathFor(REF)} is damaged: not valid JSON`);
    expect(error.message).toContain(fix);
  });

  it("refuses a file that holds another item's record", async () => {
    const { store, error } = await damaged(jsonOf(recordOf(OTHER)));
    expect(error.message).toBe(`control record ${store.pathFor(REF)} is damaged: it holds ${OTHER}, not ${REF}; ${fix}`);
  });

  it("refuses a record of this item spelt another way (records carry the canonical ref)", async () => {
    const { error } = await damaged(jsonOf(recordOf("GitHub:Octo/Repo#15")));
    expect(error.reason).toBe(`it holds GitHub:Octo/Repo#15, not ${REF}`);
  });

  it.each([
    ["an unknown command", { command: "go" }, /command: expected one of start, stop, pause, resume; got "go"/],
    ["an unknown source", { source: "email" }, /source: expected one of comment, cli, hook, dashboard, budget; got "email"/],
    ["an unknown effect", { effect: "exploded" }, /effect: expected one of started, .*noop, refused; got "exploded"/],
    ["a timestamp that is not ISO", { requestedAt: "yesterday" }, /requestedAt: expected an ISO 8601 UTC timestamp/],
    ["an unknown version", { version: 2 }, /version: expected 1; got 2/],
    ["an unknown key", { extra: true }, /unknown key "extra"/],
  ])("refuses a record with %s", async (_what, fields, reason) => {
    const { store, error } = await damaged(jsonOf({ ...recordOf(REF), ...fields }));
    expect(error.message).toContain(`control record ${store.pathFor(REF)} is damaged: not a control record (`);
    expect(error.reason).toMatch(reason);
    expect(error.message).toContain(fix);
  });

  it("refuses a record missing a field", async () => {
    const { actor: _actor, ...rest } = recordOf(REF);
    const { error } = await damaged(jsonOf(rest));
    expect(error.reason).toBe("not a control record (actor: expected a non-empty string; missing)");
  });

  it("refuses JSON that is not an object", async () => {
    const { error } = await damaged("[1, 2]\n");
    expect(error.reason).toBe("not a control record (not a JSON object)");
  });
});

describe("ControlStore.list", () => {
  it("lists every record by ref, skipping temporary files, lock folders and other names", async () => {
    const store = await storeWith();
    await put(store, recordOf(REF));
    await put(store, recordOf(OTHER, { command: "stop" }));
    await put(store, recordOf("github:acme/app#7", { command: "start", effect: "started" }));
    const slug = workItemSlug(REF);
    await writeFile(join(store.dir, `.${slug}.json.4242.deadbeef.tmp`), "{ torn");
    await writeFile(join(store.dir, "README.txt"), "not a record");
    await writeFile(join(store.dir, `${slug}.json.bak`), "{ old");
    await mkdir(join(store.dir, `${slug}.json.lock`));
    await mkdir(join(store.dir, "folder.json"));

    const listing = store.list();
    expect(listing.problems).toEqual([]);
    expect(listing.records.map((record) => record.ref)).toEqual(["github:acme/app#7", REF, OTHER]);
    expect(listing.records[1]).toEqual(recordOf(REF));
  });

  it("puts each bad file in problems, with its path, and still lists the rest", async () => {
    const store = await storeWith(
      { ref: REF, text: "{ not json" },
      { ref: OTHER, text: jsonOf(recordOf(OTHER, { effect: "exploded" as never })) },
      { ref: "github:acme/app#7", text: jsonOf(recordOf(REF)) },
      { ref: "github:acme/app#8", text: jsonOf(recordOf("GitHub:Acme/App#8")) },
      { ref: "github:acme/app#9", text: jsonOf(recordOf("acme/app#9")) },
    );
    await put(store, recordOf("github:acme/app#10"));

    const listing = store.list();
    expect(listing.records.map((record) => record.ref)).toEqual(["github:acme/app#10"]);
    const byFile = new Map(listing.problems.map((problem) => [problem.file, problem.message]));
    expect(byFile.size).toBe(5);
    expect(byFile.get(store.pathFor(REF))).toMatch(/^not valid JSON \(/);
    expect(byFile.get(store.pathFor(OTHER))).toMatch(/^effect: expected one of/);
    expect(byFile.get(store.pathFor("github:acme/app#7"))).toBe(`it holds ${REF}, whose record is ${workItemSlug(REF)}.json`);
    expect(byFile.get(store.pathFor("github:acme/app#8"))).toBe("ref: GitHub:Acme/App#8 is not canonical (github:acme/app#8)");
    expect(byFile.get(store.pathFor("github:acme/app#9"))).toMatch(/^ref: invalid work item reference/);
  });
});

describe("ControlStore.clear", () => {
  it("does nothing when the item has no record", async () => {
    const store = await storeWith();
    expect(await store.clear(REF, "item-closed", at(5))).toBeUndefined();
    expect(await readdir(store.dir)).toEqual([]);
  });

  it("clears a standing record once, keeping the command for listings", async () => {
    const store = await storeWith();
    await put(store, recordOf(REF, { command: "start", effect: "started" }));

    const cleared = await store.clear("GitHub:Octo/Repo#15", "item-closed", at(5));
    const expected = { ...recordOf(REF, { command: "start", effect: "started" }), clearedAt: at(5).toISOString(), clearedBy: "item-closed" };
    expect(cleared).toEqual(expected);
    expect(store.get(REF)).toEqual(expected);
    expect(store.list().records).toEqual([expected]);

    const file = store.pathFor(REF);
    const before = { text: await readFile(file, "utf8"), mtimeMs: (await stat(file)).mtimeMs };
    expect(await store.clear(REF, "sessions close", at(9))).toBeUndefined();
    expect({ text: await readFile(file, "utf8"), mtimeMs: (await stat(file)).mtimeMs }).toEqual(before);
    expect(store.get(REF)).toEqual(expected);
  });

  it("lets a new command replace a cleared record", async () => {
    const store = await storeWith();
    await put(store, recordOf(REF, { clearedAt: at(1).toISOString(), clearedBy: "item-closed" }));
    await put(store, recordOf(REF, { command: "stop", requestedAt: at(2).toISOString() }));
    expect(store.get(REF)).toEqual(recordOf(REF, { command: "stop", requestedAt: at(2).toISOString() }));
    expect(await store.clear(REF, "item-closed", at(3))).toMatchObject({ command: "stop", clearedAt: at(3).toISOString() });
  });

  it("with `only`, clears the standing record only when it is that command, whatever its effect became", async () => {
    const store = await storeWith();
    const start = recordOf(REF, { command: "start", effect: "start-pending", deliveryId: "d-start" });
    await put(store, { ...start, effect: "started" });
    expect(await store.clear(REF, "item-closed", at(5), start)).toMatchObject({ command: "start", effect: "started", clearedBy: "item-closed" });

    // A command given since: left standing.
    const pause = recordOf(REF, { command: "pause", requestedAt: at(6).toISOString(), deliveryId: "d-pause" });
    await put(store, pause);
    expect(await store.clear(REF, "sessions close", at(7), start)).toBeUndefined();
    expect(store.get(REF)).toEqual(pause);
  });

  it("refuses a damaged record rather than overwrite it", async () => {
    const store = await storeWith({ ref: REF, text: "{ not json" });
    await expect(store.clear(REF, "item-closed", at(5))).rejects.toThrow(ControlRecordError);
    expect(await readFile(store.pathFor(REF), "utf8")).toBe("{ not json");
  });
});

describe("ControlTransaction.write validation", () => {
  it("refuses a record of another item, and one spelling this item's ref another way", async () => {
    const store = await storeWith();
    await expect(store.transaction(REF, (tx) => tx.write(recordOf(OTHER)))).rejects.toThrow(
      `refusing to write a control record for ${OTHER} in the transaction of ${REF}`,
    );
    await expect(store.transaction(REF, (tx) => tx.write(recordOf("GitHub:Octo/Repo#15")))).rejects.toThrow(/records carry the canonical ref/);
    expect(await readdir(store.dir)).toEqual([]);
  });

  it.each<[string, Record<string, unknown>]>([
    ["an unknown command", { command: "execute" }],
    ["an unknown source", { source: "webhook" }],
    ["an unknown effect", { effect: "cleaned" }],
    ["a requestedAt that is not ISO 8601", { requestedAt: "2025-03-01 10:00:00" }],
    ["a requestedAt with an offset instead of UTC", { requestedAt: "2025-03-01T10:00:00+02:00" }],
    ["a requestedAt without seconds", { requestedAt: "2025-03-01T10:00Z" }],
    ["a requestedAt on a day that does not exist", { requestedAt: "2025-02-29T10:00:00Z" }],
    ["a clearedAt that is not ISO 8601", { clearedAt: "Tue Mar 04 2025", clearedBy: "item-closed" }],
    ["a clearedAt without clearedBy", { clearedAt: T0.toISOString() }],
    ["a clearedBy without clearedAt", { clearedBy: "item-closed" }],
    ["an empty actor", { actor: "" }],
    ["an empty ref", { ref: "" }],
    ["another version", { version: 2 }],
    ["an unknown key", { session: "loop-1" }],
    ["a note that is not a string", { note: 42 }],
  ])("refuses a record with %s before it is on disk", async (_what, fields) => {
    const store = await storeWith();
    await expect(store.transaction(REF, (tx) => tx.write({ ...recordOf(REF), ...fields } as ControlRecord))).rejects.toThrow(
      /^refusing to write (an invalid control record for github:octo\/repo#15: |a control record for )/,
    );
    expect(await readdir(store.dir)).toEqual([]);
  });

  it("accepts every command, source and effect", async () => {
    const store = await storeWith();
    const commands = ["start", "stop", "pause", "resume"] as const;
    const sources = ["comment", "cli"] as const;
    const effects = ["started", "start-pending", "resumed", "paused", "stopped", "recorded", "noop"] as const;
    for (const command of commands)
      for (const source of sources)
        for (const effect of effects) {
          await put(store, recordOf(REF, { command, source, effect }));
          expect(store.get(REF)).toMatchObject({ command, source, effect });
        }
  });
});

describe("controlRecordProblem, the store's reading check", () => {
  const valid = recordOf(REF, { clearedAt: at(1).toISOString(), clearedBy: "sessions close" });
  const variants: [string, unknown][] = [
    ["the full record", valid],
    ["the bare record", { version: 1, ref: REF, command: "stop", source: "cli", actor: "x", requestedAt: "2024-02-29T00:00:00Z", effect: "noop" }],
    ["an optional key set to undefined", { ...valid, note: undefined, deliveryId: undefined }],
    ["an empty note and delivery id", { ...valid, note: "", deliveryId: "" }],
    ["a second fraction of any length", { ...valid, requestedAt: "2025-03-01T10:00:00.123456Z" }],
    ["a leap day of a century year", { ...valid, requestedAt: "2000-02-29T00:00:00Z" }],
    ["a leap day of a non-leap century", { ...valid, requestedAt: "1900-02-29T00:00:00Z" }],
    ["the 31st of April", { ...valid, requestedAt: "2025-04-31T00:00:00Z" }],
    ["hour 24", { ...valid, requestedAt: "2025-03-01T24:00:00Z" }],
    ["a lowercase z", { ...valid, requestedAt: "2025-03-01T10:00:00z" }],
    ["an offset", { ...valid, clearedAt: "2025-03-01T10:00:00+00:00" }],
    ["a date only", { ...valid, requestedAt: "2025-03-01" }],
    ["a number for a timestamp", { ...valid, requestedAt: 1_740_823_200_000 }],
    ["null", null],
    ["an array", [valid]],
    ["a string", "pause"],
    ["version as a string", { ...valid, version: "1" }],
    ["no version", { ...valid, version: undefined }],
    ["a null note", { ...valid, note: null }],
    ["a numeric delivery id", { ...valid, deliveryId: 7 }],
    ["an empty clearedBy", { ...valid, clearedBy: "" }],
    ["clearedAt alone", { ...valid, clearedBy: undefined }],
    ["clearedBy alone", { ...valid, clearedAt: undefined }],
    ["an unknown key", { ...valid, extra: 1 }],
    ["an unknown key set to undefined", { ...valid, extra: undefined }],
    ["an inherited-looking key", JSON.parse(`{"__proto__": {}, ${JSON.stringify(valid).slice(1)}`) as unknown],
    ["a command named like an Object method", { ...valid, command: "toString" }],
    ["an uppercase command", { ...valid, command: "STOP" }],
    ["a missing ref", { ...valid, ref: undefined }],
    ["a numeric actor", { ...valid, actor: 1 }],
  ];

  it.each(variants)("agrees with controlRecordSchema on %s", (_what, value) => {
    const parsed = controlRecordSchema.safeParse(value);
    const problem = controlRecordProblem(value);
    expect({ accepted: problem === undefined, problem }).toEqual({ accepted: parsed.success, problem: parsed.success ? undefined : expect.any(String) });
  });
});

describe("ControlStore without the schema library", () => {
  it("reads and lists records without loading zod", async () => {
    const store = await storeWith();
    await put(store, recordOf(REF));
    // A resolve hook that fails any import of zod, in a fresh process running the built store.
    const hook = `export async function resolve(specifier, context, next) {
      if (specifier === "zod" || specifier.startsWith("zod/")) throw new Error("zod was loaded");
      return next(specifier, context);
    }`;
    const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
    const storeUrl = pathToFileURL(join(REPO_ROOT, "dist/control/store.js")).href;
    const main = `
      const { ControlStore } = await import(${JSON.stringify(storeUrl)});
      const store = new ControlStore({ dir: ${JSON.stringify(store.dir)} });
      const record = store.get(${JSON.stringify(REF)});
      const listing = store.list();
      console.log(JSON.stringify({ command: record?.command, listed: listing.records.length, problems: listing.problems.length }));
    `;
    const child = spawnSync(process.execPath, ["--import", `data:text/javascript,${encodeURIComponent(register)}`, "--input-type=module", "-e", main], {
      encoding: "utf8",
    });
    expect(child.stderr).toBe("");
    expect(JSON.parse(child.stdout)).toEqual({ command: "pause", listed: 1, problems: 0 });

    // The hook does catch zod: a write (which validates with the schema) fails in the same setting.
    const writer = spawnSync(
      process.execPath,
      [
        "--import",
        `data:text/javascript,${encodeURIComponent(register)}`,
        "--input-type=module",
        "-e",
        `${main}\nawait store.clear(${JSON.stringify(REF)}, "x", new Date());`,
      ],
      { encoding: "utf8" },
    );
    expect(writer.status).not.toBe(0);
    expect(writer.stderr).toContain("zod was loaded");
  });
});
