import { mkdir, readFile, readdir, utimes, writeFile } from "node:fs/promises";
import { openSync, readFileSync, readdirSync } from "node:fs";
import type * as FsModule from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { ExitError } from "../../src/errors.js";
import { RECENT_DELIVERIES_MAX } from "../../src/registry/record.js";
import { sessionRecordSchema } from "../../src/registry/record-schema.js";
import type { SessionRecord, SessionStatus } from "../../src/registry/record.js";
import { listSessionSummaries } from "../../src/registry/listing.js";
import { RegistryRecordError, SessionRegistry } from "../../src/registry/registry.js";
import { RefError, parseWorkItemRef, workItemOf, workItemSlug } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";
import { sessionRecord } from "../support/builders.js";

// Wrapped, not replaced, so the tests can count how many files the registry opens and lists.
vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof FsModule>();
  return {
    ...actual,
    readdirSync: vi.fn(actual.readdirSync),
    readFileSync: vi.fn(actual.readFileSync),
    openSync: vi.fn(actual.openSync),
  };
});

const T0 = new Date("2025-03-01T10:00:00.000Z");
const at = (minutes: number): Date => new Date(T0.getTime() + minutes * 60_000);

function itemOf(ref: string): WorkItem {
  const parsed = parseWorkItemRef(ref);
  const url = parsed.tracker === "github" ? `https://github.com/${parsed.owner}/${parsed.repo}/issues/${parsed.number}` : ref;
  return workItemOf(parsed, { kind: "issue", url, id: `id-${parsed.number}` });
}

function recordOf(item: WorkItem, fields: Partial<SessionRecord> = {}): SessionRecord {
  return sessionRecord(item, { harnessSessionId: "session-1", createdAt: T0.toISOString(), ...fields });
}

async function registryWith(...records: SessionRecord[]): Promise<SessionRegistry> {
  const registry = new SessionRegistry({ dir: await tempDir(), lock: { timeoutMs: 2_000 } });
  for (const record of records) {
    await mkdir(registry.dir, { recursive: true });
    await writeFile(registry.pathFor(record.workItem.ref), `${JSON.stringify(record, null, 2)}\n`);
  }
  return registry;
}

/**
 * A listing caches a folder only once it has been still for a moment (a write in the same clock
 * tick would not change its stamp): tests that look at the cache date the folder back first.
 */
async function settled(dir: string): Promise<void> {
  const longAgo = new Date(Date.now() - 60_000);
  await utimes(dir, longAgo, longAgo);
}

const callsOf = (fn: unknown): number => vi.mocked(fn as () => void).mock.calls.length;

const DEMO = itemOf("local:demo#3");

describe("SessionRegistry.pathFor", () => {
  it.each([
    ["local:demo#3", "local-demo-3"],
    ["github:octo/repo#15", "github-octo-repo-15"],
    ["github:ghe.example.com/octo/repo#2", "github-ghe-example-com-octo-repo-2"],
  ])("%s → <dir>/<slug>.json", async (ref, readable) => {
    const dir = await tempDir();
    const path = new SessionRegistry({ dir }).pathFor(ref);
    expect(path).toBe(join(dir, `${workItemSlug(parseWorkItemRef(ref))}.json`));
    expect(path.startsWith(join(dir, readable))).toBe(true);
  });

  it("maps spellings of one work item to one file, and refuses a malformed ref", async () => {
    const registry = new SessionRegistry({ dir: await tempDir() });
    expect(registry.pathFor("github:Octo/Repo#15")).toBe(registry.pathFor("github:octo/repo#15"));
    expect(() => registry.pathFor("octo/repo")).toThrow(RefError);
  });
});

