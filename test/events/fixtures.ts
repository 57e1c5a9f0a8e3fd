import type { EventRecord } from "../../src/events/reader.js";

/** One event record with a plausible envelope; `overrides` replace or add fields. */
export function record(overrides: Partial<EventRecord> & Record<string, unknown> = {}): EventRecord {
  return {
    ts: "2025-03-10T12:00:00.000Z",
    source: "cli",
    event: "item.opened",
    level: "info",
    pid: 100,
    ...overrides,
  };
}

/** The JSONL text of records: one line each, each ending in a newline. */
export function jsonl(...records: readonly EventRecord[]): string {
  return records.map((r) => `${JSON.stringify(r)}\n`).join("");
}
