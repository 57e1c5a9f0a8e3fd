import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { errnoOf } from "../errors.js";
import { parseEventLine } from "../events/reader.js";
import type { PostgresEventTable } from "../state/postgres/event-table.js";
import type { StoreCopyCount } from "../state/copy-count.js";

/**
 * The event log's part of `state migrate --to postgres`: every event line of the file copied into
 * the table once. A line's key is a hash of its text and of how many identical lines came before
 * it, so a second run copies nothing, and two identical events (one millisecond, one process)
 * are both kept. A line that is not an event is counted as damaged and not copied. Verified by
 * counting the keys the table holds afterwards.
 */

const BATCH = 500;

/** The counts of the copy, as migrate-state.ts reports every store's (its KindCount). */
export interface EventCopyCount extends StoreCopyCount {
  readonly name: "events";
}

export async function copyEventLog(file: string, table: PostgresEventTable): Promise<EventCopyCount> {
  let files = 0;
  let copied = 0;
  let malformed = 0;
  let verifiedRows = 0;
  const seen = new Map<string, number>();
  let batch: { key: string; line: string }[] = [];
  const write = async (): Promise<void> => {
    if (batch.length === 0) return;
    copied += await table.importLines(batch);
    verifiedRows += await table.countImported(batch.map((entry) => entry.key));
    batch = [];
  };
  try {
    const lines = createInterface({ input: createReadStream(file, { encoding: "utf8" }), crlfDelay: Infinity });
    for await (const raw of lines) {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (line.trim() === "") continue;
      const record = parseEventLine(line);
      if (record === undefined || !Number.isFinite(Date.parse(record.ts))) {
        malformed += 1;
        continue;
      }
      const hash = createHash("sha256").update(line).digest("hex");
      const occurrence = seen.get(hash) ?? 0;
      seen.set(hash, occurrence + 1);
      batch.push({ key: `${hash}:${occurrence}`, line });
      files += 1;
      if (batch.length >= BATCH) await write();
    }
  } catch (error) {
    if (errnoOf(error) !== "ENOENT") throw error;
  }
  await write();
  const problems = malformed > 0 ? [{ where: file, message: `${malformed} line${malformed === 1 ? " is" : "s are"} not events` }] : [];
  return { name: "events", files, copied, unchanged: files - copied, kept: 0, problems, verified: verifiedRows === files };
}
