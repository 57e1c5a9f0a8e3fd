import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT_USAGE } from "../../src/errors.js";
import { GraphError, formatGraphProblem, loadGraphFile, parseGraphText } from "../../src/graph/load.js";
import { tempDir } from "../support/temp.js";

/** A small valid graph, line by line, so a test can replace or add lines and know where they stand. */
const VALID = [
  "name: small", //                                   1
  "start: write", //                                  2
  "nodes:", //                                        3
  "  - id: write", //                                 4
  "    phase: drafting", //                           5
  "    description: Write it.", //                    6
  "    produces: [notes.md, 'a.md|docs/a.md']", //    7
  "    checks:", //                                   8
  "      - checklist: TODO.md", //                    9
  "      - command: [npm, test]", //                 10
  "  - id: review", //                               11
  "    actor: human", //                             12
  "    description: Review it.", //                  13
  "  - id: done", //                                 14
  "    terminal: true", //                           15
  "edges:", //                                       16
  "  - {from: write, to: review, on: pass}", //      17
  "  - {from: review, to: done, on: approved}", //   18
  "  - {from: review, to: write, on: changes-requested}", // 19
];

const text = (lines: readonly string[]): string => `${lines.join("\n")}\n`;

/** VALID with line `n` (1-based) replaced by `lines` (none: removed). */
function replaced(n: number, ...lines: string[]): string[] {
  return [...VALID.slice(0, n - 1), ...lines, ...VALID.slice(n)];
}

/** VALID with `lines` added after line `n` (1-based). */
function inserted(n: number, ...lines: string[]): string[] {
  return [...VALID.slice(0, n), ...lines, ...VALID.slice(n)];
}

function problemsOf(source: string): string[] {
  return parseGraphText(source, { source: "/g/small.yaml" }).problems.map((problem) => formatGraphProblem(problem, "g.yaml"));
}

