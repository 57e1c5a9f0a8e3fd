/**
 * A command's output made fit for a message: an event, a ticket comment, a line in a terminal.
 * What a command prints is not the-loop's to trust, so escape sequences and control characters
 * never pass through (a colour code, a cursor move, a title change would act on whoever reads it).
 */

// CSI (`ESC [ … final`) and OSC (`ESC ] … BEL|ST`) sequences, then any other escape pair.
// eslint-disable-next-line no-control-regex
const ESCAPE_SEQUENCES = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-_]?/g;
// C0 controls except tab and newline, DEL, and the C1 range.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** `text` without escape sequences or control characters; tabs become spaces, newlines stay. */
export function stripControlCharacters(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(ESCAPE_SEQUENCES, "").replace(/\t/g, " ").replace(CONTROL_CHARACTERS, "");
}

/** `text` cut to at most `maxChars`, an ellipsis marking the cut. */
export function clip(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return maxChars <= 1 ? "…".slice(0, maxChars) : `${text.slice(0, maxChars - 1)}…`;
}

/**
 * The last `maxLines` non-blank lines of `text`, cleaned, joined by ` | ` so the answer stays on
 * one line, and at most `maxChars` long — the start is cut, the end (where a failure is usually
 * said) kept.
 */
export function outputTail(text: string, maxLines: number, maxChars: number): string {
  const lines = stripControlCharacters(text)
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
  const joined = lines.slice(-maxLines).join(" | ");
  if (joined.length <= maxChars) return joined;
  return maxChars <= 1 ? "…".slice(0, maxChars) : `…${joined.slice(joined.length - maxChars + 1)}`;
}

/**
 * The longest prefix of `bytes` that ends on a whole UTF-8 character: output cut at a byte cap
 * may end inside one, which would decode as a replacement character.
 */
export function wholeUtf8Prefix(bytes: Buffer): Buffer {
  const end = bytes.length;
  // Walk back over at most three continuation bytes (10xxxxxx) to the last sequence's lead byte.
  let lead = end - 1;
  while (lead >= 0 && lead > end - 4 && ((bytes[lead] ?? 0) & 0xc0) === 0x80) lead--;
  if (lead < 0) return bytes;
  const first = bytes[lead] ?? 0;
  const length = first < 0x80 ? 1 : first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
  return lead + length > end ? bytes.subarray(0, lead) : bytes;
}

/** `bytes` without the continuation bytes a cut at its start left of a character. */
export function wholeUtf8Suffix(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length && start < 3 && ((bytes[start] ?? 0) & 0xc0) === 0x80) start++;
  return start === 0 ? bytes : bytes.subarray(start);
}
