import { existsSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { loadPollState, savePollState } from "../../src/ingress/poll-state.js";
import { openStores } from "../../src/stores/stores.js";
import type { Stores } from "../../src/stores/stores.js";
import { deriveStatePaths } from "../../src/state/layout.js";
import { parseWorkItemRef, workItemOf } from "../../src/workitem/index.js";
import { sessionRecord } from "../support/builders.js";
import { postgresServer } from "../support/postgres.js";
import { tempDir } from "../support/temp.js";

/** Every store the daemon opens, on PostgreSQL through openStores: rows in the database, nothing under the state root. */

const cluster = postgresServer();
const opened: Stores[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((stores) => stores.close()));
});

async function storesOnPostgres(url: string): Promise<{ stores: Stores; root: string }> {
  const dir = await tempDir();
  const config = configSchema.parse({ state: { store: "postgres" } });
  const paths = deriveStatePaths(config, dir);
  const stores = await openStores(config, paths, { name: "stores-test", env: { THE_LOOP_STATE_URL: url } });
  opened.push(stores);
  return { stores, root: paths.root };
}

async function rows(url: string): Promise<{ kind: string; item: string }[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ kind: string; item: string }>("SELECT kind, item FROM the_loop_records WHERE body IS NOT NULL ORDER BY kind, item")).rows;
  } finally {
    await client.end();
  }
}

const REF = "local:demo#1";

describe("openStores on state.store: postgres", () => {
  it("keeps every kind of record, the start queue and the poll state as rows, readable from a second process's stores", async () => {
    const url = await cluster.freshDatabase();
    const { stores, root } = await storesOnPostgres(url);
    const item = workItemOf(parseWorkItemRef(REF), { kind: "issue", url: "file:///demo/1", id: "1" });
    expect((await stores.registry.claim(item, () => sessionRecord(item))).claimed).toBe(true);
    await stores.control.transaction(REF, (tx) =>
      tx.write({ version: 1, ref: REF, command: "pause", source: "cli", actor: "ana", requestedAt: new Date().toISOString(), effect: "recorded" }),
    );
    await stores.links.bind("local:demo#2", item, "explicit", new Date());
    await stores.ciAttempts.claim("local:demo#2", "check-1", 3, new Date());
    await stores.budgets.update(REF, { createdAt: "2026-01-01T00:00:00.000Z", harness: "claude" }, (record) => ({
      record: { ...record, minutes: 3 },
      result: undefined,
    }));
    await stores.startQueue.transaction(async () => ({
      entries: [{ ref: "local:demo#3", harness: "claude", queuedAt: new Date().toISOString() }],
      result: undefined,
    }));
    const pollState = stores.pollState;
    expect(pollState).toBeDefined();
    if (pollState === undefined) return;
    await savePollState(pollState, {
      version: 1,
      sources: { "local:*": { cursor: "7", handled: ["a"], attempts: {}, updatedAt: "2026-01-01T00:00:00.000Z" } },
    });

    expect(await rows(url)).toEqual([
      { kind: "budgets", item: REF },
      { kind: "ci-attempts", item: "local:demo#2" },
      { kind: "control", item: REF },
      { kind: "document", item: "poll-state" },
      { kind: "document", item: "start-queue" },
      { kind: "pr-links", item: "local:demo#2" },
      { kind: "sessions", item: REF },
    ]);
    // Nothing of it is a file under the state root.
    for (const part of ["sessions", "budget", "queue", "graphs"]) expect(existsSync(join(root, part))).toBe(false);

    // Another process's stores read them, synchronously too (from its mirror).
    const other = (await storesOnPostgres(url)).stores;
    expect(other.registry.get(REF)?.status).toBe("active");
    expect(other.registry.list({ status: "live" }).records.map((record) => record.workItem.ref)).toEqual([REF]);
    expect(other.control.get(REF)?.command).toBe("pause");
    expect(other.links.get("local:demo#2")?.workItem.ref).toBe(REF);
    expect(other.ciAttempts.get("local:demo#2")?.attempts).toBe(1);
    expect(other.budgets.get(REF)?.minutes).toBe(3);
    expect(other.startQueue.read().map((entry) => entry.ref)).toEqual(["local:demo#3"]);
    expect(other.startQueue.file).toBe("the_loop_records(document, start-queue)");
    expect((await loadPollState(other.pollState ?? "")).sources["local:*"]?.cursor).toBe("7");

    // A write by one is seen by the other's change stamp and its synchronous reader.
    const before = other.registry.changeStamp();
    await stores.registry.close(REF, "done", new Date());
    await other.backend.database?.sync();
    expect(other.registry.changeStamp()).not.toBe(before);
    expect(other.registry.get(REF)?.status).toBe("closed");
  });

  it("serialises the start queue's transactions across processes", async () => {
    const url = await cluster.freshDatabase();
    const [a, b] = await Promise.all([storesOnPostgres(url), storesOnPostgres(url)]);
    const append = (stores: Stores, n: number) =>
      stores.startQueue.transaction(async (entries) => ({
        entries: [...entries, { ref: `local:demo#${n}`, harness: "claude", queuedAt: new Date().toISOString() }],
        result: undefined,
      }));
    await Promise.all(Array.from({ length: 20 }, (_, n) => append(n % 2 === 0 ? a.stores : b.stores, n + 1)));
    expect(await a.stores.startQueue.transaction(async (entries) => ({ result: entries.length }))).toBe(20);
  });

  it("says what to do when the database cannot be opened, never quoting the URL's password", async () => {
    const dir = await tempDir();
    const config = configSchema.parse({ state: { store: "postgres" } });
    const url = `postgresql://loop:hunter2-hunter2@/nowhere?host=${encodeURIComponent(join(dir, "no-socket"))}`;
    const error = await openStores(config, deriveStatePaths(config, dir), { env: { THE_LOOP_STATE_URL: url } }).then(
      () => undefined,
      (thrown: unknown) => thrown as Error,
    );
    expect(error?.message).toContain("cannot open the state database (state.store: postgres, the URL in $THE_LOOP_STATE_URL)");
    expect(error?.message).toContain("set state.store: file");
    expect(error?.message).not.toContain("hunter2");
  });
});
