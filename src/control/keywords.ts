import { GRAPH_NAME_MAX, GRAPH_NAME_PATTERN } from "../config/graph-schema.js";
import { CONTROL_COMMANDS } from "../config/schema.js";
import type { ControlCommand, ControlConfig } from "../config/schema.js";

/**
 * The control-keyword parser: the one place that decides whether a comment body is a command,
 * or an answer to a human gate of the process graph (graph/gate.ts reads gate keywords with the
 * same rules). Both ingress paths (webhook receiver and poller) reach it through the router, so
 * they cannot diverge. It only ever yields the keys of its vocabulary (the four command names, the
 * two gate answers) and a start's graph argument, which is a graph name by construction (rule 7);
 * no other text from the comment leaves it.
 *
 * Rules (the product's documented behaviour):
 *
 * 1. An absent or empty body is not a command.
 * 2. Matching is case-insensitive for ASCII letters only (`A`–`Z` against `a`–`z`). No other
 *    character is folded, so look-alikes such as `ſ` (U+017F) or the Kelvin sign (U+212A) never stand
 *    in for `s` or `k`. Every other character of a keyword, including spaces, `:`, `-` and regular-
 *    expression metacharacters, is matched literally: a keyword with an internal space matches that
 *    one space only.
 * 3. A keyword counts only as a whole token. The character before it must be the start of the text
 *    or of a line, whitespace, or one of `( [ { * _ ~ " ' “ ‘`; the character after it must be the end
 *    of the text or of a line, whitespace, or one of `. , ; ! ? ) ] } * _ ~ " ' ” ’`. Anything else
 *    against it (a letter, digit, `-`, `:`, `/`, `@`, `#`, a backtick, a `.` before it, a zero-width
 *    character such as U+200B–U+200D, U+2060 or U+FEFF) means it is not the keyword. Whitespace is
 *    space, tab, the line breaks (LF, CR, VT, FF, U+2028, U+2029) and the Unicode space separators
 *    (U+00A0, U+1680, U+2000–U+200A, U+202F, U+205F, U+3000). Lines end at LF, CRLF or CR.
 * 4. Quoted or hidden text is not a command, because it is not a visible act of the author's:
 *    - fenced code blocks (``` or ~~~, three or more, per CommonMark: a backtick fence's info string
 *      has no backtick, the closing fence uses the same character, is at least as long and carries
 *      nothing else; an unclosed fence runs to the end of the comment). A fence opened after list
 *      markers (`- `, `1. `) counts too, and ends where its list item does (at a non-blank line
 *      indented less than the fence);
 *    - indented code blocks: a line indented four or more columns that does not continue a
 *      paragraph (a heading, a setext underline or a thematic break ends the paragraph before it);
 *    - blockquote lines: a line whose first text, after indentation and list markers, is `>`, so a
 *      "quote reply" of an earlier command never issues it again — and the lines that continue a
 *      quote's paragraph without a `>` of their own (CommonMark's lazy continuation lines, shown
 *      inside the quote): every line after a quote line with text, up to a blank line, unless it
 *      starts a block that interrupts a paragraph (a list item, a heading, a thematic break, a
 *      fence, an HTML comment);
 *    - inline code spans (`like this`, closed by a backtick run of the same length within the
 *      paragraph; a backslash-escaped backtick opens nothing);
 *    - HTML comments (`<!-- … -->`), which the rendered thread does not show. An unclosed one runs
 *      to the end of the comment.
 *    A backslash-escaped character opens nothing (`\<!--` is text). Hidden text is replaced by a
 *    character that is neither whitespace nor punctuation, so a keyword written directly against a
 *    code span or an HTML comment is not a whole token either. This is a line scanner, not a full
 *    Markdown parser: where the two could disagree it errs towards hiding (a paragraph indented four
 *    columns inside a list item, an HTML comment wrapped around a fence), because a command that was
 *    missed can be issued again while a quoted one must never run.
 * 5. Where one configured keyword contains another (say `go` and `go now`), the longer match wins at
 *    that place.
 * 6. The same command any number of times is that command. Two or more different commands make the
 *    comment ambiguous: the caller executes nothing and forwards nothing.
 * 7. A start may choose its item's graph: the token after the start keyword, past spaces or tabs
 *    on the same line, is `graph=<name>` (the token runs to whitespace, less closing punctuation
 *    at its end; `<name>` matches GRAPH_NAME_PATTERN as written, at most GRAPH_NAME_MAX long).
 *    Anything else — a malformed name, the argument on the next line or in a code span — is no
 *    argument, and the start stands without one. Starts naming different graphs choose none.
 *
 * The parser runs in time linear in the body (a line scanner for blocks, a single pass for inline
 * code and comments, plain substring search for the keywords): no regular expression with nested
 * quantifiers ever sees comment text.
 */