describe("parseGraphText", () => {
  it("compiles a valid graph into the shared Graph shape", () => {
    const outcome = parseGraphText(text(VALID), { source: "/g/small.yaml" });
    expect(outcome.problems).toEqual([]);
    const graph = outcome.graph;
    expect(graph?.name).toBe("small");
    expect(graph?.source).toBe("/g/small.yaml");
    expect(graph?.start).toBe("write");
    expect([...(graph?.nodes.keys() ?? [])]).toEqual(["write", "review", "done"]);
    expect(graph?.nodes.get("write")).toEqual({
      id: "write",
      phase: "drafting",
      actor: "agent",
      description: "Write it.",
      produces: [["notes.md"], ["a.md", "docs/a.md"]],
      checks: [
        { kind: "artifact-exists", anyOf: ["notes.md"] },
        { kind: "artifact-exists", anyOf: ["a.md", "docs/a.md"] },
        { kind: "checklist-complete", anyOf: ["TODO.md"] },
        { kind: "command", argv: ["npm", "test"], timeoutSeconds: 600 },
      ],
      maxAttempts: 3,
      terminal: false,
      points: [],
    });
    expect(graph?.nodes.get("review")).toMatchObject({ actor: "human", checks: [], produces: [], terminal: false, points: [] });
    expect(graph?.nodes.get("done")).toMatchObject({ terminal: true, description: "", checks: [], points: [] });
    expect(graph?.edges).toEqual([
      { from: "write", to: "review", on: "pass" },
      { from: "review", to: "done", on: "approved" },
      { from: "review", to: "write", on: "changes-requested" },
    ]);
  });

  // Each broken graph → the problems reported, with line and column, each naming the node.
  it.each([
    {
      what: "a dangling edge (to)",
      lines: replaced(17, "  - {from: write, to: reveiw, on: pass}"),
      expected: ['g.yaml:17:19: edges[0].to: edge "write" → "reveiw" on pass: there is no node "reveiw"; did you mean "review"?'],
    },
    {
      what: "a dangling edge (from)",
      lines: [...VALID, "  - {from: nowhere, to: done, on: pass}"],
      expected: ['g.yaml:20:6: edges[3].from: edge "nowhere" → "done" on pass: there is no node "nowhere"; the nodes are: write, review, done'],
    },
    {
      what: "a duplicate node id",
      lines: [...VALID.slice(0, 15), "  - id: review", "    terminal: true", ...VALID.slice(15)],
      expected: ['g.yaml:16:5: nodes[3].id: node "review" is declared twice (also nodes[1]); node ids must be unique'],
    },
    {
      what: "an unknown check",
      lines: replaced(9, "      - lint: TODO.md"),
      expected: [
        'g.yaml:9:9: nodes[0].checks[0]: node "write": unknown check "lint"; a check is {artifact: FILE}, {checklist: FILE} or {command: [PROGRAM, ARG…]}',
      ],
    },
    {
      what: "a check of two kinds",
      lines: replaced(9, "      - {checklist: TODO.md, artifact: a.md}"),
      expected: ['g.yaml:9:9: nodes[0].checks[0]: node "write": one check has one kind, not artifact and checklist: write 2 checks'],
    },
    {
      what: "a check of the wrong type",
      lines: replaced(9, "      - checklist: 3"),
      expected: ['g.yaml:9:9: nodes[0].checks[0].checklist: node "write": expected string, received number'],
    },
    {
      what: "a misspelt key of a check",
      lines: replaced(10, "      - {command: [npm, test], timeout: 5}"),
      expected: ['g.yaml:10:32: nodes[0].checks[1].timeout: node "write": unknown key "timeout"; did you mean "timeoutSeconds"?'],
    },
    {
      what: "an empty command",
      lines: replaced(10, "      - command: []"),
      expected: ['g.yaml:10:9: nodes[0].checks[1].command: node "write": Too small: expected array to have >=1 items'],
    },
    {
      what: "an unknown outcome",
      lines: replaced(17, "  - {from: write, to: review, on: done}"),
      expected: ['g.yaml:17:31: edges[0].on: edge "write" → "review": unknown outcome; an edge is taken on one of: pass, fail, approved, changes-requested'],
    },
    {
      what: "an undeclared start",
      lines: replaced(2, "start: wirte"),
      expected: ['g.yaml:2:1: start: start names no node "wirte"; did you mean "write"?'],
    },
    {
      what: "an unknown key, with the closest known one",
      lines: replaced(6, "    descripton: Write it."),
      expected: ['g.yaml:6:5: nodes[0].descripton: node "write": unknown key "descripton"; did you mean "description"?'],
    },
    {
      what: "an unknown top-level key",
      lines: ["owner: me", ...VALID],
      expected: ['g.yaml:1:1: owner: unknown key "owner"; the keys here are: version, name, start, maxGenerations, nodes, edges'],
    },
    {
      what: "a non-terminal node with no outgoing edge",
      lines: [...replaced(14, "  - id: extra", "    description: More.", "  - id: done"), "  - {from: write, to: extra, on: fail}"],
      expected: ['g.yaml:14:5: nodes[2]: node "extra" (agent) has no pass edge; add {from: extra, to: …, on: pass} to the next node'],
    },
    {
      what: "a terminal node with an outgoing edge",
      lines: [...VALID, "  - {from: done, to: write, on: pass}"],
      expected: ['g.yaml:20:5: edges[3]: edge "done" → "write" on pass: node "done" is terminal, and a terminal node has no edges out'],
    },
    {
      what: "an agent node without a pass edge",
      lines: replaced(17, "  - {from: write, to: review, on: fail}"),
      expected: ['g.yaml:4:5: nodes[0]: node "write" (agent) has no pass edge; add {from: write, to: …, on: pass} to the next node'],
    },
    {
      what: "a human node without an approved edge",
      lines: replaced(18),
      expected: [
        'g.yaml:4:5: nodes[0]: node "write": no terminal node can be reached from it, so a run there could never end',
        'g.yaml:11:5: nodes[1]: node "review" (human) has no approved edge; add {from: review, to: …, on: approved} to the next node',
        'g.yaml:11:5: nodes[1]: node "review": no terminal node can be reached from it, so a run there could never end',
        'g.yaml:14:5: nodes[2]: node "done" cannot be reached from start "write"; add an edge to it or remove it',
      ],
    },
    {
      what: "a human node without a changes-requested edge",
      lines: replaced(19),
      expected: [
        'g.yaml:11:5: nodes[1]: node "review" (human) has no changes-requested edge; add {from: review, to: …, on: changes-requested} back to the node whose work is reviewed',
      ],
    },
    {
      what: "an outcome that does not fit the node's actor",
      lines: [...VALID, "  - {from: write, to: done, on: approved}"],
      expected: [
        'g.yaml:20:29: edges[3].on: edge "write" → "done" on approved: node "write" is an agent node, so its edges are taken on pass or fail, never approved',
      ],
    },
    {
      what: "two edges on one outcome",
      lines: [...VALID, "  - {from: write, to: done, on: pass}"],
      expected: ['g.yaml:20:5: edges[3]: edge "write" → "done" on pass: edges[0] already leaves node "write" on pass; one outcome takes one edge'],
    },
    {
      what: "checks on a human node",
      lines: replaced(12, "    actor: human", "    checks: [{artifact: a.md}]"),
      expected: [
        'g.yaml:13:5: nodes[1].checks: node "review": a human node is decided by a person\'s answer at its gate, never by checks; put them on the agent node before it',
      ],
    },
    {
      what: "an actor on a terminal node",
      lines: replaced(15, "    terminal: true", "    actor: human"),
      expected: ['g.yaml:16:5: nodes[2].actor: node "done": a terminal node ends the run: it is never worked on, claimed or answered'],
    },
    {
      what: "a terminal start",
      lines: replaced(2, "start: done"),
      expected: ['g.yaml:2:1: start: start "done" is a terminal node: the run would end before it began'],
    },
    {
      what: "a node without a description",
      lines: replaced(6),
      expected: [
        'g.yaml:4:5: nodes[0].description: node "write" needs a description: it is what the agent is assigned, or what the reviewer is asked to look at',
      ],
    },
    {
      what: "an artifact outside the working directory",
      lines: replaced(7, "    produces: [../secret.md, '/etc/passwd|ok.md']"),
      expected: [
        'g.yaml:7:16: nodes[0].produces[0]: node "write": "../secret.md": a path cannot leave the session\'s working directory (no ..)',
        'g.yaml:7:30: nodes[0].produces[1]: node "write": "/etc/passwd": a path is relative to the session\'s working directory',
      ],
    },
    {
      what: "an unknown loop point, suggesting the closest and listing the ones there are",
      lines: inserted(10, "    points: [plan:pre, plan:pr]"),
      expected: [
        'g.yaml:11:24: nodes[0].points[1]: node "write": unknown loop point "plan:pr"; did you mean "plan:pre"? a node binds any of: discuss:pre, discuss:post, plan:pre, plan:post, execute:pre, execute:wave:pre, execute:wave:post, execute:post, verify:pre, verify:post, ship:pre, ship:post',
      ],
    },
    {
      what: "execute:task as a node's point",
      lines: inserted(10, "    points: [execute:task]"),
      expected: [
        'g.yaml:11:14: nodes[0].points[0]: node "write": execute:task is not bound to a node: it runs for each task of a node\'s taskPlan; give the agent node taskPlan: FILE instead',
      ],
    },
    {
      what: "a point bound to two nodes",
      lines: [...inserted(10, "    points: [plan:pre]").slice(0, 16), "    points: [ship:post, plan:pre]", ...VALID.slice(15)],
      expected: ['g.yaml:17:25: nodes[2].points[1]: node "done": `plan:pre` is already bound to node "write"; a loop point is bound to one node of a graph'],
    },
    {
      what: "a point listed twice by one node",
      lines: inserted(10, "    points: [plan:pre, plan:pre]"),
      expected: ['g.yaml:11:24: nodes[0].points[1]: node "write" lists `plan:pre` twice; list each point once'],
    },
    {
      what: "wave points on a human node (and no second problem for the :post one)",
      lines: inserted(13, "    points: [execute:wave:pre, execute:wave:post]"),
      expected: [
        'g.yaml:14:14: nodes[1].points[0]: node "review": `execute:wave:pre` brackets each attempt at an agent node, and a human node has no attempts; bind it to the agent node that does the work',
        'g.yaml:14:32: nodes[1].points[1]: node "review": `execute:wave:post` brackets each attempt at an agent node, and a human node has no attempts; bind it to the agent node that does the work',
      ],
    },
    {
      what: "a :post point on a human node",
      lines: inserted(13, "    points: [discuss:pre, discuss:post]"),
      expected: [
        'g.yaml:14:27: nodes[1].points[1]: node "review": a human node passes its points on entry, before anything is approved, so it cannot bind `discuss:post`; bind it to the node the approval leads to',
      ],
    },
    {
      what: "a taskPlan on a human node",
      lines: inserted(13, "    taskPlan: tasks.md"),
      expected: [
        'g.yaml:14:5: nodes[1].taskPlan: node "review": a person answers a human node, and no agent works a plan\'s tasks there; put taskPlan on the agent node that implements it',
      ],
    },
    {
      what: "a taskPlan on a terminal node",
      lines: inserted(15, "    taskPlan: tasks.md"),
      expected: [
        'g.yaml:16:5: nodes[2].taskPlan: node "done": a terminal node ends the run: no task of a plan is worked on there; put taskPlan on the agent node that implements it',
      ],
    },
    {
      what: "a taskPlan with alternatives",
      lines: inserted(10, "    taskPlan: 'tasks.md|TODO.md'"),
      expected: ['g.yaml:11:5: nodes[0].taskPlan: node "write": "tasks.md|TODO.md": a task plan is one file, without `|` alternatives'],
    },
    {
      what: "a taskPlan outside the working directory",
      lines: inserted(10, "    taskPlan: ../tasks.md"),
      expected: ['g.yaml:11:5: nodes[0].taskPlan: node "write": "../tasks.md": a path cannot leave the session\'s working directory (no ..)'],
    },
    {
      what: "a bad id and phase",
      lines: replaced(4, "  - id: Write_It", "    phase: Drafting"),
      expected: undefined,
    },
    {
      what: "a YAML syntax error",
      lines: replaced(5, "    phase: [drafting"),
      expected: undefined,
    },
  ])("refuses $what", ({ lines, expected }) => {
    const problems = problemsOf(text(lines));
    expect(problems.length).toBeGreaterThan(0);
    if (expected) expect(problems).toEqual(expected);
    for (const problem of problems) expect(problem).toMatch(/^g\.yaml:\d+:\d+: /);
  });

  it("binds points in the loop's order, a human node's :pre points and any point of a terminal node", () => {
    const lines = [
      ...inserted(10, "    points: [execute:post, execute:wave:post, execute:pre]", "    taskPlan: spec/tasks.md").slice(0, 15),
      "    points: [verify:pre, plan:pre]",
      ...VALID.slice(13, 15),
      "    points: [ship:post, plan:post, execute:wave:pre]",
      ...VALID.slice(15),
    ];
    const outcome = parseGraphText(text(lines), { source: "/g/small.yaml" });
    expect(outcome.problems).toEqual([]);
    expect(outcome.graph?.nodes.get("write")).toMatchObject({
      points: ["execute:pre", "execute:wave:post", "execute:post"],
      taskPlan: "spec/tasks.md",
    });
    expect(outcome.graph?.nodes.get("review")?.points).toEqual(["plan:pre", "verify:pre"]);
    expect(outcome.graph?.nodes.get("done")?.points).toEqual(["plan:post", "execute:wave:pre", "ship:post"]);
  });

  it("names the node no terminal can be reached from", () => {
    const lines = [
      ...VALID.slice(0, 15),
      "  - id: stuck",
      "    description: Loop forever.",
      "edges:",
      "  - {from: write, to: review, on: pass}",
      "  - {from: review, to: stuck, on: approved}",
      "  - {from: review, to: write, on: changes-requested}",
      "  - {from: stuck, to: stuck, on: pass}",
      "  - {from: write, to: done, on: fail}",
    ];
    expect(problemsOf(text(lines))).toEqual(['g.yaml:16:5: nodes[3]: node "stuck": no terminal node can be reached from it, so a run there could never end']);
  });

  it("refuses a graph with no terminal node", () => {
    const lines = [
      ...VALID.slice(0, 13),
      "edges:",
      "  - {from: write, to: review, on: pass}",
      "  - {from: review, to: write, on: approved}",
      "  - {from: review, to: write, on: changes-requested}",
    ];
    expect(problemsOf(text(lines))).toContain("g.yaml:3:1: nodes: the graph has no terminal node (terminal: true), so no run could end");
  });

  it("reports every problem of the file's shape at once, in the order they stand", () => {
    const lines = replaced(17, "  - {from: write, to: review, on: passed}").map((line) => (line === "    phase: drafting" ? "    phse: drafting" : line));
    // The rules between values (here: the dangling edge) wait for a file of the right shape.
    expect(problemsOf(text([...lines, "  - {from: write, to: nowhere, on: fail}"]))).toEqual([
      'g.yaml:5:5: nodes[0].phse: node "write": unknown key "phse"; did you mean "phase"?',
      'g.yaml:17:31: edges[0].on: edge "write" → "review": unknown outcome; an edge is taken on one of: pass, fail, approved, changes-requested',
    ]);
  });

  it("refuses a file that is not a mapping, and an empty one", () => {
    expect(problemsOf("- a\n- b\n")).toEqual(["g.yaml:1:1: a graph file is a mapping with name, start, nodes and edges (docs/graph.md)"]);
    expect(problemsOf("")).toEqual(["g.yaml: a graph file is a mapping with name, start, nodes and edges (docs/graph.md)"]);
  });

  it("refuses a file whose name is not the one the config gives it", () => {
    const outcome = parseGraphText(text(VALID), { source: "/g/small.yaml", expectedName: "big", namedBy: "graphs[0] in cli-config.yaml" });
    expect(outcome.problems.map((problem) => formatGraphProblem(problem, "g.yaml"))).toEqual([
      'g.yaml:1:1: name: the file names the graph "small", but graphs[0] in cli-config.yaml calls it "big"; make them the same',
    ]);
  });
});

