/**
 * What the terminal view writes for one snapshot of the pane (pure, table-tested): home the
 * cursor, clear the screen, then the snapshot's lines. The daemon already strips every control
 * sequence but colours (docs/dashboard.md); the page keeps only colours (SGR, `ESC [ … m`) too,
 * so a snapshot can never make the renderer do anything but draw text.
 */

// eslint-disable-next-line no-control-regex -- the escape character is what is being matched
const ESCAPES = /\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[@-Z\\-_]?/g;
// eslint-disable-next-line no-control-regex -- C0 and C1 controls other than tab and escape are what is being matched
const CONTROLS = /[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f\x80-\x9f]/g;

// eslint-disable-next-line no-control-regex -- the escape character is what is being matched
const SGR = /^\x1b\[[0-9;:]*m$/;

/** The snapshot's text with every escape sequence but SGR removed, and every other control character but tab. */
export function onlyColours(text: string): string {
  return text
    .replace(ESCAPES, (sequence) => (SGR.test(sequence) ? sequence : ""))
    .split(/\r?\n/)
    .map((line) => line.replace(CONTROLS, ""))
    .join("\r\n");
}

/** The bytes written to the renderer for one snapshot: home, clear, reset colours, the lines (no line feed after the last: it would scroll). */
export function screenWrite(text: string): string {
  const body = onlyColours(text).replace(/(\r\n)+$/, "");
  return `\x1b[0m\x1b[H\x1b[2J${body}\x1b[0m`;
}
