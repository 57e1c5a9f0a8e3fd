import { existsSync } from "node:fs";
import { mkdir, rename, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BudgetStore, budgetDir } from "../../src/budget/index.js";
import type { BudgetRecord } from "../../src/budget/index.js";
import { liveUsage } from "../../src/cli/commands/sessions/budget.js";
import type { SessionStatus } from "../../src/registry/record.js";
import { parseWorkItemRef, workItemOf } from "../../src/workitem/index.js";
import { SAMPLE_TIME, sessionRecord } from "../support/builders.js";
import { tempDir } from "../support/temp.js";

const item = workItemOf(parseWorkItemRef("local:demo#1"), { kind: "issue", url: "file:///demo/1", id: "1" });
const other = workItemOf(parseWorkItemRef("local:demo#2"), { kind: "issue", url: "file:///demo/2", id: "2" });
const limits = { warnAt: 0.8, tokens: 10_000 };

/** A session as the listing hands it to the usage: the few fields it decides on. */
function listedSession(...args: Parameters<typeof sessionRecord>): { ref: string; status: SessionStatus; createdAt: string; harness: string } {
  const record = sessionRecord(...args);
  return { ref: record.workItem.ref, status: record.status, createdAt: record.createdAt, harness: record.harness };
}

function budgetRecord(ref: string, over: Partial<BudgetRecord> = {}): BudgetRecord {
  return {
    version: 1,
    ref,
    session: SAMPLE_TIME,
    harness: "claude",
    usage: { readable: true, readAt: SAMPLE_TIME, files: 1, total: 1234, input: 1000, cached: 200, output: 34 },
    raise: { tokens: 0, minutes: 0 },
    warnedAt: {},
    ...over,
  };
}

async function rootWith(records: BudgetRecord[]): Promise<string> {
  const root = await tempDir();
  const store = new BudgetStore({ dir: budgetDir(root) });
  await mkdir(store.dir, { recursive: true });
  for (const record of records) await writeFile(store.fileOf(record.ref), JSON.stringify(record));
  return root;
}

/** `why` reads the one record it needs; `sessions list` reads the folder once, through a cache file. */
const MODES = [
  ["one record at a time", (root: string) => liveUsage(root, limits)],
  ["the folder listed once", (root: string) => liveUsage(root, limits, undefined, { cache: join(root, "cache", "budget.json") })],
] as const;

describe.each(MODES)("the usage sessions list and why show (%s)", (_mode, liveUsage) => {
  it("reads a live session's budget record once the folder names it, and says 'not read yet' without one", async () => {
    const root = await rootWith([budgetRecord(item.ref)]);
    const usage = liveUsage(root);
    expect(usage.of(listedSession(item)).usage).toMatchObject({ tokens: 1234, input: 1000, cached: 200, output: 34, limits: { tokens: 10_000 } });
    expect(usage.of(listedSession(other)).usage).toMatchObject({ tokens: null, unreadable: expect.stringMatching(/^not read yet/) });
    expect(usage.column({ ref: item.ref, createdAt: SAMPLE_TIME, harness: "claude" })).toMatch(/^1,234\/10,000 tok, \d+ min$/);
  });

  it("shows nothing for a session that is not live, and ignores a record another session of the item left", async () => {
    const root = await rootWith([budgetRecord(item.ref, { session: "2025-01-01T00:00:00.000Z" })]);
    const usage = liveUsage(root);
    expect(usage.of(listedSession(item, { status: "closed" })).usage).toBeNull();
    expect(usage.of(listedSession(item)).usage).toMatchObject({ tokens: null });
  });

  it("reads nothing when the budget folder does not exist yet, and a damaged record is unknown usage, not a failure", async () => {
    const empty = liveUsage(await tempDir());
    expect(empty.summary({ ref: item.ref, createdAt: SAMPLE_TIME, harness: "claude" })).toMatchObject({ tokens: null });
    const root = await rootWith([]);
    await writeFile(new BudgetStore({ dir: budgetDir(root) }).fileOf(item.ref), "{ not json");
    expect(liveUsage(root).summary({ ref: item.ref, createdAt: SAMPLE_TIME, harness: "claude" })).toMatchObject({ tokens: null });
  });
});

describe("the budget folder listed for sessions list", () => {
  it("keeps what the usage needs in its cache while the folder is unchanged, and reads the folder again once a record is written", async () => {
    const root = await rootWith([budgetRecord(item.ref)]);
    const store = new BudgetStore({ dir: budgetDir(root) });
    const cache = join(root, "cache", "budget.json");
    // A folder changed within the last second is never cached (state/folder-cache.ts): this one was changed a minute ago.
    const past = new Date(Date.now() - 60_000);
    await utimes(store.dir, past, past);
    const listed = (): unknown => liveUsage(root, limits, undefined, { cache }).of(listedSession(item)).usage;
    expect(listed()).toMatchObject({ tokens: 1234 });
    expect(existsSync(cache)).toBe(true);
    expect(listed()).toMatchObject({ tokens: 1234 });
    // Written as the daemon writes: a temporary file renamed over the record.
    const temporary = join(store.dir, ".next.tmp");
    await writeFile(
      temporary,
      JSON.stringify(budgetRecord(item.ref, { usage: { readable: true, readAt: SAMPLE_TIME, files: 1, total: 5678, input: 5000, cached: 0, output: 678 } })),
    );
    await rename(temporary, store.fileOf(item.ref));
    expect(listed()).toMatchObject({ tokens: 5678 });
  });
});
