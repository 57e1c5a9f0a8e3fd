import { mkdir, readdir, readFile, stat, utimes } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isTemporaryName, readJsonFile } from "../../src/state/atomic.js";
import { LockTimeoutError, withLock } from "../../src/state/lock.js";
import { ExitError } from "../../src/errors.js";
import { tempDir } from "../support/temp.js";
import { expectCleanExit, startFixture } from "./fixtures/children.js";
import type { FixtureProcess } from "./fixtures/children.js";

/** Starts `count` fixtures, waits until each is ready, then releases them at the same instant. */
async function startTogether(count: number, start: (index: number) => FixtureProcess): Promise<FixtureProcess[]> {
  const contenders = Array.from({ length: count }, (_, index) => start(index));
  await Promise.all(contenders.map((contender) => contender.line((line) => line === "ready", '"ready"')));
  for (const contender of contenders) contender.child.stdin.write("go\n");
  return contenders;
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

describe("createFileExclusive across processes", () => {
  it("lets exactly one of many racing processes create each file, with its own content", async () => {
    const dir = await tempDir();
    const CONTENDERS = 8;
    const CLAIMS = 25;
    const contenders = await startTogether(CONTENDERS, (index) => startFixture("create-exclusive.mjs", [dir, `contender-${index}`, String(CLAIMS)]));

    const winnerOf = new Map<number, string[]>();
    for (const [index, contender] of contenders.entries()) {
      const report = JSON.parse(await contender.line((line) => line.startsWith("{"), "its result")) as { won: number[] };
      for (const claim of report.won) winnerOf.set(claim, [...(winnerOf.get(claim) ?? []), `contender-${index}`]);
      await expectCleanExit(contender);
    }

    for (let claim = 0; claim < CLAIMS; claim++) {
      const winners = winnerOf.get(claim) ?? [];
      expect(winners, `winners of claim ${claim}`).toHaveLength(1);
      const content = JSON.parse(await readFile(join(dir, `claim-${claim}.json`), "utf8")) as { contender: string; claim: number };
      expect(content).toMatchObject({ contender: winners[0], claim });
    }
    // The losers' temporary files are gone too.
    expect((await readdir(dir)).filter(isTemporaryName)).toEqual([]);
    expect(await readdir(dir)).toHaveLength(CLAIMS);
  });
});

describe("withLock", () => {
  it("serialises read-modify-write cycles of several processes, so no increment is lost", async () => {
    const dir = await tempDir();
    const counter = join(dir, "counter.json");
    const PROCESSES = 6;
    const INCREMENTS = 30;
    const incrementers = await startTogether(PROCESSES, () => startFixture("increment-counter.mjs", [counter, String(INCREMENTS)]));
    await Promise.all(incrementers.map((incrementer) => expectCleanExit(incrementer)));

    expect(await readJsonFile(counter)).toEqual({ count: PROCESSES * INCREMENTS });
    expect(await exists(`${counter}.lock`)).toBe(false);
  });

  it("returns the critical section's result and removes the lock afterwards", async () => {
    const dir = await tempDir();
    const target = join(dir, "nested", "record.json");
    const seen = await withLock(target, async () => exists(`${target}.lock`));
    expect(seen).toBe(true);
    expect(await exists(`${target}.lock`)).toBe(false);
  });

  it("releases the lock when the critical section throws", async () => {
    const dir = await tempDir();
    const target = join(dir, "record.json");
    await expect(withLock(target, () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await exists(`${target}.lock`)).toBe(false);
    await expect(withLock(target, async () => "again", { timeoutMs: 100 })).resolves.toBe("again");
  });

  it("times out with an actionable LockTimeoutError while another process holds the lock", async () => {
    const dir = await tempDir();
    const target = join(dir, "record.json");
    const holder = startFixture("hold-lock.mjs", [target]);
    await holder.line((line) => line === "locked", '"locked"');

    let entered = false;
    const error: unknown = await withLock(
      target,
      async () => {
        entered = true;
      },
      { timeoutMs: 300 },
    ).catch((caught: unknown) => caught);
    expect(entered).toBe(false);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error).toBeInstanceOf(ExitError);
    expect(error).toMatchObject({ code: "lock-timeout", exitCode: 1 });
    const message = (error as LockTimeoutError).message;
    expect(message).toContain("300ms");
    expect(message).toContain(target);
    // Tells the operator what to remove if no process is left.
    expect(message).toContain(`remove ${target}.lock`);

    // Once the holder lets go, the same call succeeds: the timeout was about the holder.
    holder.child.stdin.end();
    await holder.line((line) => line === "released", '"released"');
    await expectCleanExit(holder);
    await expect(withLock(target, async () => "mine", { timeoutMs: 300 })).resolves.toBe("mine");
  });

  it("takes over a lock left behind by a process killed with SIGKILL once it is stale", async () => {
    const dir = await tempDir();
    const target = join(dir, "record.json");
    const holder = startFixture("hold-lock.mjs", [target]);
    await holder.line((line) => line === "locked", '"locked"');
    holder.child.kill("SIGKILL");
    expect((await holder.exited).signal).toBe("SIGKILL");

    // The dead holder's lock is still there and still fresh, so it is respected...
    expect(await exists(`${target}.lock`)).toBe(true);
    await expect(withLock(target, async () => "too early", { timeoutMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);

    // ...until its mtime says nobody has refreshed it for longer than staleMs.
    const longAgo = new Date(Date.now() - 60 * 60 * 1000);
    await utimes(`${target}.lock`, longAgo, longAgo);
    await expect(withLock(target, async () => "taken over", { timeoutMs: 1000 })).resolves.toBe("taken over");
    expect(await exists(`${target}.lock`)).toBe(false);
  });

  it("takes over a stale lock directory even when nothing else is known about its holder", async () => {
    const dir = await tempDir();
    const target = join(dir, "record.json");
    await mkdir(`${target}.lock`);
    const longAgo = new Date(Date.now() - 60 * 1000);
    await utimes(`${target}.lock`, longAgo, longAgo);
    await expect(withLock(target, async () => "taken over", { timeoutMs: 1000, staleMs: 30_000 })).resolves.toBe("taken over");
  });

  it("respects a lock younger than staleMs", async () => {
    const dir = await tempDir();
    const target = join(dir, "record.json");
    await mkdir(`${target}.lock`);
    const recently = new Date(Date.now() - 5 * 1000);
    await utimes(`${target}.lock`, recently, recently);
    await expect(withLock(target, async () => "stolen", { timeoutMs: 100, staleMs: 30_000 })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(await exists(`${target}.lock`)).toBe(true);
  });
});
