import MarkdownIt from "markdown-it";
import type { Token } from "markdown-it";

/**
 * What of a comment a reader sees as the author's own words when GitHub renders it, as text the
 * keyword rules (keywords.ts) read: blocks on lines of their own, hidden runs replaced by HIDDEN,
 * and the markup around visible text kept (`**` of strong text, `[` `]` of a link's text), so a
 * keyword against it is still a whole token.
 *
 * The body is parsed by markdown-it (CommonMark, with GitHub's tables and strikethrough; raw HTML
 * recognised as HTML, never rendered), and only the tokens that render as text are kept: text,
 * emphasis, a link's own text, headings, lists, table cells and line breaks. Everything else is
 * hidden, and an unknown token is hidden too. In particular, hidden:
 *
 * - code: fenced and indented code blocks, code spans;
 * - block quotes, with their lazy continuation lines (a quote reply never issues a command again);
 * - link reference definitions (`[//]: # (…)` renders nothing; a GFM footnote definition,
 *   `[^note]: …`, is read as one too), images with their alt text, a link's destination and title;
 * - struck-through text: `~~…~~`, and GFM's single-tilde `~…~`, which markdown-it leaves as text:
 *   between two lone `~` of one paragraph everything is hidden;
 * - raw HTML, inline or as a block, comments included: the tags themselves, and everything from an
 *   element's opening tag to its matching closing tag (`<div hidden>…</div>`, `<details>…</details>`,
 *   `<b>…</b>`), markdown between them too. This is fail-closed: an element is hidden whatever its
 *   attributes say (`<details open>` too), and one that is never closed hides the rest of the body.
 *
 * Anything a reader does see but this hides (a `<br>` against a keyword, a keyword in `<b>`) costs a
 * command that can be written again; anything hidden that counted would decide unseen. markdown-it
 * parses in linear time and stops nesting at 100 levels (deeper blocks are dropped: hidden).
 */
export function visibleText(body: string): string {
  const out = new VisibleOutput();
  const tokens = parser().parse(body, {});
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index] as Token;
    switch (token.type) {
      case "inline":
        inlineText(token.children ?? [], out);
        out.line();
        break;
      case "blockquote_open":
        index = closingIndex(tokens, index);
        // markdown-it lets `2. …` right under a quote's paragraph start a list; CommonMark (and GitHub) keep it in the quote.
        if (continuesQuote(tokens, index)) index = closingIndex(tokens, index + 1);
        out.hidden();
        out.line();
        break;
      case "html_block":
        out.html(token.content);
        out.line();
        break;
      case "code_block":
      case "fence":
        out.hidden();
        out.line();
        break;
      default:
        // Containers (paragraphs, headings, lists, tables) hold their text in `inline` tokens; a rule has none.
        if (token.nesting === 0 && token.type !== "hr") out.hidden();
        out.line();
    }
  }
  return out.result();
}

/** Stands for hidden text: neither whitespace nor punctuation, so no keyword is a token against it. */
export const HIDDEN = "\u0000";

let shared: MarkdownIt | undefined;

/** CommonMark plus GitHub's tables and `~~strikethrough~~` (markdown-it's default preset), with raw HTML parsed as HTML. */
function parser(): MarkdownIt {
  // Without text_join an escaped character stays a token of its own, so `\<!--` is no comment opener below.
  shared ??= new MarkdownIt("default", { html: true, linkify: false, typographer: false }).disable("text_join");
  return shared;
}