/**
 * A set of keywords compiled once per config load (the router reads every comment with one): the
 * control commands, and the answers to a human gate of the process graph. Both are read by the
 * same rules; only the keys differ.
 */
export interface KeywordVocabulary<K extends string> {
  /** Each key's keyword as configured: what the CLI posts and what messages print. */
  readonly keywords: Readonly<Record<K, string>>;
  /** Each key's keyword with ASCII letters lowered, in the order the vocabulary was compiled with. */
  readonly needles: readonly { readonly key: K; readonly folded: string }[];
  /**
   * Finds any keyword in any case, without folding the body first: the cheap test that settles
   * the common comment, which names none. It may say yes where the rules say no (non-ASCII
   * letters fold too here), never the other way round.
   */
  readonly mentioned: RegExp;
}

export type ParsedKeywords<K extends string> =
  | { readonly kind: "none" }
  | { readonly kind: "keyword"; readonly key: K }
  | { readonly kind: "ambiguous"; readonly keys: readonly K[] }; // distinct keys, in the vocabulary's order

/** The configured control keywords, compiled. */
export type ControlVocabulary = KeywordVocabulary<ControlCommand>;

export type ParsedControl =
  | { readonly kind: "none" }
  /** `graph`: the graph a start chose (rule 7); only ever on a start, absent when it chose none. */
  | { readonly kind: "command"; readonly command: ControlCommand; readonly graph?: string }
  | { readonly kind: "ambiguous"; readonly commands: readonly ControlCommand[] }; // distinct commands, in CONTROL_COMMANDS order

const NONE = Object.freeze({ kind: "none" } as const);

/**
 * Compiles keywords, taken in `order` (which is also the order an ambiguous parse lists them in).
 * The config schema already guarantees each is non-empty, one line, trimmed and distinct; a
 * keyword that is blank or holds a line break, tab or NUL (which this parser uses to stand for
 * hidden text) is refused here too, loudly, rather than matching everywhere or nowhere. `what`
 * names the set in that message ("control", "gate").
 */
