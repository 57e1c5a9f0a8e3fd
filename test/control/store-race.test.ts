import { readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { ControlStore } from "../../src/control/store.js";
import type { ControlRecord } from "../../src/control/types.js";
import { isTemporaryName } from "../../src/state/atomic.js";
import { workItemSlug } from "../../src/workitem/index.js";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { expectCleanExit, startFixture } from "../state/fixtures/children.js";
import type { FixtureProcess } from "../state/fixtures/children.js";

/**
 * The store's promise across processes: transactions on one item never interleave, whichever
 * processes run them (the daemon and the CLI), and a kill -9 at any instant leaves a record that
 * can be read and a lock that is taken over once stale. The children run the built store (dist/),
 * as the daemon and CLI do.
 */

const STORE = pathToFileURL(join(REPO_ROOT, "dist/control/store.js")).href;
const REF = "github:octo/repo#42";

// Shared by every child: the store, and the record a transaction writes when there is none yet.
const STORE_JS = `
const { ControlStore } = await import(${JSON.stringify(STORE)});
const store = new ControlStore(lock === "default" ? { dir } : { dir, lock: JSON.parse(lock) });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const base = (ref) => ({
  version: 1, ref, command: "pause", source: "cli", actor: "racer",
  requestedAt: new Date().toISOString(), effect: "recorded",
});
`;

// Waits for "go", then appends its name to the record's note in one transaction, slowly: without
// mutual exclusion another process would read the same note meanwhile and one name would be lost.
const APPEND_ONCE = `
import { once } from "node:events";
const [dir, ref, name, lock] = process.argv.slice(2);
${STORE_JS}
process.stdout.write("ready\\n");
await once(process.stdin, "data");
await store.transaction(ref, async (tx) => {
  const current = tx.read();
  await sleep(20);
  const names = current?.note ? current.note.split(",") : [];
  await tx.write({ ...(current ?? base(ref)), note: [...names, name].join(",") });
});
process.stdout.write("done\\n");
process.exit(0);
`;

// Rewrites the record in a loop until killed, printing each finished transaction.
const CYCLE_FOREVER = `
const [dir, ref, name, lock] = process.argv.slice(2);
${STORE_JS}
for (let cycle = 1; ; cycle++) {
  await store.transaction(ref, async (tx) => {
    const current = tx.read();
    await tx.write({ ...(current ?? base(ref)), command: cycle % 2 ? "stop" : "pause", note: name + "-" + cycle });
  });
  process.stdout.write("cycle " + cycle + "\\n");
}
`;

// Writes once inside a transaction, says so, and holds the lock until killed.
const HOLD_FOREVER = `
const [dir, ref, name, lock] = process.argv.slice(2);
${STORE_JS}
await store.transaction(ref, async (tx) => {
  await tx.write({ ...(tx.read() ?? base(ref)), note: name });
  process.stdout.write("holding\\n");
  // A timer keeps the process alive: the lock's own refresh timer does not (it is unref'd), and a
  // process that ends normally removes its lock on the way out, which is not what is tested.
  await new Promise(() => setInterval(() => {}, 60_000));
});
`;

async function script(dir: string, name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

// startFixture resolves its script against test/state/fixtures/; an absolute path stays as it is.
const start = (path: string, args: readonly string[]): FixtureProcess => startFixture(path, args);

async function killed(child: FixtureProcess, what: string): Promise<void> {
  child.child.kill("SIGKILL");
  const { signal } = await child.exited;
  expect(signal, `${what} stderr:\n${child.stderr()}`).toBe("SIGKILL");
}

const recordFiles = async (dir: string): Promise<string[]> => (await readdir(dir)).filter((name) => !isTemporaryName(name));

describe("ControlStore.transaction across processes", () => {
  it("lets eight processes append to one record at once without losing any of them", async () => {
    const scripts = await tempDir();
    const store = new ControlStore({ dir: join(await tempDir(), "sessions", "control") });
    const appendOnce = await script(scripts, "append-once.mjs", APPEND_ONCE);
    const CONTENDERS = 8;
    // Generous: eight processes queue on one lock on a machine that may be busy.
    const lock = JSON.stringify({ timeoutMs: 60_000 });

    const contenders = Array.from({ length: CONTENDERS }, (_, index) => start(appendOnce, [store.dir, REF, `racer-${index}`, lock]));
    await Promise.all(contenders.map((contender) => contender.line((line) => line === "ready", '"ready"')));
    for (const contender of contenders) contender.child.stdin.write("go\n");
    for (const contender of contenders) {
      await contender.line((line) => line === "done", '"done"');
      await expectCleanExit(contender);
    }

    const names = store.get(REF)?.note?.split(",") ?? [];
    expect(names).toHaveLength(CONTENDERS);
    expect([...names].sort()).toEqual(Array.from({ length: CONTENDERS }, (_, index) => `racer-${index}`).sort());
    expect(await readdir(store.dir)).toEqual([`${workItemSlug(REF)}.json`]);
  }, 60_000);

  it("leaves a readable record whenever a process is killed with SIGKILL among transactions", async () => {
    const scripts = await tempDir();
    const dir = join(await tempDir(), "sessions", "control");
    const store = new ControlStore({ dir, lock: { staleMs: 2_000, timeoutMs: 20_000 } });
    const cycleForever = await script(scripts, "cycle-forever.mjs", CYCLE_FOREVER);
    const ROUNDS = 6;

    for (let round = 0; round < ROUNDS; round++) {
      const cycler = start(cycleForever, [dir, REF, `round-${round}`, JSON.stringify({ staleMs: 2_000, timeoutMs: 20_000 })]);
      // Killed on seeing a random cycle finish: the next one is under way, at some unknown step.
      const cycles = 1 + Math.floor(Math.random() * 4);
      await cycler.line((line) => line === `cycle ${cycles}`, `"cycle ${cycles}" (round ${round})`);
      await killed(cycler, `round ${round}`);

      // Whatever instant it died at, the record is one whole version of this round's: get() and
      // list() accept it, and a temporary file the writer left is not mistaken for a record.
      expect(store.get(REF)?.note ?? "", `round ${round}`).toMatch(new RegExp(`^round-${round}-\\d+$`));
      expect(store.list().problems).toEqual([]);
      expect(store.list().records).toHaveLength(1);
      // The dead cycler's lock goes stale by itself (the next test waits for that); removing it
      // keeps every round from waiting.
      await rm(`${store.pathFor(REF)}.lock`, { recursive: true, force: true });
    }

    // Still usable afterwards.
    await store.transaction(REF, (tx) => tx.write({ ...(tx.read() as ControlRecord), note: "survivor" }));
    expect(store.get(REF)?.note).toBe("survivor");
    expect(await recordFiles(dir)).toEqual([`${workItemSlug(REF)}.json`]);
  }, 60_000);

  it("takes over the lock of a process killed mid-transaction within the stale period", async () => {
    const scripts = await tempDir();
    const dir = join(await tempDir(), "sessions", "control");
    // The store's own lock options, in the holder and here: those are the ones that bound the stall.
    const store = new ControlStore({ dir });
    const holdForever = await script(scripts, "hold-forever.mjs", HOLD_FOREVER);

    const holder = start(holdForever, [dir, REF, "holder", "default"]);
    await holder.line((line) => line === "holding", '"holding"');
    await killed(holder, "holder");
    const killedAt = Date.now();
    // SIGKILL runs no exit handler: the lock stays behind, as after a crash.
    expect(await readdir(dir)).toContain(`${workItemSlug(REF)}.json.lock`);

    // The record is what the holder wrote before it died, readable without the lock.
    expect(store.get(REF)).toMatchObject({ ref: REF, note: "holder" });

    const seen = await store.transaction(REF, async (tx) => {
      const current = tx.read();
      await tx.write({ ...(current as ControlRecord), note: "after-takeover" });
      return current?.note;
    });
    const stalled = Date.now() - killedAt;
    expect(seen).toBe("holder");
    expect(store.get(REF)?.note).toBe("after-takeover");
    // Stale 3 s after the holder's last refresh, which was at most 1.5 s before the kill (it
    // refreshes every half stale period): so waited for, and taken over, between the two, plus
    // retry slack.
    expect(stalled).toBeGreaterThanOrEqual(1_400);
    expect(stalled).toBeLessThan(5_000);
    expect(await recordFiles(dir)).toEqual([`${workItemSlug(REF)}.json`]);
  }, 30_000);
});