describe("SessionRegistry.get", () => {
  it("is undefined for a work item without a record, even when the folder does not exist", async () => {
    const registry = new SessionRegistry({ dir: join(await tempDir(), "missing") });
    expect(registry.get("local:demo#3")).toBeUndefined();
    expect(registry.sessionFor("local:demo#3")).toBeUndefined();
  });

  it("reads exactly one file and never lists the folder; stray files do not matter", async () => {
    const registry = await registryWith(recordOf(DEMO), recordOf(itemOf("local:demo#4")));
    await writeFile(join(registry.dir, "notes.txt"), "not a record");
    await writeFile(join(registry.dir, "garbage.json"), "{{{");
    await mkdir(join(registry.dir, "control"));
    const listed = callsOf(readdirSync);
    const read = callsOf(readFileSync) + callsOf(openSync);

    expect(registry.get("local:demo#3")).toEqual(recordOf(DEMO));
    expect(callsOf(readdirSync) - listed).toBe(0);
    expect(callsOf(readFileSync) + callsOf(openSync) - read).toBe(1);
    // The counters do see the registry's calls: a listing lists.
    registry.list();
    expect(callsOf(readdirSync) - listed).toBe(1);
  });

  it("accepts any spelling of the ref and sessionFor is the same view", async () => {
    const item = itemOf("github:octo/repo#15");
    const registry = await registryWith(recordOf(item));
    expect(registry.get("github:OCTO/Repo#15")?.workItem.ref).toBe("github:octo/repo#15");
    expect(registry.sessionFor("github:octo/repo#15")).toEqual(registry.get("github:octo/repo#15"));
  });

  it.each([
    ["is not JSON", "{ truncated", "not valid JSON"],
    ["is not a record", JSON.stringify({ version: 1, status: "active" }), "not a session record"],
    ["has an unknown status", JSON.stringify({ ...recordOf(DEMO), status: "running" }), "status"],
    ["holds another work item", JSON.stringify(recordOf(itemOf("local:demo#4"))), "holds local:demo#4, not local:demo#3"],
  ])("throws RegistryRecordError naming the file when it %s", async (_case, content, reason) => {
    const registry = await registryWith();
    await writeFile(registry.pathFor(DEMO.ref), content);
    const error: unknown = (() => {
      try {
        registry.get(DEMO.ref);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(RegistryRecordError);
    expect(error).toBeInstanceOf(ExitError);
    const { message, exitCode, path } = error as RegistryRecordError;
    expect(exitCode).toBe(1);
    expect(path).toBe(registry.pathFor(DEMO.ref));
    expect(message).toContain(registry.pathFor(DEMO.ref));
    expect(message).toContain(reason);
    expect(message).toMatch(/inspect it.*move it aside to forget that session/);
  });
});

describe("SessionRegistry.claim", () => {
  it("writes the built record when there is none, as 2-space JSON ending in a newline", async () => {
    const registry = await registryWith();
    const build = vi.fn(() => recordOf(DEMO));
    const result = await registry.claim(DEMO, build);

    expect(result).toEqual({ claimed: true, record: recordOf(DEMO) });
    expect(build).toHaveBeenCalledWith(undefined);
    const text = await readFile(registry.pathFor(DEMO.ref), "utf8");
    expect(text).toBe(`${JSON.stringify(recordOf(DEMO), null, 2)}\n`);
    // No lock directory or temporary sibling is left behind.
    expect(await readdir(registry.dir)).toEqual([`${workItemSlug(DEMO.ref)}.json`]);
  });

  it.each(["active", "paused"] as const)("refuses while a %s session is live and returns the occupant", async (status) => {
    const occupant = recordOf(DEMO, { status, harnessSessionId: "first" });
    const registry = await registryWith(occupant);
    const build = vi.fn(() => recordOf(DEMO, { harnessSessionId: "second" }));

    expect(await registry.claim(DEMO, build)).toEqual({ claimed: false, record: occupant });
    expect(build).not.toHaveBeenCalled();
    expect(registry.get(DEMO.ref)?.harnessSessionId).toBe("first");
  });

  it("replaces a closed record, showing it to build", async () => {
    const closed = recordOf(DEMO, { status: "closed", closedAt: at(5).toISOString(), closeReason: "done" });
    const registry = await registryWith(closed);
    const build = vi.fn((previous: SessionRecord | undefined) => recordOf(DEMO, { harnessSessionId: `after-${previous?.closeReason}` }));

    const result = await registry.claim(DEMO, build);
    expect(build).toHaveBeenCalledWith(closed);
    expect(result).toMatchObject({ claimed: true, record: { status: "active", harnessSessionId: "after-done" } });
    expect(registry.get(DEMO.ref)).toEqual(result.record);
  });

  it("refuses to write an invalid record or one for another work item, leaving no file", async () => {
    const registry = await registryWith();
    await expect(registry.claim(DEMO, () => ({ ...recordOf(DEMO), harness: "" }))).rejects.toThrow(/invalid session record.*harness/);
    await expect(registry.claim(DEMO, () => recordOf(itemOf("local:demo#4")))).rejects.toThrow(/local:demo#4 as the session of local:demo#3/);
    expect(registry.get(DEMO.ref)).toBeUndefined();
  });

  it("does not overwrite a damaged record: it might be a live session", async () => {
    const registry = await registryWith();
    await writeFile(registry.pathFor(DEMO.ref), "{ damaged");
    await expect(registry.claim(DEMO, () => recordOf(DEMO))).rejects.toBeInstanceOf(RegistryRecordError);
    expect(await readFile(registry.pathFor(DEMO.ref), "utf8")).toBe("{ damaged");
  });
});

describe("SessionRegistry.update", () => {
  it("is undefined without calling mutate when there is no record", async () => {
    const registry = await registryWith();
    const mutate = vi.fn((record: SessionRecord) => record);
    expect(await registry.update(DEMO.ref, mutate)).toBeUndefined();
    expect(mutate).not.toHaveBeenCalled();
    expect(await readdir(registry.dir)).toEqual([]);
  });

  it("writes what mutate returns, and returns it", async () => {
    const registry = await registryWith(recordOf(DEMO));
    const updated = await registry.update(DEMO.ref, (record) => ({ ...record, harnessSessionId: "resumed" }));
    expect(updated).toEqual(recordOf(DEMO, { harnessSessionId: "resumed" }));
    expect(registry.get(DEMO.ref)).toEqual(updated);
  });

  it("leaves the file alone when mutate returns undefined, returning the current record", async () => {
    const registry = await registryWith();
    // Written compactly: any rewrite would come out indented.
    const compact = JSON.stringify(recordOf(DEMO));
    await writeFile(registry.pathFor(DEMO.ref), compact);
    expect(await registry.update(DEMO.ref, () => undefined)).toEqual(recordOf(DEMO));
    expect(await readFile(registry.pathFor(DEMO.ref), "utf8")).toBe(compact);
  });

  it("refuses an invalid result and keeps the record", async () => {
    const registry = await registryWith(recordOf(DEMO));
    await expect(registry.update(DEMO.ref, (record) => ({ ...record, status: "gone" as SessionStatus }))).rejects.toThrow(/invalid session record/);
    expect(registry.get(DEMO.ref)).toEqual(recordOf(DEMO));
  });

  it("strips what the schema does not know before writing", async () => {
    const registry = await registryWith(recordOf(DEMO));
    await registry.update(DEMO.ref, (record) => ({ ...record, extra: "field" }) as SessionRecord);
    expect(JSON.parse(await readFile(registry.pathFor(DEMO.ref), "utf8"))).toEqual(recordOf(DEMO));
  });
});

describe("SessionRegistry.touch", () => {
  it("stamps lastEventAt and appends a new delivery id", async () => {
    const registry = await registryWith(recordOf(DEMO, { recentDeliveries: ["d1"] }));
    const touched = await registry.touch(DEMO.ref, "d2", at(1));
    expect(touched).toMatchObject({ lastEventAt: at(1).toISOString(), recentDeliveries: ["d1", "d2"] });
    expect(registry.get(DEMO.ref)).toEqual(touched);
  });

  it("does not add a delivery id twice, nor one that is undefined", async () => {
    const registry = await registryWith(recordOf(DEMO, { recentDeliveries: ["d1", "d2"] }));
    expect((await registry.touch(DEMO.ref, "d1", at(2)))?.recentDeliveries).toEqual(["d1", "d2"]);
    const touched = await registry.touch(DEMO.ref, undefined, at(3));
    expect(touched).toMatchObject({ lastEventAt: at(3).toISOString(), recentDeliveries: ["d1", "d2"] });
  });

  it(`keeps only the newest ${RECENT_DELIVERIES_MAX} delivery ids`, async () => {
    const full = Array.from({ length: RECENT_DELIVERIES_MAX }, (_, i) => `d${i}`);
    const registry = await registryWith(recordOf(DEMO, { recentDeliveries: full }));
    const touched = await registry.touch(DEMO.ref, "newest", at(1));
    expect(touched?.recentDeliveries).toHaveLength(RECENT_DELIVERIES_MAX);
    expect(touched?.recentDeliveries).toEqual([...full.slice(1), "newest"]);
  });

  it("is undefined when there is no record", async () => {
    const registry = await registryWith();
    expect(await registry.touch(DEMO.ref, "d1", at(1))).toBeUndefined();
    expect(registry.get(DEMO.ref)).toBeUndefined();
  });
});

describe("status transitions", () => {
  const live = { status: "active" as const, awaitingInput: { question: "which branch?", askedAt: T0.toISOString() } };

  it.each([
    // [from status, setStatus(from…), to, applies]
    ["active", ["active"], "paused", true],
    ["paused", ["paused"], "active", true],
    ["paused", ["active"], "paused", false],
    ["closed", ["active", "paused"], "paused", false],
    ["active", ["active", "paused"], "closed", true],
  ] as const)("%s with setStatus(%j → %s) applies: %s", async (status, from, to, applies) => {
    const before = recordOf(DEMO, status === "closed" ? { status, closedAt: T0.toISOString(), closeReason: "done" } : { status });
    const registry = await registryWith(before);
    const result = await registry.setStatus(DEMO.ref, [...from], to, at(1));
    if (applies) {
      expect(result).toMatchObject({ status: to, lastEventAt: at(1).toISOString() });
      expect(registry.get(DEMO.ref)).toEqual(result);
    } else {
      expect(result).toBeUndefined();
      expect(registry.get(DEMO.ref)).toEqual(before);
    }
  });

  it("stamps closedAt on reaching closed and clears it on leaving closed", async () => {
    const registry = await registryWith(recordOf(DEMO));
    expect(await registry.setStatus(DEMO.ref, ["active"], "closed", at(1))).toMatchObject({ closedAt: at(1).toISOString() });
    const reopened = await registry.setStatus(DEMO.ref, ["closed"], "active", at(2));
    expect(reopened).toEqual(recordOf(DEMO, { lastEventAt: at(2).toISOString() }));
  });

  it("is undefined for setStatus without a record", async () => {
    const registry = await registryWith();
    expect(await registry.setStatus(DEMO.ref, ["active"], "paused", at(1))).toBeUndefined();
  });

  it.each(["active", "paused"] as const)("close of a %s session records when and why, and drops an open question", async (status) => {
    const registry = await registryWith(recordOf(DEMO, { ...live, status }));
    const closed = await registry.close(DEMO.ref, "item-closed", at(4));
    expect(closed).toEqual({
      ...recordOf(DEMO),
      status: "closed",
      closedAt: at(4).toISOString(),
      closeReason: "item-closed",
    });
    expect(registry.get(DEMO.ref)).toEqual(closed);
  });

  it("close of a closed record is a no-op returning undefined", async () => {
    const registry = await registryWith();
    const closed = JSON.stringify(recordOf(DEMO, { status: "closed", closedAt: T0.toISOString(), closeReason: "first" }));
    await writeFile(registry.pathFor(DEMO.ref), closed);
    expect(await registry.close(DEMO.ref, "second", at(9))).toBeUndefined();
    expect(await readFile(registry.pathFor(DEMO.ref), "utf8")).toBe(closed);
  });

  it("close without a record is undefined and writes nothing", async () => {
    const registry = await registryWith();
    expect(await registry.close(DEMO.ref, "gone", at(1))).toBeUndefined();
    expect(await readdir(registry.dir)).toEqual([]);
  });

  it("a closed work item can be claimed again, and the new session is live", async () => {
    const registry = await registryWith(recordOf(DEMO, { harnessSessionId: "first" }));
    await registry.close(DEMO.ref, "done", at(1));
    const again = await registry.claim(DEMO, () => recordOf(DEMO, { harnessSessionId: "second", createdAt: at(2).toISOString() }));
    expect(again).toMatchObject({ claimed: true, record: { status: "active", harnessSessionId: "second" } });
    expect(await registry.claim(DEMO, () => recordOf(DEMO))).toMatchObject({ claimed: false, record: { harnessSessionId: "second" } });
  });
});

describe("SessionRegistry.list", () => {
  const a = recordOf(itemOf("local:demo#1"), { createdAt: at(2).toISOString() });
  const b = recordOf(itemOf("local:demo#2"), { createdAt: at(1).toISOString(), status: "paused" });
  const c = recordOf(itemOf("github:octo/repo#7"), {
    createdAt: at(2).toISOString(),
    status: "closed",
    closedAt: at(3).toISOString(),
    closeReason: "done",
  });

  it("is empty for a folder that does not exist", async () => {
    const registry = new SessionRegistry({ dir: join(await tempDir(), "missing") });
    expect(registry.list()).toEqual({ records: [], problems: [] });
  });

  it("returns every record sorted by createdAt, then ref", async () => {
    const registry = await registryWith(a, b, c);
    expect(registry.list()).toEqual({ records: [b, c, a], problems: [] });
  });

  it.each([
    ["live", [b, a]],
    ["active", [a]],
    ["paused", [b]],
    ["closed", [c]],
  ] as const)("filters on status %s", async (status, expected) => {
    const registry = await registryWith(a, b, c);
    expect(registry.list({ status }).records).toEqual(expected);
  });

  it("skips temporary siblings, subfolders, lock folders, the poll state and non-JSON files", async () => {
    const registry = await registryWith(a);
    await writeFile(join(registry.dir, `.${workItemSlug(b.workItem.ref)}.json.123.abcd.tmp`), "{ half");
    await mkdir(join(registry.dir, "control"));
    await writeFile(join(registry.dir, "control", `${workItemSlug(a.workItem.ref)}.json`), "{}");
    await mkdir(join(registry.dir, "folder.json"));
    await mkdir(join(registry.dir, `${workItemSlug(a.workItem.ref)}.json.lock`));
    await writeFile(join(registry.dir, "poll-state.json"), JSON.stringify({ cursors: {} }));
    await writeFile(join(registry.dir, "README.md"), "notes");
    expect(registry.list()).toEqual({ records: [a], problems: [] });
  });

  it("reports bad files as problems and lists the rest", async () => {
    const registry = await registryWith(a, c);
    const files = {
      torn: join(registry.dir, "torn.json"),
      array: join(registry.dir, "array.json"),
      version: join(registry.dir, "version.json"),
      status: join(registry.dir, "status.json"),
      missing: join(registry.dir, "missing.json"),
    };
    await writeFile(files.torn, '{"version": 1, "workIt');
    await writeFile(files.array, "[]");
    await writeFile(files.version, JSON.stringify({ ...a, version: 2 }));
    await writeFile(files.status, JSON.stringify({ ...a, status: "running" }));
    const { createdAt: _createdAt, ...withoutCreatedAt } = a;
    await writeFile(files.missing, JSON.stringify(withoutCreatedAt));

    const { records, problems } = registry.list();
    expect(records).toEqual([c, a]);
    const byFile = new Map(problems.map((problem) => [problem.file, problem.message]));
    expect(byFile.size).toBe(5);
    expect(byFile.get(files.torn)).toMatch(/^not valid JSON/);
    expect(byFile.get(files.array)).toBe("not a JSON object");
    expect(byFile.get(files.version)).toBe("unknown version 2");
    expect(byFile.get(files.status)).toBe('status: unknown "running"');
    expect(byFile.get(files.missing)).toBe("createdAt: missing");
  });

  it("reads a record larger than its read buffer whole", async () => {
    const big = recordOf(DEMO, { awaitingInput: { question: "x".repeat(200_000), askedAt: T0.toISOString() } });
    const registry = await registryWith(big);
    expect(registry.list().records).toEqual([big]);
  });

  it("agrees with the full schema on every record it lists", async () => {
    const registry = await registryWith(a, b, c);
    for (const record of registry.list().records) expect(sessionRecordSchema.parse(record)).toEqual(record);
  });
});

describe("SessionRegistry.list with a listing cache", () => {
  const first = recordOf(itemOf("local:demo#1"), { createdAt: at(1).toISOString() });
  const second = recordOf(itemOf("local:demo#2"), { createdAt: at(2).toISOString() });

  async function cached(): Promise<{ registry: SessionRegistry; cache: string }> {
    const plain = await registryWith(first, second);
    await settled(plain.dir);
    const cache = join(await tempDir(), "cache", "sessions-list.json");
    return { registry: new SessionRegistry({ dir: plain.dir, listingCache: cache, lock: { timeoutMs: 2_000 } }), cache };
  }

  it("answers from the cache while the folder is unchanged, reading no record", async () => {
    const { registry, cache } = await cached();
    expect(registry.list().records).toEqual([first, second]);
    expect(JSON.parse(await readFile(cache, "utf8"))).toMatchObject({ dir: registry.dir, entries: [first, second] });
    // A record edited in place, without the rename every registry write makes, is not seen: the cache answered.
    await writeFile(registry.pathFor(first.workItem.ref), "not json");
    expect(registry.list().records).toEqual([first, second]);
    expect(registry.list({ status: "closed" }).records).toEqual([]);
  });

  it("sees every registry write, because each one changes the folder", async () => {
    const { registry } = await cached();
    registry.list();
    await registry.close(first.workItem.ref, "done", at(5));
    expect(registry.list({ status: "closed" }).records.map((record) => record.workItem.ref)).toEqual([first.workItem.ref]);
    const third = itemOf("local:demo#3");
    await registry.claim(third, () => recordOf(third, { createdAt: at(3).toISOString() }));
    expect(registry.list().records.map((record) => record.workItem.ref)).toEqual(["local:demo#1", "local:demo#2", "local:demo#3"]);
  });

  it("never caches a listing with problems, so they are reported every time", async () => {
    const { registry, cache } = await cached();
    await writeFile(join(registry.dir, "broken.json"), "{");
    expect(registry.list().problems).toHaveLength(1);
    expect(registry.list().problems).toHaveLength(1);
    await expect(readFile(cache, "utf8")).rejects.toThrow();
  });
});

describe("listSessionSummaries", () => {
  it("gives the table's columns, filtered, from a compact cache that follows every write", async () => {
    const one = recordOf(itemOf("local:demo#1"), { createdAt: at(1).toISOString() });
    const two = recordOf(itemOf("local:demo#2"), { createdAt: at(2).toISOString(), status: "paused" });
    const registry = await registryWith(one, two);
    await settled(registry.dir);
    const cache = join(await tempDir(), "cache", "sessions-list.json");
    const summaries = () => listSessionSummaries(registry.dir, { cache }).summaries;
    expect(summaries()).toEqual([
      { ref: "local:demo#1", status: "active", harness: "claude", tmuxTarget: one.tmuxTarget, lastEventAt: one.lastEventAt, createdAt: one.createdAt },
      { ref: "local:demo#2", status: "paused", harness: "claude", tmuxTarget: two.tmuxTarget, lastEventAt: two.lastEventAt, createdAt: two.createdAt },
    ]);
    expect(JSON.parse(await readFile(`${cache}.summaries`, "utf8"))).toMatchObject({
      entries: [
        ["local:demo#1", "active"],
        ["local:demo#2", "paused"],
      ].map((row) => expect.arrayContaining(row)),
    });
    expect(listSessionSummaries(registry.dir, { cache, status: "paused" }).summaries.map((s) => s.ref)).toEqual(["local:demo#2"]);
    await registry.close(one.workItem.ref, "done", at(5));
    await settled(registry.dir);
    expect(summaries().map((s) => s.status)).toEqual(["closed", "paused"]);
    expect(listSessionSummaries(registry.dir, { cache, status: "live" }).summaries.map((s) => s.ref)).toEqual(["local:demo#2"]);
  });
});
