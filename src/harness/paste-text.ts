/**
 * Anything a terminal, or the tty beneath it, may act on instead of showing: the C0 controls
 * but tab and line feed (carriage returns are matched with the line feed after them, so a CRLF
 * becomes one line end), DEL, the C1 controls, and unpaired surrogates (which have no UTF-8;
 * matched one by one because the `u` flag reads a proper pair as one code point above U+FFFF).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /\r\n?|[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]/gu;

/** Unicode's Control Pictures: U+2400 + n draws C0 control n, U+2421 draws DEL. */
const CONTROL_PICTURES = 0x2400;
const SYMBOL_FOR_DELETE = "\u2421";
const SYMBOL_FOR_ESCAPE = "\u241b";

/**
 * Text made safe to paste into a terminal: whatever a comment, a title or a hook put in it, the
 * pane gets characters to show and nothing to obey.
 *
 * A paste is only text while it stays inside its brackets. An `ESC[201~` in it ends the bracketed
 * paste early and everything after arrives as typed keys: a `\r!cmd\r` tail becomes a submitted
 * line (Claude Code runs `!` lines in a shell), `^C` interrupts the agent, and other sequences
 * reach the terminal as commands. So every control a terminal or tty could act on goes, and
 * nothing a paste needs is lost:
 *
 * - Tab and line feed stay; CRLF and a lone CR become a line feed, a line break inside the paste
 *   rather than an Enter, so a comment keeps its lines.
 * - C0 controls, ESC among them, become their Unicode Control Picture (`ESC[201~` → `␛[201~`,
 *   `^C` → `␃`); DEL becomes `␡`.
 * - C1 controls (U+0080–U+009F, which 8-bit terminals read as ESC plus a letter, U+009B as a
 *   CSI) become `␛` and that letter: the 8-bit CSI shows as the `␛[` it stands for.
 * - Unpaired surrogates, which have no encoding, become U+FFFD.
 *
 * They are escaped visibly rather than dropped so the agent, and a person reading the pane, can
 * see that the text held something and what it was: a dropped `ESC[201~` leaves a bare `[201~`
 * that reads like noise, or like a typo, while `␛[201~` says someone tried to end the paste.
 * Caret notation (`^[`) was the other choice, but text says `^[` on its own (a regex, `^[a-z]`),
 * so it would not tell escaped from written; the pictures are printable symbols that a genuine
 * text almost never holds and that no terminal acts on.
 *
 * Two properties follow from mapping each unsafe character on its own to printable ones. No ESC
 * or C1 control is ever left or made, so no paste marker can be rebuilt from what remains (as
 * removing `ESC[201~` from `ESC[20ESC[201~1~` would rebuild one). And the result is empty only
 * when the text was: a comment of nothing but controls still arrives as something to read.
 * Linear in the text's length; cleaning a cleaned text changes nothing.
 */
export function pasteText(text: string): string {
  return text.replace(UNSAFE, (unsafe) => {
    if (unsafe.startsWith("\r")) return "\n";
    const code = unsafe.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(CONTROL_PICTURES + code);
    if (code === 0x7f) return SYMBOL_FOR_DELETE;
    // A C1 control is the 8-bit form of ESC followed by the character 0x40 below it.
    if (code <= 0x9f) return SYMBOL_FOR_ESCAPE + String.fromCharCode(code - 0x40);
    return "\ufffd";
  });
}
