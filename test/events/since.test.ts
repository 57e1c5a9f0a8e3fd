import { describe, expect, it } from "vitest";
import { SinceFormatError, parseSince } from "../../src/events/since.js";

const now = new Date("2025-03-10T12:00:00.000Z");
const ago = (ms: number): string => new Date(now.getTime() - ms).toISOString();

describe("parseSince", () => {
  it.each([
    ["30s", ago(30_000)],
    ["15m", ago(15 * 60_000)],
    ["2h", ago(2 * 3_600_000)],
    ["1d", ago(86_400_000)],
    ["2w", ago(14 * 86_400_000)],
    ["0s", now.toISOString()],
    [" 5m ", ago(5 * 60_000)],
  ])("reads the duration %j as that long before now", (text, expected) => {
    expect(parseSince(text, now).toISOString()).toBe(expected);
  });

  it.each([
    ["2025-01-31", "2025-01-31T00:00:00.000Z"],
    ["2025-01-31T09:30:00Z", "2025-01-31T09:30:00.000Z"],
    ["2025-01-31T09:30:00.123Z", "2025-01-31T09:30:00.123Z"],
    ["2025-01-31T09:30:00.123456Z", "2025-01-31T09:30:00.123Z"],
    ["2025-01-31t09:30:00z", "2025-01-31T09:30:00.000Z"],
    ["2025-01-31T09:30Z", "2025-01-31T09:30:00.000Z"],
    ["2025-01-31T10:30:00+01:00", "2025-01-31T09:30:00.000Z"],
    ["2025-01-31T10:30:00+0100", "2025-01-31T09:30:00.000Z"],
    ["2025-01-31T10:30:00+01", "2025-01-31T09:30:00.000Z"],
    ["2025-01-31T04:00:00-05:30", "2025-01-31T09:30:00.000Z"],
    ["2025-01-31 09:30:00", "2025-01-31T09:30:00.000Z"],
    ["2025-01-31T09:30:00", "2025-01-31T09:30:00.000Z"],
    ["2024-02-29", "2024-02-29T00:00:00.000Z"],
  ])("reads the ISO time %j as %s", (text, expected) => {
    expect(parseSince(text, now).toISOString()).toBe(expected);
  });

  it.each([
    "",
    "30",
    "s",
    "-5m",
    "1.5h",
    "2 h",
    "5M",
    "1y",
    "3 days",
    "yesterday",
    "2025-13-01",
    "2025-02-30",
    "2023-02-29",
    "2025-01-31T24:00:00Z",
    "2025-01-31T09:60Z",
    "2025-01-31T09",
    "31/01/2025",
    "1738315800",
  ])("refuses %j, naming the accepted forms", (text) => {
    expect(() => parseSince(text, now)).toThrow(SinceFormatError);
    expect(() => parseSince(text, now)).toThrow(/30s, 15m, 2h, 1d or 2w.*ISO-8601/);
  });
});
