import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isTemporaryName } from "../../src/state/atomic.js";
import { tempDir } from "../support/temp.js";
import { startFixture } from "./fixtures/children.js";

/**
 * The acceptance test of "a kill -9 at any instant leaves every file parseable": a child rewrites
 * records of ever-changing size as fast as it can and is killed at a random moment, over and
 * over on the same directory. Every record must then be a complete version: valid JSON whose
 * length and checksum match its padding.
 */

const RECORDS = 4;
const ROUNDS = 25;
const MAX_KILL_DELAY_MS = 60;

interface RecordVersion {
  readonly name: string;
  readonly seq: number;
  readonly length: number;
  readonly checksum: string;
  readonly padding: string;
}

// Must match checksum() in fixtures/rewrite-records.mjs.
function recordChecksum(name: string, seq: number, padding: string): string {
  return createHash("sha256").update(`${name}\n${seq}\n${padding}`).digest("hex");
}

/** Reads every record file (skipping temporary siblings) and checks each is one whole version. */
async function readConsistentRecords(dir: string): Promise<Map<string, number>> {
  const seqs = new Map<string, number>();
  for (const entry of await readdir(dir)) {
    if (isTemporaryName(entry)) continue;
    const text = await readFile(join(dir, entry), "utf8");
    let record: RecordVersion;
    try {
      record = JSON.parse(text) as RecordVersion;
    } catch (error) {
      throw new Error(`${entry} is torn (${text.length} bytes): ${String(error)}`, { cause: error });
    }
    expect(`${record.name}.json`, `${entry} holds another record`).toBe(entry);
    expect(record.padding.length, `${entry} length field`).toBe(record.length);
    expect(recordChecksum(record.name, record.seq, record.padding), `${entry} checksum`).toBe(record.checksum);
    seqs.set(entry, record.seq);
  }
  return seqs;
}

describe("writeJsonAtomic under kill -9", () => {
  it("leaves every record a complete version whenever the writer is killed", async () => {
    const dir = await tempDir();
    const expectedNames = Array.from({ length: RECORDS }, (_, i) => `record-${i}.json`).sort();
    let previous = new Map<string, number>();
    let roundsWithProgress = 0;
    const started = Date.now();

    for (let round = 0; round < ROUNDS; round++) {
      const writer = startFixture("rewrite-records.mjs", [dir, String(RECORDS)]);
      await writer.line((line) => line === "started", `"started" (round ${round})`);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * MAX_KILL_DELAY_MS));
      writer.child.kill("SIGKILL");
      const { signal } = await writer.exited;
      // An earlier exit would mean the writer failed (e.g. it found a torn record on resume).
      expect(signal, `round ${round} writer stderr:\n${writer.stderr()}`).toBe("SIGKILL");

      const seqs = await readConsistentRecords(dir);
      expect([...seqs.keys()].sort(), `records after round ${round}`).toEqual(expectedNames);
      for (const [name, seq] of seqs) {
        // Each round resumes from disk, so no record ever goes back to an older version.
        expect(seq, `${name} after round ${round}`).toBeGreaterThanOrEqual(previous.get(name) ?? 1);
      }
      if ([...seqs].some(([name, seq]) => seq > (previous.get(name) ?? 1))) roundsWithProgress++;
      previous = seqs;
    }

    // Otherwise every kill could have landed before the first rewrite and proved nothing.
    expect(roundsWithProgress).toBeGreaterThanOrEqual(ROUNDS / 4);
    const leftovers = (await readdir(dir)).filter(isTemporaryName).length;
    console.log(
      `kill -9 test: ${ROUNDS} rounds (${roundsWithProgress} with rewrites before the kill) in ${Date.now() - started} ms; ` +
        `record versions reached: ${[...previous.values()].join("/")}; ${leftovers} temporary siblings left by kills`,
    );
  });
});
