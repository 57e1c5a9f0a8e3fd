import { GRAPH_NAME_MAX, GRAPH_NAME_PATTERN } from "../config/graph-schema.js";
import { CONTROL_COMMANDS } from "../config/schema.js";
import type { ControlCommand, ControlConfig } from "../config/schema.js";
import { HIDDEN, visibleText } from "./visible-text.js";

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
 * 4. Only text a reader sees as the author's own counts: what GitHub renders as visible text, read
 *    by a Markdown parser (CommonMark with GitHub's extensions; see visible-text.ts). Not code
 *    blocks or code spans, block quotes (a "quote reply" of an earlier command never issues it
 *    again), HTML comments, link reference definitions, image alt text, a link's destination and
 *    title, footnote labels, struck-through text (`~~…~~`, `~…~`), and raw HTML — its tags and
 *    everything inside an element (`<div hidden>`, `<details>`, `<b>`), fail-closed: an element
 *    that is never closed hides the rest of the comment. A link's own
 *    text is visible and counts (`[the-loop:approve](…)`). Hidden text is replaced by a character
 *    that is neither whitespace nor punctuation, so a keyword written directly against a code span
 *    or an HTML tag is not a whole token either; the markup around visible text (`**`, `[`, `]`) is
 *    kept, so rule 3 reads it as written. Where the parser and a reader could disagree this errs
 *    towards hiding, because a command that was missed can be issued again while a hidden one must
 *    never run.
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
 * Reading runs in time linear in the body (markdown-it's parser, one pass over its raw HTML,
 * plain substring search for the keywords), and only for a body that names a keyword somewhere: no
 * regular expression with nested quantifiers ever sees comment text.
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
  { readonly kind: "none" } | { readonly kind: "keyword"; readonly key: K } | { readonly kind: "ambiguous"; readonly keys: readonly K[] }; // distinct keys, in the vocabulary's order

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
export function compileKeywordVocabulary<K extends string>(keywords: Readonly<Record<K, string>>, order: readonly K[], what: string): KeywordVocabulary<K> {
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
