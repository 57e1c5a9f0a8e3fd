import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { EventRecord } from "../../src/events/reader.js";
import { readLatestEvents } from "../../src/events/tail.js";
import { tempDir } from "../support/temp.js";
import { jsonl, record } from "./fixtures.js";

/** Numbered events, alternating between two work items. */
function numbered(count: number): ReturnType<typeof record>[] {
  return Array.from({ length: count }, (_, n) => record({ event: "item.commented", n, work_item: n % 2 === 0 ? "local:p#1" : "local:p#2" }));
}

async function logOf(text: string): Promise<string> {
  const path = join(await tempDir(), "events.jsonl");
  await writeFile(path, text);
  return path;
}

const numbers = (events: readonly EventRecord[]): unknown[] => events.map((event) => event.n);

describe("readLatestEvents", () => {
  // A chunk of 7 bytes splits every line across several reads; one of 1 MB holds the whole file.
  it.each([7, 64, 1024 * 1024])("gives the item's events newest first, whole, with reads of %i bytes", async (chunkBytes) => {
    const path = await logOf(jsonl(...numbered(20)));
    const result = await readLatestEvents(path, { workItem: "local:p#1" }, { limit: 100, maxBytes: Infinity, chunkBytes });
    expect(numbers(result.events)).toEqual([18, 16, 14, 12, 10, 8, 6, 4, 2, 0]);
    expect(result).toMatchObject({ malformed: 0, reachedStart: true, missing: false });
  });

  it("stops at the limit without reading the rest of the file", async () => {
    const text = jsonl(...numbered(1000));
    const path = await logOf(text);
    const result = await readLatestEvents(path, { workItem: "local:p#2" }, { limit: 3, maxBytes: Infinity, chunkBytes: 4096 });
    expect(numbers(result.events)).toEqual([999, 997, 995]);
    expect(result.reachedStart).toBe(false);
    expect(result.scannedBytes).toBeLessThan(text.length / 10);
  });

  it("reads no more than its byte budget from the end", async () => {
    const path = await logOf(jsonl(...numbered(1000)));
    const result = await readLatestEvents(path, { workItem: "local:p#1" }, { limit: 1000, maxBytes: 2048, chunkBytes: 512 });
    expect(result.scannedBytes).toBe(2048);
    expect(result.reachedStart).toBe(false);
    expect(numbers(result.events)[0]).toBe(998);
    expect(result.events.length).toBeLessThan(30);
  });

  it("passes over a partial last line: its writer is mid-append", async () => {
    const path = await logOf(`${jsonl(...numbered(3))}{"ts":"2025-03-10T12:00:00.000Z","work_item":"local:p#1"`);
    const result = await readLatestEvents(path, { workItem: "local:p#1" }, { limit: 10, maxBytes: Infinity, chunkBytes: 16 });
    expect(numbers(result.events)).toEqual([2, 0]);
    expect(result.malformed).toBe(0);
  });

  it("counts a malformed line naming the item and reads on past it", async () => {
    const [first, second] = numbered(3).filter((event) => event.work_item === "local:p#1");
    const path = await logOf(`${jsonl(first!)}not json about local:p#1\n\n${jsonl(second!)}`);
    const result = await readLatestEvents(path, { workItem: "local:p#1" }, { limit: 10, maxBytes: Infinity, chunkBytes: 5 });
    expect(numbers(result.events)).toEqual([2, 0]);
    expect(result.malformed).toBe(1);
  });

  it("matches a ref written in another letter case, and applies the rest of the filter", async () => {
    const path = await logOf(
      jsonl(
        record({ event: "session.spawned", work_item: "GitHub:Octo/App#15", n: 1 }),
        record({ event: "routing.routed", level: "debug", work_item: "github:octo/app#15", n: 2 }),
        record({ event: "session.closed", work_items: ["github:octo/app#15"], n: 3 }),
      ),
    );
    const result = await readLatestEvents(path, { workItem: "github:octo/app#15", minLevel: "info" }, { limit: 10, maxBytes: Infinity });
    expect(numbers(result.events)).toEqual([3, 1]);
  });

  it("takes a file without a final newline's content before it, and one with no newline at all as nothing", async () => {
    expect((await readLatestEvents(await logOf('{"ts":'), {}, { limit: 5, maxBytes: Infinity })).events).toEqual([]);
    const only = jsonl(record({ n: 1 }));
    expect(numbers((await readLatestEvents(await logOf(only), {}, { limit: 5, maxBytes: Infinity, chunkBytes: 3 })).events)).toEqual([1]);
  });

  it("reports a missing log as no events", async () => {
    const result = await readLatestEvents(join(await tempDir(), "none.jsonl"), {}, { limit: 5, maxBytes: Infinity });
    expect(result).toEqual({ events: [], malformed: 0, scannedBytes: 0, reachedStart: true, missing: true });
  });
});
