import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EventLog, scrubSecrets } from "../../src/events/log.js";
import { tempDir } from "../support/temp.js";

/** What the event log scrubs from every string it writes, and the timestamp it formats once per millisecond. */

describe("scrubSecrets", () => {
  const token = "A1b2C3d4E5f6G7h8I9j0K1l2";
  it.each([
    { text: `a ghp_${token} here`, scrubbed: "a [redacted] here" },
    { text: `ghs_${token}`, scrubbed: "[redacted]" },
    { text: `github_pat_${token}_x`, scrubbed: "[redacted]" },
    { text: `Authorization: Bearer ${token}`, scrubbed: "Authorization: [redacted]" },
    { text: `TOKEN ${token}`, scrubbed: "[redacted]" },
    { text: `bearer ${token}`, scrubbed: "[redacted]" },
    // What no pattern matches is left as it is, the hint words included.
    { text: "a token of thanks, GHP_ in capitals", scrubbed: "a token of thanks, GHP_ in capitals" },
    { text: "delivery 72d3162e-cc78-11e3-81ab-4c9367dc0958", scrubbed: "delivery 72d3162e-cc78-11e3-81ab-4c9367dc0958" },
  ])("$text", ({ text, scrubbed }) => {
    expect(scrubSecrets(text)).toBe(scrubbed);
  });
});

describe("the event log's timestamp", () => {
  it("is each event's own time, whichever log wrote the one before", async () => {
    const dir = await tempDir();
    const times = ["2025-03-10T12:00:00.000Z", "2025-03-10T12:00:00.000Z", "2025-03-10T12:00:00.001Z", "2024-01-01T00:00:00.000Z"];
    let next = 0;
    const log = new EventLog({ path: join(dir, "a.jsonl"), source: "demo", now: () => new Date(times[next++] ?? "") });
    const other = new EventLog({ path: join(dir, "b.jsonl"), source: "demo", now: () => new Date("2030-01-01T00:00:00.000Z") });
    for (let index = 0; index < times.length; index++) {
      log.emit("webhook.listening", { host: "127.0.0.1", port: index, path: "/gh-webhook", verified: true });
      other.emit("webhook.listening", { host: "127.0.0.1", port: index, path: "/gh-webhook", verified: true });
    }
    const stamps = (await readFile(join(dir, "a.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((line) => (JSON.parse(line) as { ts: string }).ts);
    expect(stamps).toEqual(times);
  });
});
