import { describe, expect, it } from "vitest";
import { layersOf, layoutGraph } from "../../src/dashboard/page/graph-layout.js";
import {
  actionBody,
  applicableActions,
  budgetBar,
  byColumn,
  eventDetails,
  formatAge,
  parseRoute,
  safeHref,
  shownComment,
  startedAt,
} from "../../src/dashboard/page/model.js";
import type { Item, Me } from "../../src/dashboard/page/model.js";
import { onlyColours, screenWrite } from "../../src/dashboard/page/screen.js";

const AT = "2026-01-01T00:00:00.000Z";
const ALL = ["start", "stop", "pause", "resume", "approve", "request-changes", "answer", "close"];
const me: Me = { operator: "alice", readOnly: false, actions: ALL };

function row(more: Partial<Item> = {}): Item {
  return {
    ref: "local:demo#1",
    title: null,
    url: null,
    column: "working",
    session: { status: "active", harness: "claude", tmuxTarget: "loop-x", createdAt: AT, lastEventAt: AT, closeReason: null, question: null },
    graph: null,
    control: null,
    queue: null,
    budget: null,
    lastActivity: AT,
    ...more,
  };
}

const session = (status: string, question: { text: string; askedAt: string } | null = null): Item["session"] => ({
  status,
  harness: "claude",
  tmuxTarget: "loop-x",
  createdAt: AT,
  lastEventAt: AT,
  closeReason: null,
  question,
});
const graph = (status: string, node = "review"): Item["graph"] => ({ name: "spec-review", node, phase: null, status, generation: 1, updatedAt: AT });

describe("the actions that apply now", () => {
  it.each([
    ["a running session", row(), ["pause", "stop", "close"]],
    ["a paused session", row({ session: session("paused") }), ["resume", "stop", "close"]],
    ["a session at a gate", row({ graph: graph("waiting") }), ["approve", "request-changes", "pause", "stop", "close"]],
    ["a question", row({ session: session("active", { text: "which?", askedAt: AT }) }), ["answer", "pause", "stop", "close"]],
    ["no session", row({ session: null }), ["start"]],
    ["a closed session", row({ session: session("closed") }), ["start"]],
    ["a failed start", row({ session: session("failed") }), ["start"]],
    ["a queued start", row({ session: null, queue: { position: 2, queuedAt: AT, harness: "claude" } }), ["stop"]],
    ["a gate with no session", row({ session: null, graph: graph("waiting") }), ["approve", "request-changes", "start"]],
    ["a run not at a gate", row({ graph: graph("running", "write") }), ["pause", "stop", "close"]],
  ])("%s", (_name, item, expected) => {
    expect(applicableActions(item, me)).toEqual(expected);
  });

  it("offers none read-only, none before the facts are read, and only those /api/v1/me allows", () => {
    expect(applicableActions(row({ graph: graph("waiting") }), { operator: null, readOnly: true, actions: [] })).toEqual([]);
    expect(applicableActions(undefined, me)).toEqual([]);
    expect(applicableActions(row(), undefined)).toEqual([]);
    expect(applicableActions(row({ graph: graph("waiting") }), { ...me, actions: ["approve"] })).toEqual(["approve"]);
  });

  it("posts a reason with a gate answer only when one is written, and an answer's text trimmed", () => {
    expect(actionBody("approve", "  ")).toEqual({});
    expect(actionBody("approve", " reads well ")).toEqual({ reason: "reads well" });
    expect(actionBody("request-changes", "cover E401")).toEqual({ reason: "cover E401" });
    expect(actionBody("answer", " E401 only\n")).toEqual({ text: "E401 only" });
    expect(actionBody("stop", "ignored")).toEqual({});
  });
});