describe("loadGraphFile", () => {
  it("throws a config error (exit 2) naming the file, the line and the node", async () => {
    const dir = await tempDir();
    const file = join(dir, "small.yaml");
    await writeFile(file, text(replaced(17, "  - {from: write, to: reveiw, on: pass}").map((line) => line.replace("Write it.", '""'))));
    const error = await loadGraphFile(file, { source: file }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GraphError);
    const graphError = error as GraphError;
    expect(graphError.exitCode).toBe(EXIT_USAGE);
    expect(graphError.code).toBe("config");
    expect(graphError.message).toBe(`invalid graph file ${file}: 2 problems`);
    expect(graphError.details).toEqual([
      `${file}:6:5: nodes[0].description: node "write" needs a description: it is what the agent is assigned, or what the reviewer is asked to look at`,
      `${file}:17:19: edges[0].to: edge "write" → "reveiw" on pass: there is no node "reveiw"; did you mean "review"?`,
    ]);
  });

  it("says so when the file cannot be read", async () => {
    const dir = await tempDir();
    const file = join(dir, "missing.yaml");
    await expect(loadGraphFile(file, { source: file, namedBy: "graphs[0] in c.yaml" })).rejects.toThrow(
      `invalid graph: ${file}: cannot read graph file (named by graphs[0] in c.yaml): it does not exist`,
    );
  });

  it("loads a valid file", async () => {
    const dir = await tempDir();
    const file = join(dir, "small.yaml");
    await writeFile(file, text(VALID));
    const graph = await loadGraphFile(file, { source: file });
    expect(graph.source).toBe(file);
    expect(graph.nodes.size).toBe(3);
  });
});