/** The visible text of one paragraph's (heading's, cell's) inline tokens. */
function inlineText(children: readonly Token[], out: VisibleOutput): void {
  const start = out.mark();
  for (let index = 0; index < children.length; index++) {
    const token = children[index] as Token;
    switch (token.type) {
      case "text":
        out.text(token.content);
        break;
      case "text_special":
        out.visible(token.content); // an escaped character or an entity, as shown
        break;
      case "softbreak":
      case "hardbreak":
        out.visible("\n");
        break;
      case "em_open":
      case "em_close":
      case "strong_open":
      case "strong_close":
        out.visible(token.markup);
        break;
      case "link_open":
        // An autolink shows its address, which is its text; a link shows its text, never its destination or title.
        if (token.markup !== "autolink" && token.markup !== "linkify") out.visible("[");
        break;
      case "link_close":
        if (token.markup !== "autolink" && token.markup !== "linkify") {
          out.visible("]");
          out.hidden();
        }
        break;
      case "s_open":
        index = closingIndex(children, index);
        out.hidden();
        break;
      case "html_inline":
        out.html(token.content);
        break;
      default:
        // code_inline, image (its alt text is its children), and anything unknown.
        out.hidden();
    }
  }
  out.hideSingleTildeSpans(start);
}

/**
 * Whether the token after a quote's close at `index` is an ordered list that does not start at 1,
 * on the very next line after a paragraph: such a list cannot interrupt a paragraph, so its lines
 * are lazy continuation lines of the quote.
 */
function continuesQuote(tokens: readonly Token[], index: number): boolean {
  const list = tokens[index + 1];
  const quote = tokens[index];
  const last = tokens[index - 1];
  if (list?.type !== "ordered_list_open" || quote === undefined || last?.type !== "paragraph_close") return false;
  const start = list.attrGet("start");
  const opening = tokens.slice(0, index).findLast((token) => token.type === "blockquote_open" && token.level === quote.level);
  return start !== null && start !== "1" && opening?.map?.[1] === list.map?.[0];
}

/** The index of the token closing the one opened at `index` (same type family, same level). */
function closingIndex(tokens: readonly Token[], index: number): number {
  const open = tokens[index] as Token;
  let depth = 0;
  for (let at = index; at < tokens.length; at++) {
    const token = tokens[at] as Token;
    if (token.tag !== open.tag) continue;
    depth += token.nesting;
    if (depth === 0) return at;
  }
  return tokens.length - 1;
}

/** Elements with no content and no closing tag: their tag hides nothing after it. */
const VOID_ELEMENTS: ReadonlySet<string> = new Set([
  "area",
  "base",
  "br",
  "col",
  "embed",
  "hr",
  "img",
  "input",
  "keygen",
  "link",
  "meta",
  "param",
  "source",
  "track",
  "wbr",
]);

/**
 * The visible text being built. While a raw HTML element is open (counted by name, across the
 * body's HTML tokens in order: a `<div>` block, markdown, then a `</div>` block) nothing is visible.
 */
class VisibleOutput {
  private readonly parts: string[] = [];
  private readonly open = new Map<string, number>();
  private depth = 0;
  /** Everything from here on is hidden (an unclosed comment or tag). */
  private rest = false;

  visible(text: string): void {
    if (this.depth > 0 || this.rest) this.hidden();
    else this.parts.push(text);
  }

  /**
   * Text as markdown-it read it. A `<!--` in it is one no `-->` closes in its paragraph, which
   * GitHub shows as written; it hides the rest of the body anyway, as the-loop always has.
   */
  text(text: string): void {
    const opener = text.indexOf("<!--");
    if (opener < 0) {
      this.visible(text);
      return;
    }
    this.visible(text.slice(0, opener));
    this.hidden();
    this.rest = true;
  }

  hidden(): void {
    if (this.parts[this.parts.length - 1] !== HIDDEN) this.parts.push(HIDDEN);
  }

  /** Ends a block: what follows starts a line of its own. */
  line(): void {
    if (this.parts.length > 0 && this.parts[this.parts.length - 1] !== "\n") this.parts.push("\n");
  }

  /**
   * Raw HTML: its tags and comments are hidden, and an element hides everything it holds; text
   * between elements shows (`<!-- note --> go`, `</div> go`).
   */
  html(content: string): void {
    for (const segment of htmlSegments(content)) {
      if (segment.kind === "text") {
        this.visible(content.slice(segment.start, segment.end));
        continue;
      }
      this.hidden();
      if (segment.kind === "unterminated") {
        this.rest = true;
      } else if (segment.kind === "close") {
        const count = this.open.get(segment.name) ?? 0;
        if (count > 0) {
          this.open.set(segment.name, count - 1);
          this.depth--;
        }
      } else if (segment.kind === "open" && !VOID_ELEMENTS.has(segment.name)) {
        this.open.set(segment.name, (this.open.get(segment.name) ?? 0) + 1);
        this.depth++;
      }
    }
  }

