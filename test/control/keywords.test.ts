import { describe, expect, it } from "vitest";
import { DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import { compileVocabulary, parseControl } from "../../src/control/keywords.js";
import type { ParsedControl } from "../../src/control/keywords.js";

const defaults = compileVocabulary({ ...DEFAULT_CONTROL_KEYWORDS });

const START = "the-loop:start-execution";
const STOP = "the-loop:stop-execution";
const PAUSE = "the-loop:pause-execution";
const RESUME = "the-loop:resume-execution";

/** "none", a command name (with ` graph=<name>` when a start chose one), or "ambiguous:<commands in order>". */
function summary(parsed: ParsedControl): string {
  switch (parsed.kind) {
    case "none":
      return "none";
    case "command":
      return parsed.graph === undefined ? parsed.command : `${parsed.command} graph=${parsed.graph}`;
    case "ambiguous":
      return `ambiguous:${parsed.commands.join(",")}`;
  }
}

type Row = [name: string, body: string | null | undefined, expected: string];

describe("parseControl: default keywords", () => {
  const rows: Row[] = [
    // Nothing to read.
    ["null body", null, "none"],
    ["undefined body", undefined, "none"],
    ["empty body", "", "none"],
    ["whitespace only", " \n\t\r\n ", "none"],
    ["ordinary prose", "Looks good, please carry on with the execution.", "none"],

    // Whole tokens (spec 1.3 and 5.2 examples).
    ["alone", START, "start"],
    ["followed by a full stop", `${START}.`, "start"],
    ["bold", `**${START}**`, "start"],
    ["in parentheses", `(${START})`, "start"],
    ["upper case", START.toUpperCase(), "start"],
    ["mixed case", "The-Loop:Start-Execution", "start"],
    ["on its own line", `Ready when you are.\n${START}\nThanks!`, "start"],
    ["own line with CRLF endings", `Ready when you are.\r\n${START}\r\nThanks!`, "start"],
    ["own line with CR endings", `Ready when you are.\r${START}\rThanks!`, "start"],
    ["at the start of the text", `${START} please`, "start"],
    ["at the end of the text", `please ${START}`, "start"],
    ["at the end after CRLF", `please\r\n${START}`, "start"],
    ["italic with underscores", `_${START}_`, "start"],
    ["strikethrough (struck-through text is hidden)", `~~${START}~~`, "none"],
    ["double quotes", `"${START}"`, "start"],
    ["single quotes", `'${START}'`, "start"],
    ["curly double quotes", `\u201C${START}\u201D`, "start"],
    ["curly single quotes", `\u2018${START}\u2019`, "start"],
    ["square brackets", `[${START}]`, "start"],
    ["braces", `{${START}}`, "start"],
    ["followed by a comma", `${START}, please`, "start"],
    ["followed by a semicolon", `${START}; then wait`, "start"],
    ["followed by an exclamation mark", `${START}!`, "start"],
    ["followed by a question mark", `${START}?`, "start"],
    ["after a tab", `go:\t${START}`, "start"],
    ["between no-break spaces", `go\u00A0${START}\u00A0now`, "start"],
    ["after an ideographic space", `go\u3000${START}`, "start"],
    ["in a list item", `- ${START}`, "start"],
    ["in a numbered list item", `1. ${START}`, "start"],
    ["in a heading", `## ${START}`, "start"],
    ["as link text", `[${START}](https://example.com/docs)`, "start"],
    ["in a review body", `Reviewed the diff; the migration looks right.\n\n${START}\n\nThanks for the quick turnaround.`, "start"],
    ["stop alone", STOP, "stop"],
    ["pause alone", PAUSE, "pause"],
    ["resume alone", RESUME, "resume"],

    // Not whole tokens.
    ["letters on both sides", `x${START}x`, "none"],
    ["letter before", `x${START}`, "none"],
    ["letter after", `${START}x`, "none"],
    ["word run on", `${START}later`, "none"],
    ["colon after", `${START}:now`, "none"],
    ["hyphen after", `${START}-now`, "none"],
    ["hyphen before", `-${START}`, "none"],
    ["colon before", `:${START}`, "none"],
    ["full stop before", `.${START}`, "none"],
    ["digit before", `1${START}`, "none"],
    ["digit after", `${START}2`, "none"],
    ["mention sign before", `@${START}`, "none"],
    ["hash before", `#${START}`, "none"],
    ["at sign after", `${START}@example.com`, "none"],
    ["hash after", `${START}#1`, "none"],
    ["inside a URL path", `https://example.com/${START}`, "none"],
    ["slash after", `${START}/x`, "none"],
    ["slash before", `/${START}`, "none"],
    ["in a link URL", `[run it](https://example.com/${START})`, "none"],
    ["prefix of the keyword only", "the-loop:start-executio", "none"],
    ["keyword stem only", "the-loop:start", "none"],
    ["different separator", "the-loop start-execution", "none"],
    ["backslash-escaped colon", "the-loop\\:start-execution", "none"],
    ["only the start of a longer hyphenated word", `${START}-now-please`, "none"],

    // Zero-width characters inside or against the keyword.
    ...["\u200B", "\u200C", "\u200D", "\u2060", "\uFEFF"].flatMap((zw): Row[] => {
      const code = `U+${zw.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
      return [
        [`${code} inside`, `the-loop:start${zw}-execution`, "none"],
        [`${code} before`, `${zw}${START}`, "none"],
        [`${code} after`, `${START}${zw}`, "none"],
        [`${code} between a space and the keyword`, `go ${zw}${START} now`, "none"],
      ];
    }),

    // Look-alikes that only Unicode case folding would equate.
    ["long s (U+017F) for s", "the-loop:\u017Ftart-execution", "none"],
    ["long s in upper-case text", "THE-LOOP:\u017FTART-EXECUTION", "none"],
    ["dotless i (U+0131) for i", "the-loop:start-execut\u0131on", "none"],
    ["dotted capital I (U+0130) for I", "THE-LOOP:START-EXECUT\u0130ON", "none"],
    ["fullwidth letters", "\uFF54\uFF48\uFF45-loop:start-execution", "none"],

    // Inline code spans.
    ["in a code span", `\`${START}\``, "none"],
    ["in a double-backtick span", `\`\`${START}\`\``, "none"],
    ["in a span holding backticks", `\`\` \`${START}\` \`\``, "none"],
    ["in a code span mid-sentence", `Type \`${START}\` to start.`, "none"],
    ["in a code span across lines", `Type \`the command\n${START}\` later.`, "none"],
    ["after an unclosed backtick", `\` ${START}`, "start"],
    ["after a backtick run with no closer of its length", `\`\`x\` ${START}`, "start"],
    ["against an unclosed backtick", `\`${START}`, "none"],
    ["after escaped backticks", `\\\`not code\\\` ${START}`, "start"],
    ["code span does not cross a blank line", `\`open\n\n${START}\n\nclose\``, "start"],
    ["after a closed code span", `\`x\` ${START}`, "start"],
    ["against a code span", `${START}\`x\``, "none"],

    // Fenced code blocks.
    ["in a backtick fence", `Run:\n\`\`\`\n${START}\n\`\`\`\n`, "none"],
    ["in a tilde fence", `~~~\n${START}\n~~~`, "none"],
    ["in a fence with an info string", `\`\`\`yaml\nkeyword: ${START}\n\`\`\``, "none"],
    ["in an unterminated fence", `\`\`\`\n${START}`, "none"],
    ["in an unterminated fence, far down", `\`\`\`\nx\n\ny\n\n${START}`, "none"],
    ["in a fence with CRLF endings", `\`\`\`\r\n${START}\r\n\`\`\`\r\n`, "none"],
    ["in an indented fence", `   \`\`\`\n${START}\n   \`\`\``, "none"],
    ["shorter run does not close", `\`\`\`\`\n\`\`\`\n${START}\n\`\`\`\``, "none"],
    ["other fence character does not close", `\`\`\`\n~~~\n${START}\n\`\`\``, "none"],
    ["closing line with text does not close", `\`\`\`\n\`\`\` not yet\n${START}\n\`\`\``, "none"],
    ["indented four spaces does not close", `\`\`\`\n    \`\`\`\n${START}\n\`\`\``, "none"],
    ["after a closed fence", `\`\`\`\ncode\n\`\`\`\n${START}`, "start"],
    ["after a closed tilde fence with a longer closer", `~~~\ncode\n~~~~~\n${START}`, "start"],
    ["backticks in the info string make inline code, not a fence", `\`\`\` \`x\` \`\`\`\n${START}`, "start"],
    ["in a fence inside a list item", `- \`\`\`\n  ${START}\n  \`\`\``, "none"],
    ["in a fence inside a numbered list item", `1. \`\`\`\n   ${START}\n   \`\`\``, "none"],
    ["after a list item's fence ends with the item", `- \`\`\`\n${START}`, "start"],

    // Indented code blocks.
    ["in an indented code block", `Example:\n\n    ${START}`, "none"],
    ["indented at the start of the text", `    ${START}`, "none"],
    ["tab-indented code block", `Example:\n\n\t${START}`, "none"],
    ["indented line continuing a paragraph", `Ready now\n    ${START}`, "start"],
    ["indented after a heading (a heading is no paragraph)", `## Example\n    ${START}`, "none"],
    ["indented after a setext heading", `Example\n=======\n    ${START}`, "none"],
    ["indented after a thematic break", `text\n\n***\n    ${START}`, "none"],
    ["a code span does not run out of a heading", `# title \`x\n${START} \``, "start"],
    ["a line indented four columns is no heading: the code span runs on", `Ready \`now\n    # ${START} \``, "none"],

    // Blockquotes.
    ["in a blockquote", `> ${START}`, "none"],
    ["in a blockquote without a space", `>${START}`, "none"],
    ["in an indented blockquote", `   > ${START}`, "none"],
    ["in a nested blockquote", `> > ${START}`, "none"],
    ["in a blockquote inside a list item", `- > ${START}`, "none"],
    ["in a blockquote with CRLF endings", `> earlier\r\n> ${START}\r\n\r\nagreed`, "none"],
    ["a quote reply does not re-issue", `> ${START}\n\nThat was a while ago; not again.`, "none"],
    ["a quote reply followed by a new command", `> ${START}\n\n${STOP}`, "stop"],
    ["text after a quote", `> quoted\n\n${START}`, "start"],
    // A line right after a quote's paragraph continues it ("lazy continuation"): it renders inside the quote.
    ["a lazy continuation of a quote", `> Ready.\n${START}`, "none"],
    ["a lazy continuation two lines on", `> Ready.\nsure\n${START}`, "none"],
    ["a lazy continuation with CRLF endings", `> Ready.\r\n${START}\r\n\r\nNot yet, though.`, "none"],
    ["a lazy continuation of a list item in a quote", `> - Ready.\n${START}`, "none"],
    ["a lazy continuation after an indented lazy line", `> Ready.\n    more\n${START}`, "none"],
    ["a lazy continuation between quote lines", `> Ready.\n${START}\n> said alice`, "none"],
    ["a blank line ends the quote", `> Ready.\n\n${START}`, "start"],
    ["an empty quote line has no paragraph to continue", `>\n${START}`, "start"],
    ["a list item interrupts the quote", `> Ready?\n- ${START}`, "start"],
    ["a heading interrupts the quote", `> Ready?\n## ${START}`, "start"],
    ["an item numbered 2 cannot interrupt: it continues the quote", `> Ready?\n2. ${START}`, "none"],
    ["a fence interrupts the quote, and hides", `> Ready.\n\`\`\`\nx\n\n${START}\n\`\`\``, "none"],
    ["an HTML comment interrupts the quote, and hides", `> Ready.\n<!--\n\n${START}\n\n-->`, "none"],

    // HTML comments.
    ["in an HTML comment", `<!-- ${START} -->`, "none"],
    ["in a multi-line HTML comment", `<!--\n${START}\n-->`, "none"],
    ["in an HTML comment spanning paragraphs", `<!--\n\n${START}\n\n-->`, "none"],
    ["in an unclosed HTML comment", `text <!-- ${START}`, "none"],
    ["after an HTML comment", `<!-- note -->\n${START}`, "start"],
    ["after an HTML comment on the same line", `<!-- note --> ${START}`, "start"],
    ["after an HTML comment spanning paragraphs", `<!--\n\nnote\n\n-->\n${START}`, "start"],
    ["against an HTML comment", `${START}<!-- note -->`, "none"],
    ["after the empty comment <!-->", `<!--> ${START}`, "start"],
    ["after the empty comment <!--->", `<!---> ${START}`, "start"],
    ["a comment opener in code is code", `\`<!--\` ${START}`, "start"],
    ["a backtick in a comment opens no code span", `<!-- \` --> ${START} \``, "start"],
    ["an escaped comment opener is text", `\\<!-- ${START} -->`, "start"],
    ["an HTML comment hides a fence opener inside it", `<!-- \`\`\` -->\n${START}`, "start"],

    // Repeats and conflicts.
    ["the same keyword twice", `${START} ${START}`, "start"],
    ["the same keyword in two cases", `${START.toUpperCase()}\n\nand again: ${START}.`, "start"],
    ["start and stop", `${START}\n${STOP}`, "ambiguous:start,stop"],
    ["stop before start, reported in command order", `${STOP} then ${START}`, "ambiguous:start,stop"],
    ["pause and resume", `${PAUSE} ... ${RESUME}`, "ambiguous:pause,resume"],
    ["all four", `${RESUME} ${PAUSE} ${STOP} ${START}`, "ambiguous:start,stop,pause,resume"],
    ["repeats plus a conflict", `${START} ${START} ${STOP}`, "ambiguous:start,stop"],
    ["start in code, stop in text", `\`${START}\` no — ${STOP}`, "stop"],
    ["start in a fence, stop in text", `\`\`\`\n${START}\n\`\`\`\n${STOP}`, "stop"],
    ["start in a comment, pause in text", `<!-- ${START} -->\n${PAUSE}`, "pause"],
    ["start in a quote, resume in text", `> ${START}\n\n${RESUME}`, "resume"],
    ["start in a quote, resume continuing the quote", `> ${START}\n${RESUME}`, "none"],
    ["start malformed, stop whole", `x${START} ${STOP}`, "stop"],
  ];

  it.each(rows)("%s", (_name, body, expected) => {
    expect(summary(parseControl(body, defaults))).toBe(expected);
  });
});

describe("parseControl: a start's graph argument", () => {
  const rows: Row[] = [
    // The argument: the token right after the start keyword, on its line.
    ["the argument", `${START} graph=adhoc`, "start graph=adhoc"],
    ["a kebab name", `${START} graph=spec-review-2`, "start graph=spec-review-2"],
    ["after several spaces", `${START}   graph=adhoc`, "start graph=adhoc"],
    ["after a tab", `${START}\tgraph=adhoc`, "start graph=adhoc"],
    ["after a no-break space", `${START}\u00A0graph=adhoc`, "start graph=adhoc"],
    ["then more text", `${START} graph=adhoc please, it is small`, "start graph=adhoc"],
    ["then a full stop", `${START} graph=adhoc.`, "start graph=adhoc"],
    ["bold around both", `**${START} graph=adhoc**`, "start graph=adhoc"],
    ["in parentheses", `(${START} graph=adhoc)`, "start graph=adhoc"],
    ["the key in upper case", `${START} GRAPH=adhoc`, "start graph=adhoc"],
    ["an upper-case keyword", `${START.toUpperCase()} graph=adhoc`, "start graph=adhoc"],
    ["with CRLF endings", `Ready.\r\n${START} graph=adhoc\r\nThanks`, "start graph=adhoc"],
    ["in a list item", `- ${START} graph=adhoc`, "start graph=adhoc"],
    ["a repeated start without one", `${START} graph=adhoc\n\n${START}`, "start graph=adhoc"],
    ["a repeated start naming the same graph", `${START} graph=adhoc ${START} graph=adhoc`, "start graph=adhoc"],
    ["the longest name", `${START} graph=${"a".repeat(64)}`, `start graph=${"a".repeat(64)}`],

    // Malformed: the start stands, with no choice.
    ["a name in capitals", `${START} graph=Adhoc`, "start"],
    ["a name with a dot inside", `${START} graph=adhoc.v2`, "start"],
    ["a name with an underscore", `${START} graph=ad_hoc`, "start"],
    ["a name ending in a hyphen", `${START} graph=adhoc-`, "start"],
    ["a name starting with a digit", `${START} graph=2adhoc`, "start"],
    ["a doubled hyphen", `${START} graph=ad--hoc`, "start"],
    ["an empty name", `${START} graph=`, "start"],
    ["a name too long", `${START} graph=${"a".repeat(65)}`, "start"],
    ["a name with a slash", `${START} graph=../adhoc`, "start"],
    ["a space after the equals sign", `${START} graph= adhoc`, "start"],
    ["a colon for the equals sign", `${START} graph:adhoc`, "start"],
    ["another key", `${START} graphs=adhoc`, "start"],
    ["a quoted name", `${START} graph="adhoc"`, "start"],
    ["another token first", `${START} now graph=adhoc`, "start"],
    ["no space after the keyword", `${START}, graph=adhoc`, "start"],
    ["a name run on by a code span", `${START} graph=adhoc\`x\``, "start"],
    ["a name against an HTML comment", `${START} graph=adhoc<!-- x -->`, "start"],

    // Not on the keyword's line, or not visible.
    ["on the next line", `${START}\ngraph=adhoc`, "start"],
    ["on the next line after CRLF", `${START}\r\ngraph=adhoc`, "start"],
    ["in the next paragraph", `${START}\n\ngraph=adhoc`, "start"],
    ["after a line separator", `${START}\u2028graph=adhoc`, "start"],
    ["in a code span", `${START} \`graph=adhoc\``, "start"],
    ["in an HTML comment", `${START} <!-- graph=adhoc -->`, "start"],
    ["the whole start in a code span", `\`${START} graph=adhoc\``, "none"],
    ["the whole start in a quote", `> ${START} graph=adhoc`, "none"],
    ["the whole start in a fence", `\`\`\`\n${START} graph=adhoc\n\`\`\``, "none"],
    ["a quoted start with one, a new start without", `> ${START} graph=adhoc\n\n${START}`, "start"],

    // Only a start takes one; starts that disagree choose none.
    ["after a stop", `${STOP} graph=adhoc`, "stop"],
    ["after a pause", `${PAUSE} graph=adhoc`, "pause"],
    ["starts naming different graphs", `${START} graph=adhoc\n${START} graph=work-item`, "start"],
    ["a start with one and a stop", `${START} graph=adhoc\n${STOP}`, "ambiguous:start,stop"],
    ["the argument without a keyword", "graph=adhoc", "none"],
  ];

  it.each(rows)("%s", (_name, body, expected) => {
    expect(summary(parseControl(body, defaults))).toBe(expected);
  });

  it("reads the argument after a custom start keyword", () => {
    const custom = compileVocabulary({ start: "Go Now", stop: "halt", pause: "hold", resume: "carry on" });
    expect(parseControl("go now graph=adhoc", custom)).toEqual({ kind: "command", command: "start", graph: "adhoc" });
    expect(Object.isFrozen(parseControl("go now graph=adhoc", custom))).toBe(true);
  });
});

describe("parseControl: custom keywords", () => {
  const custom = compileVocabulary({
    start: "go+(now)",
    stop: "halt.*",
    pause: "[hold] $1",
    resume: "the-loop carry on",
  });

  const rows: Row[] = [
    ["a metacharacter keyword literally", "go+(now)", "start"],
    ["a metacharacter keyword, upper case", "GO+(NOW)", "start"],
    ["a metacharacter keyword followed by a full stop", "ok: go+(now).", "start"],
    ["not read as a regular expression (o+)", "goo(now)", "none"],
    ["not read as a regular expression (group)", "go+now", "none"],
    ["dot-star literally", "halt.*", "stop"],
    ["dot-star is not a wildcard", "halting everything", "none"],
    ["dot-star needs its own characters", "halt.x", "none"],
    ["brackets and dollar literally", "[hold] $1", "pause"],
    ["brackets are not a class", "h $1", "none"],
    ["an internal space", "the-loop carry on", "resume"],
    ["an internal space, any case", "The-Loop CARRY ON", "resume"],
    ["an internal space is one space", "the-loop  carry on", "none"],
    ["an internal space is not a tab", "the-loop\tcarry on", "none"],
    ["an internal space is not a line break", "the-loop\ncarry on", "none"],
    ["an internal space is not a no-break space", "the-loop\u00A0carry on", "none"],
    ["the default keywords mean nothing now", `${START} ${STOP}`, "none"],
    ["two custom commands", "go+(now) and halt.*", "ambiguous:start,stop"],
    ["a custom keyword in code", "`go+(now)` halt.*", "stop"],
  ];

  it.each(rows)("%s", (_name, body, expected) => {
    expect(summary(parseControl(body, custom))).toBe(expected);
  });

  it("does not let the Kelvin sign stand for k, or the long s for s", () => {
    const vocabulary = compileVocabulary({ start: "kick-off", stop: "stand-down", pause: "pause-it", resume: "resume-it" });
    expect(summary(parseControl("KICK-OFF", vocabulary))).toBe("start");
    expect(summary(parseControl("\u212Aick-off", vocabulary))).toBe("none");
    expect(summary(parseControl("\u212AICK-OFF", vocabulary))).toBe("none");
    expect(summary(parseControl("\u017Ftand-down", vocabulary))).toBe("none");
    expect(summary(parseControl("STAND-DOWN", vocabulary))).toBe("stop");
  });

  it("matches non-ASCII keyword characters exactly", () => {
    const vocabulary = compileVocabulary({ start: "démarrer", stop: "arrêter", pause: "pause-it", resume: "resume-it" });
    expect(summary(parseControl("DéMARRER", vocabulary))).toBe("start");
    expect(summary(parseControl("DÉMARRER", vocabulary))).toBe("none");
    expect(summary(parseControl("arrêter.", vocabulary))).toBe("stop");
  });

  it("lets the longer keyword win where one contains another", () => {
    const vocabulary = compileVocabulary({ start: "ship it", stop: "ship it not", pause: "hold it", resume: "go on" });
    expect(summary(parseControl("ship it", vocabulary))).toBe("start");
    expect(summary(parseControl("ship it not", vocabulary))).toBe("stop");
    expect(summary(parseControl("Ship it not!", vocabulary))).toBe("stop");
    expect(summary(parseControl("ship it, or ship it not", vocabulary))).toBe("ambiguous:start,stop");
  });
});

describe("compileVocabulary", () => {
  it("keeps each command's keyword as configured, for callers to print", () => {
    expect(defaults.keywords).toEqual(DEFAULT_CONTROL_KEYWORDS);
    const custom = compileVocabulary({ start: "Go Now", stop: "halt", pause: "hold", resume: "carry on" });
    expect(custom.keywords.start).toBe("Go Now");
    expect(parseControl("go now", custom)).toEqual({ kind: "command", command: "start" });
  });

  it("returns frozen results", () => {
    expect(Object.isFrozen(defaults)).toBe(true);
    expect(Object.isFrozen(defaults.keywords)).toBe(true);
    const ambiguous = parseControl(`${START} ${STOP}`, defaults);
    expect(ambiguous).toEqual({ kind: "ambiguous", commands: ["start", "stop"] });
    expect(Object.isFrozen(ambiguous)).toBe(true);
  });

  it.each([
    ["empty", ""],
    ["blank", "   "],
    ["holding a line break", "go\nnow"],
    ["holding a tab", "go\tnow"],
    ["holding NUL", "go\u0000now"],
  ])("refuses a keyword %s", (_name, keyword) => {
    expect(() => compileVocabulary({ ...DEFAULT_CONTROL_KEYWORDS, pause: keyword })).toThrow(/pause control keyword/);
  });
});

describe("parseControl: linear time", () => {
  const KB100 = 100_000;
  const cases: [name: string, body: string, expected: string][] = [
    [
      "a 100 KB ordinary comment ending in a keyword",
      `${"Some ordinary prose, with *emphasis* and a [link](https://x.y). ".repeat(1_600)}\n\n${START}`,
      "start",
    ],
    ["100 KB of a near-miss keyword", "the-loop:start-executio".repeat(Math.ceil(KB100 / 23)), "none"],
    ["100 KB of a near-miss keyword, then the keyword", `${"the-loop:start-executio".repeat(Math.ceil(KB100 / 23))} ${START}`, "start"],
    ["100 KB of keywords glued by hyphens", `${START}-`.repeat(Math.ceil(KB100 / 25)), "none"],
    ["100 KB of repeated keywords", `${START} `.repeat(Math.ceil(KB100 / 25)), "start"],
    ["50k backticks mid-line", `x ${"`".repeat(50_000)} ${START}`, "start"],
    ["50k backticks opening a fence", `${"`".repeat(50_000)} ${START}`, "none"],
    ["50k paired backticks", `${"` ".repeat(50_000)}${START}`, "start"],
    ["backtick runs of every length, none closed", `${Array.from({ length: 440 }, (_, i) => "`".repeat(i + 1)).join("x")} ${START}`, "start"],
    ["50k escaped backticks", `${"\\`".repeat(50_000)} ${START}`, "start"],
    ["50k unclosed comment openers", `${"<!--".repeat(50_000)}\n${START}`, "none"],
    ["50k comment openers on separate paragraphs", `${"<!--\n\n".repeat(50_000)}${START}`, "none"],
    ["20k unclosed fences", `${"```js\n".repeat(20_000)}${START}`, "none"],
    ["20k alternating fences", `${"~~~~ x\n```\n".repeat(10_000)}${START}`, "none"],
    ["20k fences in list items", `${"- ```\nx\n".repeat(20_000)}${START}`, "start"],
    // Past 100 levels of nesting the parser reads no further: the rest is hidden.
    ["a fence behind 50k list markers, ended by an unindented line", `${"- ".repeat(50_000)}\`\`\`\n${START}`, "none"],
    ["50k blockquote lines", `${"> x\n".repeat(50_000)}\n${START}`, "start"],
    ["50k blockquote lines, the keyword continuing the last", `${"> x\n".repeat(50_000)}${START}`, "none"],
    ["50k lazy lines", `> x\n${"y\n".repeat(50_000)}${START}`, "none"],
    ["50k headings over indented lines", `${"# x\n    y\n".repeat(25_000)}\n${START}`, "start"],
    ["50k indented lines", `${"\n    x".repeat(50_000)}\n\n${START}`, "start"],
    ["100 KB of line breaks", `${"\r\n".repeat(50_000)}${START}`, "start"],
    ["100 KB of starts, each with an argument", `${START} graph=adhoc `.repeat(Math.ceil(KB100 / 37)), "start graph=adhoc"],
    ["100 KB of starts against one long token", `${START} (${`${START})(`.repeat(Math.ceil(KB100 / 26))}`, "start"],
    ["a start before 100 KB of spaces and an argument", `${START}${" ".repeat(KB100)}graph=adhoc`, "start graph=adhoc"],
    ["a start before a 100 KB argument", `${START} graph=${"a".repeat(KB100)}`, "start"],
  ];

  // CPU time rather than wall-clock, so a busy machine does not fail the test; catastrophic
  // backtracking or a quadratic scan would take seconds to minutes here, linear parsing milliseconds.
  it.each(cases)("%s", (_name, body, expected) => {
    const began = process.cpuUsage();
    const parsed = parseControl(body, defaults);
    const spent = process.cpuUsage(began);
    expect(summary(parsed)).toBe(expected);
    expect((spent.user + spent.system) / 1_000).toBeLessThan(1_000);
  });
});