describe("the board's cards", () => {
  it("puts each row in its column, in the API's order, and filters on ref, title, node and agent", () => {
    const rows = [
      row({ ref: "local:demo#3", title: "Fix the login", column: "waiting", graph: graph("waiting") }),
      row({ ref: "local:demo#2", column: "done", session: session("closed") }),
      row({ ref: "local:demo#1", title: "Write a spec" }),
    ];
    const columns = byColumn(rows);
    expect(Object.fromEntries(Object.entries(columns).map(([id, items]) => [id, items.map((item) => item.ref)]))).toEqual({
      queued: [],
      working: ["local:demo#1"],
      waiting: ["local:demo#3"],
      blocked: [],
      done: ["local:demo#2"],
    });
    expect(byColumn(rows, "LOGIN").waiting).toHaveLength(1);
    expect(byColumn(rows, "review").waiting.map((item) => item.ref)).toEqual(["local:demo#3"]);
    expect(byColumn(rows, "claude spec").working.map((item) => item.ref)).toEqual(["local:demo#1"]);
    expect(byColumn(rows, "nothing-like-it").working).toEqual([]);
  });

  it.each([
    [0, "0s"],
    [59_000, "59s"],
    [60_000, "1m"],
    [3_600_000, "1h"],
    [3_900_000, "1h 5m"],
    [86_400_000 * 2 + 3_600_000 * 3, "2d 3h"],
    [-5, "0s"],
    [Number.NaN, "0s"],
  ])("an age of %d ms reads %s", (ms, text) => {
    expect(formatAge(ms)).toBe(text);
  });

  it("counts a card's age from its session's start, else its place in the queue", () => {
    expect(startedAt(row())).toBe(AT);
    expect(startedAt(row({ session: null, queue: { position: 1, queuedAt: "2026-02-01T00:00:00.000Z", harness: "codex" } }))).toBe("2026-02-01T00:00:00.000Z");
  });

  it.each([
    ["no use recorded", null, null],
    [
      "half the tokens, a tenth of the minutes",
      { tokens: { used: 50_000, limit: 100_000 }, minutes: { used: 6, limit: 60 }, warnAt: 0.8, exceeded: null },
      { share: 0.5, level: "ok", label: "50k / 100k tokens · 6 / 60 min" },
    ],
    [
      "past the warning on minutes",
      { tokens: { used: 1_000, limit: 100_000 }, minutes: { used: 54, limit: 60 }, warnAt: 0.8, exceeded: null },
      { share: 0.9, level: "warn", label: "1.0k / 100k tokens · 54 / 60 min" },
    ],
    [
      "paused at its limit",
      {
        tokens: { used: 120_000, limit: 100_000 },
        minutes: { used: 3, limit: null },
        warnAt: 0.8,
        exceeded: { dimension: "tokens", used: 120_000, limit: 100_000, at: AT },
      },
      { share: 1, level: "over", label: "over its tokens limit · 120k / 100k tokens · 3 min" },
    ],
    [
      "tokens unreadable and no limits",
      { tokens: { used: null, limit: null }, minutes: { used: 12, limit: null }, warnAt: 0.8, exceeded: null },
      { share: null, level: "ok", label: "tokens unreadable · 12 min" },
    ],
  ])("a budget bar: %s", (_name, budget, bar) => {
    expect(budgetBar(budget as Item["budget"])).toEqual(bar);
  });
});

describe("the page's text from hostile sources", () => {
  it.each([
    ["https://github.com/octo/repo/issues/1", "https://github.com/octo/repo/issues/1"],
    ["javascript:alert(1)", null],
    ["data:text/html,<script>", null],
    ["not a url", null],
    ["", null],
    [null, null],
  ])("links %s as %s", (url, href) => {
    expect(safeHref(url)).toBe(href);
  });

  it.each([
    ["colours kept", "\x1b[1;32mok\x1b[0m done", "\x1b[1;32mok\x1b[0m done"],
    ["a title change dropped", "\x1b]0;pwned\x07text", "text"],
    ["a clipboard write dropped", "\x1b]52;c;ZXZpbA==\x1b\\text", "text"],
    ["cursor moves and clears dropped", "a\x1b[2J\x1b[10;10Hb\x1b[?1049h", "ab"],
    ["a device status query dropped", "x\x1b[6ny", "xy"],
    ["a DCS string dropped", "\x1bPq#0;2;0;0;0\x1b\\after", "after"],
    ["bells, backspaces and C1 controls dropped", "a\x07b\x08c\u009bd", "abcd"],
    ["line ends made \\r\\n, lone \\r dropped", "one\ntwo\r\nthr\ree", "one\r\ntwo\r\nthree"],
    ["tabs kept", "a\tb", "a\tb"],
  ])("a snapshot's control sequences: %s", (_name, text, expected) => {
    expect(onlyColours(text)).toBe(expected);
  });

  it("draws a snapshot from the top of a cleared screen, without a line feed after the last line", () => {
    expect(screenWrite("one\r\ntwo\r\n\r\n")).toBe("\x1b[0m\x1b[H\x1b[2Jone\r\ntwo\x1b[0m");
  });

  it("shows an event's other fields as text, cut at its bound", () => {
    expect(eventDetails({ ts: AT, event: "x", level: "info", source: "daemon", work_item: "local:demo#1", node: "review", n: 2, o: { a: 1 } })).toBe(
      'node=review  n=2  o={"a":1}',
    );
    expect(eventDetails({ text: "y".repeat(500) }, 20)).toHaveLength(20);
  });
});

