import { describe, expect, it } from "vitest";
import { graphMermaid, mermaidId, mermaidText } from "../../src/graph/mermaid.js";
import { loadBuiltinGraphs } from "../../src/graph/registry.js";
import type { Graph, GraphNode } from "../../src/graph/types.js";

const node = (id: string, extra: Partial<GraphNode> = {}): GraphNode => ({
  id,
  actor: "agent",
  description: "",
  produces: [],
  checks: [],
  maxAttempts: 3,
  terminal: false,
  points: [],
  ...extra,
});

function graphOf(nodes: readonly GraphNode[], edges: Graph["edges"]): Graph {
  return { name: "g", source: "built-in", start: nodes[0]?.id ?? "", nodes: new Map(nodes.map((n) => [n.id, n])), edges };
}

describe("graphMermaid", () => {
  it("draws the adhoc graph as a flowchart a GitHub comment renders", async () => {
    const adhoc = (await loadBuiltinGraphs()).get("adhoc");
    if (!adhoc) throw new Error("adhoc did not load");
    expect(graphMermaid(adhoc)).toBe(
      [
        "flowchart TD",
        '  graph_start(("start")) --> n_work',
        '  n_work["work<br/>loop:work"]',
        '  n_review{{"review<br/>loop:review"}}',
        '  n_complete(["complete<br/>loop:complete"])',
        "  n_work -->|pass| n_review",
        "  n_review -->|approved| n_complete",
        "  n_review -.->|changes-requested| n_work",
      ].join("\n"),
    );
  });

  // One row per rule: the node or edge → the line drawn for it.
  it.each([
    { what: "an agent node is a box", node: node("write"), line: '  n_write["write"]' },
    { what: "a human node is a hexagon", node: node("sign-off", { actor: "human" }), line: '  n_sign_off{{"sign-off"}}' },
    { what: "a terminal node is rounded", node: node("end", { terminal: true }), line: '  n_end(["end"])' },
    { what: "a phase is shown as its label", node: node("a", { phase: "design" }), line: '  n_a["a<br/>loop:design"]' },
  ])("$what", ({ node: drawn, line }) => {
    expect(graphMermaid(graphOf([drawn], [])).split("\n")).toContain(line);
  });

  it.each([
    ["pass", "  n_a -->|pass| n_b"],
    ["approved", "  n_a -->|approved| n_b"],
    ["fail", "  n_a -.->|fail| n_b"],
    ["changes-requested", "  n_a -.->|changes-requested| n_b"],
  ] as const)("labels an edge on %s, dotted when it goes back", (on, line) => {
    expect(graphMermaid(graphOf([node("a"), node("b")], [{ from: "a", to: "b", on }])).split("\n")).toContain(line);
  });

  it.each([
    ["end", "n_end"],
    ["final-review", "n_final_review"],
    ["a-b-c", "n_a_b_c"],
  ])("gives node %s the id %s: never a Mermaid keyword, no '-'", (id, expected) => {
    expect(mermaidId(id)).toBe(expected);
  });

  it("keeps a label's text from ending the label or adding markup", () => {
    expect(mermaidText('say "hi" <b>&</b>\nnext')).toBe("say #quot;hi#quot; #lt;b#gt;#amp;#lt;/b#gt; next");
  });
});