export function compileKeywordVocabulary<K extends string>(
  keywords: Readonly<Record<K, string>>,
  order: readonly K[],
  what: string,
): KeywordVocabulary<K> {
  const configured: Partial<Record<K, string>> = {};
  const needles: { readonly key: K; readonly folded: string }[] = [];
  for (const key of order) {
    const keyword = keywords[key].trim();
    if (keyword === "" || /[\t\n\r]/.test(keyword) || keyword.includes(HIDDEN)) {
      throw new TypeError(`the ${key} ${what} keyword must be one line of visible text, got ${JSON.stringify(keywords[key])}`);
    }
    configured[key] = keyword;
    needles.push(Object.freeze({ key, folded: foldAscii(keyword) }));
  }
  // Without the `u` flag, `i` never folds a non-ASCII letter into an ASCII one (`ſ` stays `ſ`).
  const mentioned = new RegExp(needles.map((needle) => needle.folded.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "i");
  return Object.freeze({
    keywords: Object.freeze(configured as Record<K, string>),
    needles: Object.freeze(needles),
    mentioned,
  });
}

/** Compiles the configured control keywords (see compileKeywordVocabulary). */
export function compileVocabulary(keywords: ControlConfig["keywords"]): ControlVocabulary {
  return compileKeywordVocabulary(keywords, CONTROL_COMMANDS, "control");
}

/** Reads a comment body for control keywords; see the module comment for the rules. */
export function parseControl(body: string | null | undefined, vocabulary: ControlVocabulary): ParsedControl {
  const scanned = scanKeywords(body, vocabulary);
  const parsed = parsedOf(scanned, vocabulary);
  switch (parsed.kind) {
    case "none":
      return NONE;
    case "keyword": {
      const graph = parsed.key === "start" && scanned !== undefined ? graphChosen(scanned) : undefined;
      return Object.freeze({ kind: "command", command: parsed.key, ...(graph !== undefined ? { graph } : {}) });
    }
    case "ambiguous":
      return Object.freeze({ kind: "ambiguous", commands: parsed.keys });
  }
}

/** Reads a comment body for a vocabulary's keywords; see the module comment for the rules. */
export function parseKeywords<K extends string>(body: string | null | undefined, vocabulary: KeywordVocabulary<K>): ParsedKeywords<K> {
  return parsedOf(scanKeywords(body, vocabulary), vocabulary);
}

/** The whole-token matches that count (rule 5 applied), in the visible text as written and folded (same length). */
interface Scanned<K extends string> {
  readonly visible: string;
  readonly folded: string;
  readonly matches: readonly Match<K>[];
}

/** Undefined when the body names no keyword anywhere (the common comment, settled cheaply). */
function scanKeywords<K extends string>(body: string | null | undefined, vocabulary: KeywordVocabulary<K>): Scanned<K> | undefined {
  if (body == null || body === "") return undefined;
  // Hiding text never creates a keyword, so a body without one anywhere is settled cheaply.
  if (!vocabulary.mentioned.test(body)) return undefined;
  const lowered = foldAscii(body);
  if (!vocabulary.needles.some((needle) => lowered.includes(needle.folded))) return undefined;

  // Hiding depends on no letter, so folding after it is folding before it, and rule 7 reads the argument as written.
  const visible = visibleText(body);
  const text = foldAscii(visible);
  const matches: Match<K>[] = [];
  for (const { key, folded: needle } of vocabulary.needles) {
    for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
      const end = at + needle.length;
      if (opensToken(text, at) && closesToken(text, end)) matches.push({ key, start: at, end });
    }
  }

  // Longest match first at each start; a match inside an earlier, longer one does not count.
  matches.sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: Match<K>[] = [];
  let reach = -1;
  for (const match of matches) {
    if (match.end <= reach) continue;
    reach = match.end;
    kept.push(match);
  }
  return { visible, folded: text, matches: kept };
}

function parsedOf<K extends string>(scanned: Scanned<K> | undefined, vocabulary: KeywordVocabulary<K>): ParsedKeywords<K> {
  if (scanned === undefined) return NONE;
  const found = new Set(scanned.matches.map((match) => match.key));
  const keys = vocabulary.needles.map((needle) => needle.key).filter((key) => found.has(key));
  const [only] = keys;
  if (only === undefined) return NONE;
  if (keys.length === 1) return Object.freeze({ kind: "keyword", key: only });
  return Object.freeze({ kind: "ambiguous", keys: Object.freeze(keys) });
}

// ---------------------------------------------------------------------------------------------
// A start's graph argument (rule 7).

const GRAPH_ARGUMENT = "graph=";
const GRAPH_NAME = new RegExp(GRAPH_NAME_PATTERN);
/** Closing punctuation allowed after the name (`graph=adhoc.`, `**…graph=adhoc**`), beyond which the token is no argument. */
const TRAILING_PUNCTUATION_MAX = 8;
const ARGUMENT_TOKEN_MAX = GRAPH_ARGUMENT.length + GRAPH_NAME_MAX + TRAILING_PUNCTUATION_MAX;

/** The one graph the body's starts name; undefined when none does, or they name different ones. */
function graphChosen(scanned: Scanned<ControlCommand>): string | undefined {
  const names = new Set<string>();
  for (const match of scanned.matches) {
    if (match.key !== "start") continue;
    const name = graphArgument(scanned, match.end);
    if (name !== undefined) names.add(name);
  }
  const [only] = names;
  return names.size === 1 ? only : undefined;
}

/** The name in the token after a keyword ending at `end`, if it is `graph=<name>`; bounded, so many starts stay linear. */
function graphArgument({ visible, folded }: Scanned<ControlCommand>, end: number): string | undefined {
  let at = end;
  while (at < visible.length && isSpaceOnLine(visible.charAt(at))) at++;
  if (at === end || !folded.startsWith(GRAPH_ARGUMENT, at)) return undefined;
  const from = at + GRAPH_ARGUMENT.length;
  let to = from;
  while (to < visible.length && !isWhitespace(visible.charAt(to))) {
    if (to - at >= ARGUMENT_TOKEN_MAX) return undefined;
    to++;
  }
  while (to > from && CLOSING_PUNCTUATION.has(visible.charAt(to - 1))) to--;
  const name = visible.slice(from, to);
  return name.length <= GRAPH_NAME_MAX && GRAPH_NAME.test(name) ? name : undefined;
}