describe("the page's routes", () => {
  it.each([
    ["", { view: "board", filter: "" }],
    ["#/", { view: "board", filter: "" }],
    ["#/?q=review", { view: "board", filter: "review" }],
    ["#/item/local%3Ademo%231", { view: "item", ref: "local:demo#1" }],
    ["#/item/%E0%A4%A", { view: "board", filter: "" }],
  ])("%s", (hash, route) => {
    expect(parseRoute(hash)).toEqual(route);
  });

  it("keeps the events view's filters", () => {
    const route = parseRoute("#/events?type=graph.*&type=session.*&level=warning");
    expect(route.view).toBe("events");
    if (route.view === "events") expect([route.query.getAll("type"), route.query.get("level")]).toEqual([["graph.*", "session.*"], "warning"]);
  });
});

describe("the graph's drawing", () => {
  const specReview = {
    start: "write",
    nodes: [{ id: "write" }, { id: "review" }, { id: "done" }, { id: "orphan" }],
    edges: [
      { from: "write", to: "review", on: "pass" },
      { from: "review", to: "done", on: "approved" },
      { from: "review", to: "write", on: "changes-requested" },
    ],
  };

  it("puts each node in the layer of its distance from the start; one the start does not reach goes below", () => {
    expect(Object.fromEntries(layersOf(specReview))).toEqual({ write: 0, review: 1, done: 2, orphan: 3 });
  });

  it("draws forward edges down and a loop back around the right, every label inside the drawing", () => {
    const layout = layoutGraph(specReview);
    const at = new Map(layout.nodes.map((node) => [node.id, node]));
    expect((at.get("write")?.y ?? 0) < (at.get("review")?.y ?? 0)).toBe(true);
    expect(layout.edges.map((edge) => [edge.on, edge.back])).toEqual([
      ["pass", false],
      ["approved", false],
      ["changes-requested", true],
    ]);
    const loop = layout.edges.find((edge) => edge.back);
    const rightmostNode = Math.max(...layout.nodes.map((node) => node.x + node.width));
    expect(loop?.labelX ?? 0).toBeGreaterThan(rightmostNode);
    for (const edge of layout.edges) expect(edge.labelX + edge.on.length * 6.5).toBeLessThanOrEqual(layout.width);
    for (const node of layout.nodes) expect(node.x + node.width).toBeLessThanOrEqual(layout.width);
  });

  it("draws an edge to a node it does not know as nothing", () => {
    expect(layoutGraph({ start: "a", nodes: [{ id: "a" }], edges: [{ from: "a", to: "ghost", on: "pass" }] }).edges).toEqual([]);
  });
});

describe("a comment as the page shows it", () => {
  it("drops the loop's marker, and folds one of the-loop's after its first line", () => {
    const body = "\n🤖 **the-loop** started a session.\n\n| tmux | x |\n\n<!-- the-loop:agent-comment -->";
    expect(shownComment({ body, fromTheLoop: true })).toEqual({ head: "🤖 **the-loop** started a session.", rest: "| tmux | x |" });
    expect(shownComment({ body: "Please cover E401.\nThanks", fromTheLoop: false })).toEqual({ head: "Please cover E401.\nThanks", rest: "" });
    expect(shownComment({ body: "<!-- the-loop:agent-comment -->", fromTheLoop: true })).toEqual({ head: "", rest: "" });
  });
});
