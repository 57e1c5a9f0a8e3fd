/**
 * `--since`: a duration back from now (`30s`, `15m`, `2h`, `1d`, `2w`) or an ISO-8601 time
 * (a date alone is midnight UTC; a time without an offset is UTC).
 * The result is a Date so callers compare instants, never strings: `…+02:00` and `…Z` order
 * correctly, and so do timestamps with and without milliseconds.
 */

export const SINCE_FORMS = "a duration such as 30s, 15m, 2h, 1d or 2w, or an ISO-8601 time such as 2025-01-31 or 2025-01-31T09:30:00Z";

export class SinceFormatError extends Error {
  override readonly name: string = "SinceFormatError";
}

const UNIT_MS: Readonly<Record<string, number>> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

const DURATION_RE = /^(\d{1,9})([smhdw])$/;
// Date, optionally a time (minutes at least), optionally an offset; a space may stand for the T.
const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function parseIso(text: string): Date | undefined {
  const match = ISO_RE.exec(text);
  if (!match) return undefined;
  const [, year = "", month = "", day = "", hour, minute, second, fraction, zone] = match;
  const y = Number(year);
  const mo = Number(month);
  const d = Number(day);
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return undefined;
  if (hour === undefined) return new Date(Date.UTC(y, mo - 1, d));
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second ?? "0") > 59) return undefined;
  // Rebuilt in the one shape Date.parse is specified to read. A time without a zone is UTC, the
  // zone of every `ts` in the log and of the TIME column people copy it from.
  const millis = (fraction ?? "").padEnd(3, "0").slice(0, 3);
  let offset = "Z";
  if (zone) {
    const upper = zone.toUpperCase();
    offset = upper === "Z" ? "Z" : /^[+-]\d{2}$/.test(upper) ? `${upper}:00` : upper.replace(/^([+-]\d{2}):?(\d{2})$/, "$1:$2");
  }
  const instant = new Date(`${year}-${month}-${day}T${hour}:${minute}:${second ?? "00"}.${millis}${offset}`);
  return Number.isNaN(instant.getTime()) ? undefined : instant;
}

/** The instant `text` names, relative to `now` for a duration. Throws SinceFormatError for anything else. */
export function parseSince(text: string, now: Date = new Date()): Date {
  const input = text.trim();
  const duration = DURATION_RE.exec(input);
  if (duration) {
    const [, amount = "", unit = ""] = duration;
    return new Date(now.getTime() - Number(amount) * (UNIT_MS[unit] ?? 0));
  }
  const instant = parseIso(input);
  if (instant) return instant;
  throw new SinceFormatError(`invalid time "${text}": expected ${SINCE_FORMS}`);
}