  mark(): number {
    return this.parts.length;
  }

  /**
   * GFM strikes through `~like this~` as it does `~~this~~`; markdown-it leaves the single tilde
   * as text. From `start`, everything from a lone `~` to the next lone `~` becomes HIDDEN.
   */
  hideSingleTildeSpans(start: number): void {
    const text = this.parts.slice(start).join("");
    if (!text.includes("~")) return;
    const out: string[] = [];
    let from = 0;
    let opener = -1;
    for (let at = text.indexOf("~"); at >= 0;) {
      let end = at;
      while (text.charAt(end) === "~") end++;
      if (end - at === 1) {
        if (opener < 0) {
          opener = at;
        } else {
          out.push(text.slice(from, opener), HIDDEN);
          from = end;
          opener = -1;
        }
      }
      at = text.indexOf("~", end);
    }
    if (from === 0) return;
    out.push(text.slice(from));
    this.parts.splice(start, this.parts.length - start, out.join(""));
  }

  result(): string {
    return this.parts.join("");
  }
}

type HtmlSegment =
  | { readonly kind: "text"; readonly start: number; readonly end: number }
  | { readonly kind: "open" | "close"; readonly name: string }
  /** A comment, a declaration (`<!…>`) or a processing instruction (`<?…>`). */
  | { readonly kind: "comment" }
  /** A tag or comment no `>` (outside quotes) or `-->` ends: it hides the rest of the body. */
  | { readonly kind: "unterminated" };

/** Raw HTML cut into text, tags and comments, in one pass. */
function* htmlSegments(html: string): Generator<HtmlSegment> {
  let at = 0;
  let textFrom = 0;
  while (at < html.length) {
    const lt = html.indexOf("<", at);
    if (lt < 0) break;
    const next = html.charAt(lt + 1);
    const closing = next === "/";
    const nameStart = lt + (closing ? 2 : 1);
    let nameEnd = nameStart;
    while (nameEnd < html.length && isTagNameChar(html.charCodeAt(nameEnd), nameEnd === nameStart)) nameEnd++;
    const comment = html.startsWith("<!--", lt);
    if (!comment && next !== "!" && next !== "?" && nameEnd === nameStart) {
      at = lt + 1; // a `<` that opens nothing is text
      continue;
    }
    if (lt > textFrom) yield { kind: "text", start: textFrom, end: lt };
    // `<!-->` and `<!--->` are complete (empty) comments.
    const end = comment ? html.indexOf("-->", lt + 2) : tagEnd(html, nameEnd);
    if (end < 0) {
      yield { kind: "unterminated" };
      return;
    }
    if (comment) {
      at = end + 3;
      yield { kind: "comment" };
    } else {
      at = end + 1;
      if (nameEnd === nameStart) yield { kind: "comment" };
      else yield { kind: closing ? "close" : "open", name: html.slice(nameStart, nameEnd).toLowerCase() };
    }
    textFrom = at;
  }
  if (textFrom < html.length) yield { kind: "text", start: textFrom, end: html.length };
}

/** The index of the `>` that ends a tag, outside quoted attribute values; -1 when none does. */
function tagEnd(html: string, from: number): number {
  let quote = "";
  for (let at = from; at < html.length; at++) {
    const char = html.charAt(at);
    if (quote !== "") {
      if (char === quote) quote = "";
    } else if (char === '"' || char === "'") {
      quote = char;
    } else if (char === ">") {
      return at;
    }
  }
  return -1;
}

function isTagNameChar(code: number, first: boolean): boolean {
  const letter = (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
  return letter || (!first && ((code >= 0x30 && code <= 0x39) || code === 0x2d));
}
