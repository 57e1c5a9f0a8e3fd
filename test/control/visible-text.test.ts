import { describe, expect, it } from "vitest";
import { DEFAULT_GATE_KEYWORDS } from "../../src/config/graph-schema.js";
import { DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import { compileVocabulary, parseControl } from "../../src/control/index.js";
import { compileGateVocabulary, parseGateAnswer } from "../../src/graph-run/gate.js";

/**
 * The parse table against GitHub's own rendering rules (the GFM spec, https://github.github.com/gfm/):
 * each row is a comment with the keyword `K` somewhere, and whether GitHub shows that keyword to a
 * reader as text of the comment. A keyword counts exactly where it is shown: every hidden form
 * moves nothing, every visible form still parses. Each row runs for a gate answer and a command.
 */

const rows: [what: string, body: string, shown: boolean][] = [
  // Visible text.
  ["a plain paragraph", "K", true],
  ["in a sentence", "Looks right. K, thanks", true],
  ["emphasis (§6.2)", "*K*", true],
  ["strong emphasis", "**K**", true],
  ["a heading", "## K", true],
  ["a list item", "- K", true],
  ["a task list item", "- [x] K", true],
  ["a table cell (GFM tables)", "| answer |\n| --- |\n| K |", true],
  ["a link's own text (shown; it counts)", "[K](https://example.com)", true],
  ["text after an HTML comment on the same line", "<!-- note --> K", true],
  ["text after a closed hidden element", "<div hidden>x</div>\n\nK", true],
  ["text after an image", "![diagram](d.png) K", true],
  ["an escaped `<!--`, which is text", "\\<!-- K", true],
  ["an HTML entity is text: `&lt;!--` shows as written", "&lt;!-- K", true],
  // Hidden: not shown as text of the comment.
  ["an HTML comment (§6.6 raw HTML)", "<!-- K -->", false],
  ["a link reference definition (§4.7: renders nothing)", "[//]: # (K)", false],
  ["a link reference definition, angle destination", "[note]: <K>", false],
  ["a link reference definition's title", '[x]: https://example.com "K"', false],
  ["image alt text (§6.4: an attribute, not text)", "![K](https://example.com/a.png)", false],
  ["a reference image's alt text", "![K][img]\n\n[img]: https://example.com/a.png", false],
  ["image alt text in raw HTML", '<img alt="K" src="a.png">', false],
  ["a link title (§6.3: the title attribute)", '[x](https://example.com "K")', false],
  ["a link destination", "[x](K)", false],
  ["a raw HTML block (§4.6)", "<div hidden>K</div>", false],
  ["markdown inside a raw HTML element", "<div hidden>\n\nK\n\n</div>", false],
  ["a collapsed details element", "<details>\n<summary>More</summary>\n\nK\n\n</details>", false],
  ["an open details element (fail-closed: any element hides)", "<details open>\n\nK\n\n</details>", false],
  ["inline HTML around the keyword", "see <span hidden>K</span>", false],
  ["an unclosed element hides the rest", "<div>\n\nK", false],
  ["a tag's attribute", '<a title="K">x</a>', false],
  ["strikethrough (GFM §6.5)", "~~K~~", false],
  ["single-tilde strikethrough (GFM)", "~K~", false],
  ["strikethrough spanning words", "~~well, K now~~", false],
  ["a block quote", "> K", false],
  ["a block quote's lazy continuation line", "> Reply with\nK", false],
  ["a code span", "`K`", false],
  ["a fenced code block", "```\nK\n```", false],
  ["an indented code block", "    K", false],
  ["a footnote definition's label (GFM footnotes)", "[^K]: note", false],
];

const gates = compileGateVocabulary({ ...DEFAULT_GATE_KEYWORDS });
const controls = compileVocabulary(DEFAULT_CONTROL_KEYWORDS);

describe("the parse table against GitHub's own rendering rules", () => {
  it.each(rows)("%s: %j is shown: %s", (_what, body, shown) => {
    const approval = parseGateAnswer(body.replaceAll("K", DEFAULT_GATE_KEYWORDS.approve), gates);
    expect(approval).toEqual(shown ? { kind: "answer", decision: "approved" } : { kind: "none" });
    const command = parseControl(body.replaceAll("K", DEFAULT_CONTROL_KEYWORDS.pause), controls);
    expect(command).toEqual(shown ? { kind: "command", command: "pause" } : { kind: "none" });
  });

  it("a hidden answer next to a visible one leaves only the visible one", () => {
    const body = `<details><summary>old</summary>\n\n${DEFAULT_GATE_KEYWORDS.requestChanges}\n\n</details>\n\n${DEFAULT_GATE_KEYWORDS.approve}`;
    expect(parseGateAnswer(body, gates)).toEqual({ kind: "answer", decision: "approved" });
  });
});