interface Match<K extends string> {
  readonly key: K;
  readonly start: number;
  readonly end: number;
}

/** Stands for hidden text: neither whitespace nor punctuation, so nothing is a token against it. */
const HIDDEN = "\u0000";

/** Lowers `A`–`Z` only; every other character (and the length) is unchanged. */
function foldAscii(text: string): string {
  return text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

const OPENING_PUNCTUATION = new Set(["(", "[", "{", "*", "_", "~", '"', "'", "\u201C", "\u2018"]);
const CLOSING_PUNCTUATION = new Set([".", ",", ";", "!", "?", ")", "]", "}", "*", "_", "~", '"', "'", "\u201D", "\u2019"]);

function isWhitespace(char: string): boolean {
  const code = char.charCodeAt(0);
  return (
    code === 0x20 ||
    (code >= 0x09 && code <= 0x0d) ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000
  );
}

/** Whitespace that does not end the line (rule 3's whitespace less the line breaks). */
function isSpaceOnLine(char: string): boolean {
  const code = char.charCodeAt(0);
  return isWhitespace(char) && !(code >= 0x0a && code <= 0x0d) && code !== 0x2028 && code !== 0x2029;
}

function opensToken(text: string, start: number): boolean {
  if (start === 0) return true;
  const before = text.charAt(start - 1);
  return isWhitespace(before) || OPENING_PUNCTUATION.has(before);
}

function closesToken(text: string, end: number): boolean {
  if (end === text.length) return true;
  const after = text.charAt(end);
  return isWhitespace(after) || CLOSING_PUNCTUATION.has(after);
}

// ---------------------------------------------------------------------------------------------
// Hiding quoted text: a line scanner for the blocks, then one inline pass per paragraph.

interface OpenFence {
  readonly marker: string;
  readonly length: number;
  /** The column list-item content starts at when the fence opened in a list item, else 0. */
  readonly container: number;
}

interface LineStart {
  /** Columns of leading whitespace (a tab advances to the next multiple of four). */
  readonly indent: number;
  /** Index of the first character after the leading whitespace. */
  readonly first: number;
  /** Index of the first character after the leading whitespace and any list markers. */
  readonly content: number;
  /** Column of `content` when list markers were skipped, else 0. */
  readonly container: number;
}

/**
 * The text a reader sees as the author's own words, paragraphs separated by blank lines and hidden
 * runs replaced by HIDDEN.
 */
function visibleText(body: string): string {
  const paragraphs: string[] = [];
  let paragraph: string[] = [];
  let fence: OpenFence | null = null;
  let previousWasText = false;
  const endParagraph = (): void => {
    if (paragraph.length > 0) paragraphs.push(paragraph.join("\n"));
    paragraph = [];
    previousWasText = false;
  };

  // A quote's paragraph is open: a text line without `>` continues it (a lazy continuation line).
  let quoteParagraph = false;

  for (const line of body.split(/\r\n|\r|\n/)) {
    const blank = isBlank(line);
    if (fence !== null) {
      if (blank) continue;
      const start = lineStart(line);
      if (start.indent >= fence.container) {
        if (closesFence(line, start, fence)) fence = null;
        continue;
      }
      // Indented less than the list item the fence opened in: the item, and its fence, have ended.
      fence = null;
    }
    if (blank) {
      endParagraph();
      quoteParagraph = false;
      continue;
    }
    const start = lineStart(line);
    if (start.indent >= 4 && (quoteParagraph || !previousWasText)) {
      endParagraph(); // indented code, or (no block can start here) a lazy line of a quote
      continue;
    }
    if (line.charAt(start.content) === ">") {
      endParagraph(); // blockquote
      quoteParagraph = quoteHasText(line, start.content);
      continue;
    }
    const opened = openingFence(line, start);
    if (opened !== null) {
      endParagraph();
      quoteParagraph = false;
      fence = opened;
      continue;
    }
    if (quoteParagraph) {
      if (!interruptsParagraph(line, start)) continue; // a lazy continuation line: shown in the quote
      quoteParagraph = false;
    }
    if (isThematicBreak(line, start) || (previousWasText && isSetextUnderline(line, start))) {
      endParagraph(); // a leaf block of its own (no keyword fits in it), or the end of a heading
      continue;
    }
    if (start.indent < 4 && isAtxHeading(line, start.content)) {
      // One line, one block: nothing inline runs into or out of it, and no paragraph continues it.
      endParagraph();
      paragraph.push(line);
      endParagraph();
      continue;
    }
    paragraph.push(line);
    previousWasText = true;
  }
  endParagraph();

  const comment = { open: false };
  return paragraphs.map((text) => hideInline(text, comment)).join("\n\n");
}

/** Whether a quote line holds a paragraph's text after its `>` markers (not nothing, not a fence). */
function quoteHasText(line: string, index: number): boolean {
  let at = index;
  for (let char = line.charAt(at); char === ">" || char === " " || char === "\t"; char = line.charAt(at)) at++;
  if (at >= line.length) return false;
  const char = line.charAt(at);
  return !((char === "`" || char === "~") && runLength(line, at, char) >= 3);
}

/**
 * Whether a line starts a block that can interrupt a paragraph, so it is no lazy continuation of
 * a quote: a list item (a bullet, or an ordered item numbered 1) with text, a heading, a thematic
 * break, or an HTML comment (hidden on its own). Fences and quotes are recognised before. Any
 * other line continues the quote's paragraph, which errs towards hiding.
 */
function interruptsParagraph(line: string, start: LineStart): boolean {
  if ((start.indent < 4 && isAtxHeading(line, start.first)) || isThematicBreak(line, start)) return true;
  if (line.startsWith("<!--", start.first)) return true;
  const marker = listMarkerLength(line, start.first);
  if (marker === 0 || isBlank(line.slice(start.first + marker))) return false;
  const first = line.charAt(start.first);
  return first === "-" || first === "*" || first === "+" || line.slice(start.first, start.first + marker - 1) === "1";
}

/** `#` to `######` at `index`, then a space, a tab or the line end (the caller checks the indentation). */
function isAtxHeading(line: string, index: number): boolean {
  const hashes = runLength(line, index, "#");
  if (hashes < 1 || hashes > 6) return false;
  const next = line.charAt(index + hashes);
  return next === "" || next === " " || next === "\t";
}

/** Three or more of one of `-`, `*`, `_`, with only spaces and tabs besides, indented less than four columns. */
function isThematicBreak(line: string, start: LineStart): boolean {
  if (start.indent >= 4) return false;
  const char = line.charAt(start.first);
  if (char !== "-" && char !== "*" && char !== "_") return false;
  let count = 0;
  for (let i = start.first; i < line.length; i++) {
    const c = line.charAt(i);
    if (c === char) count++;
    else if (c !== " " && c !== "\t") return false;
  }
  return count >= 3;
}

/** A run of `=` or `-` alone (trailing spaces allowed), under a paragraph: it makes that paragraph a heading. */
function isSetextUnderline(line: string, start: LineStart): boolean {
  if (start.indent >= 4) return false;
  const char = line.charAt(start.first);
  if (char !== "=" && char !== "-") return false;
  return isBlank(line.slice(start.first + runLength(line, start.first, char)));
}

function isBlank(line: string): boolean {
  for (let i = 0; i < line.length; i++) {
    const char = line.charAt(i);
    if (char !== " " && char !== "\t") return false;
  }
  return true;
}

function lineStart(line: string): LineStart {
  let index = 0;
  let column = 0;
  const skipWhitespace = (): void => {
    for (; index < line.length; index++) {
      const char = line.charAt(index);
      if (char === " ") column += 1;
      else if (char === "\t") column += 4 - (column % 4);
      else break;
    }
  };
  skipWhitespace();
  const indent = column;
  const first = index;
  let inList = false;
  for (let marker = listMarkerLength(line, index); marker > 0; marker = listMarkerLength(line, index)) {
    index += marker;
    column += marker;
    inList = true;
    skipWhitespace();
  }
  return { indent, first, content: index, container: inList ? column : 0 };
}

/** Length of a list marker (`-`, `*`, `+`, `1.`, `1)`) at `index`, or 0; it must be followed by whitespace or the line end. */
function listMarkerLength(line: string, index: number): number {
  let end = index;
  const char = line.charAt(index);
  if (char === "-" || char === "*" || char === "+") {
    end = index + 1;
  } else {
    while (end < line.length && end - index < 9 && isDigit(line.charAt(end))) end++;
    if (end === index) return 0;
    const delimiter = line.charAt(end);
    if (delimiter !== "." && delimiter !== ")") return 0;
    end++;
  }
  const next = line.charAt(end);
  return next === "" || next === " " || next === "\t" ? end - index : 0;
}

function isDigit(char: string): boolean {
  return char >= "0" && char <= "9";
}

function runLength(text: string, index: number, char: string): number {
  let end = index;
  while (text.charAt(end) === char) end++;
  return end - index;
}

function openingFence(line: string, start: LineStart): OpenFence | null {
  const marker = line.charAt(start.content);
  if (marker !== "`" && marker !== "~") return null;
  const length = runLength(line, start.content, marker);
  if (length < 3) return null;
  // A backtick fence's info string holds no backtick (otherwise it is inline code).
  if (marker === "`" && line.includes("`", start.content + length)) return null;
  return { marker, length, container: start.container };
}

function closesFence(line: string, start: LineStart, fence: OpenFence): boolean {
  if (start.indent > fence.container + 3) return false;
  const length = runLength(line, start.first, fence.marker);
  return length >= fence.length && isBlank(line.slice(start.first + length));
}

/**
 * Hides inline code spans and HTML comments in one paragraph, left to right (whichever starts first
 * wins, as in CommonMark). `comment.open` carries an unclosed HTML comment into the next paragraph.
 */
function hideInline(text: string, comment: { open: boolean }): string {
  const out: string[] = [];
  let index = 0;
  if (comment.open) {
    const close = text.indexOf("-->");
    if (close < 0) return HIDDEN;
    comment.open = false;
    out.push(HIDDEN);
    index = close + 3;
  }
  let visibleFrom = index;
  const closers = new BacktickRuns(text);
  while (index < text.length) {
    const char = text.charAt(index);
    if (char === "\\" && isAsciiPunctuation(text.charCodeAt(index + 1))) {
      index += 2; // an escaped character opens nothing
    } else if (char === "`") {
      const length = runLength(text, index, "`");
      const close = closers.next(length, index + length);
      if (close < 0) {
        index += length; // no closing run of the same length: literal backticks
      } else {
        out.push(text.slice(visibleFrom, index), HIDDEN);
        index = close + length;
        visibleFrom = index;
      }
    } else if (char === "<" && text.startsWith("<!--", index)) {
      out.push(text.slice(visibleFrom, index), HIDDEN);
      const close = text.indexOf("-->", index + 2); // `<!-->` and `<!--->` are complete comments
      if (close < 0) {
        comment.open = true;
        return out.join("");
      }
      index = close + 3;
      visibleFrom = index;
    } else {
      index++;
    }
  }
  out.push(text.slice(visibleFrom));
  return out.join("");
}

function isAsciiPunctuation(code: number): boolean {
  return (code >= 0x21 && code <= 0x2f) || (code >= 0x3a && code <= 0x40) || (code >= 0x5b && code <= 0x60) || (code >= 0x7b && code <= 0x7e);
}

/**
 * The maximal backtick runs of a paragraph, by length, so the closer of each opening run is found
 * without rescanning: openers come left to right, so each length's cursor only moves forward.
 */
class BacktickRuns {
  private readonly starts = new Map<number, number[]>();
  private readonly cursors = new Map<number, number>();

  constructor(text: string) {
    for (let index = text.indexOf("`"); index >= 0; ) {
      const length = runLength(text, index, "`");
      const list = this.starts.get(length);
      if (list === undefined) this.starts.set(length, [index]);
      else list.push(index);
      index = text.indexOf("`", index + length);
    }
  }

  /** Start of the first run of exactly `length` backticks at or after `from`, or -1. */
  next(length: number, from: number): number {
    const list = this.starts.get(length);
    if (list === undefined) return -1;
    let cursor = this.cursors.get(length) ?? 0;
    while (cursor < list.length && (list[cursor] ?? Infinity) < from) cursor++;
    this.cursors.set(length, cursor);
    return list[cursor] ?? -1;
  }
}
