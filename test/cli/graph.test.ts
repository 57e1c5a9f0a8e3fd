import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { graphMermaid } from "../../src/graph/mermaid.js";
import { loadBuiltinGraphs } from "../../src/graph/registry.js";
import { REPO_ROOT, jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

const REVIEW_ONLY = `name: review-only
start: write
nodes:
  - id: write
    phase: drafting
    description: Write the change.
    produces: [notes.md]
  - id: review
    actor: human
    description: Review it.
  - id: done
    terminal: true
edges:
  - {from: write, to: review, on: pass}
  - {from: review, to: done, on: approved}
  - {from: review, to: write, on: changes-requested}
`;

/** A project whose config declares `review-only` (from `graphText`) and makes it the default. */
async function project(graphText: string = REVIEW_ONLY, enabled = true): Promise<{ cwd: string; graphFile: string }> {
  const cwd = await tempDir();
  await mkdir(join(cwd, ".the-loop", "graphs"), { recursive: true });
  const graphFile = join(cwd, ".the-loop", "graphs", "review-only.yaml");
  await writeFile(graphFile, graphText);
  await writeFile(
    join(cwd, ".the-loop", "cli-config.yaml"),
    `graph:\n  enabled: ${enabled}\n  default: review-only\ngraphs:\n  - name: review-only\n    path: graphs/review-only.yaml\n`,
  );
  return { cwd, graphFile };
}

interface Listing {
  enabled: boolean;
  default: string;
  graphs: { name: string; source: string; start: string; nodes: number; edges: number; default: boolean }[];
}

describe("the-loop graph list", () => {
  it("lists the built-in graphs without a config: work-item the default, graphs off", async () => {
    const cwd = await tempDir();
    const json = await runCli(["graph", "list", "--json"], { cwd });
    expect(json.code, json.stderr).toBe(0);
    expect(jsonOf<Listing>(json)).toEqual({
      enabled: false,
      default: "work-item",
      graphs: [
        { name: "work-item", source: "built-in", start: "requirements", nodes: 9, edges: 11, default: true },
        { name: "adhoc", source: "built-in", start: "work", nodes: 3, edges: 3, default: false },
      ],
      notLoaded: [],
    });
    const text = await runCli(["graph", "list"], { cwd });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^name\s+nodes\s+default\s+source\nwork-item\s+9\s+yes\s+built-in\nadhoc\s+3\s+built-in\n/);
    expect(text.stdout).toContain("graphs are off (graph.enabled: false)");
  });

  it("adds the config's graphs, with their files, and names the default", async () => {
    const { cwd, graphFile } = await project();
    const listing = jsonOf<Listing>(await runCli(["graph", "list", "--json"], { cwd }));
    expect(listing.enabled).toBe(true);
    expect(listing.default).toBe("review-only");
    expect(listing.graphs.map((graph) => [graph.name, graph.source, graph.default])).toEqual([
      ["work-item", "built-in", false],
      ["adhoc", "built-in", false],
      ["review-only", graphFile, true],
    ]);
    const text = await runCli(["graph", "list"], { cwd });
    expect(text.stdout).toMatch(/review-only\s+3\s+yes\s+\.the-loop\/graphs\/review-only\.yaml/);
    expect(text.stdout).toContain("graphs are on: a started work item runs review-only (graph.default)");
  });

  it("reads the config file as it is now, as docs/graph.md says: an edited graph.default is listed at once", async () => {
    const { cwd } = await project();
    const config = join(cwd, ".the-loop", "cli-config.yaml");
    await writeFile(config, `graph:\n  enabled: true\n  default: adhoc\ngraphs:\n  - name: review-only\n    path: graphs/review-only.yaml\n`);
    expect(jsonOf<Listing>(await runCli(["graph", "list", "--json"], { cwd })).default).toBe("adhoc");
    const doc = await readFile(join(REPO_ROOT, "docs", "graph.md"), "utf8");
    expect(doc.replace(/\s+/g, " ")).toContain("`the-loop graph list`, which lists the file's graphs and default,");
  });

  it("refuses to list when a graph file is broken, naming the file and the node (exit 2)", async () => {
    const { cwd } = await project(REVIEW_ONLY.replace("to: review, on: pass", "to: reveiw, on: pass"));
    const result = await runCli(["graph", "list"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'error: invalid graph: .the-loop/graphs/review-only.yaml:14:19: edges[0].to: edge "write" → "reveiw" on pass: there is no node "reveiw"; did you mean "review"?',
    );
  });
});

describe("the-loop graph show", () => {
  it("prints the nodes and the edges in words", async () => {
    const result = await runCli(["graph", "show", "adhoc"], { cwd: await tempDir() });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      [
        "adhoc (built-in)",
        "",
        "nodes:",
        "  work (agent, loop:work) — start",
        "    Do what the work item asks.",
        "    loop points: execute:pre, execute:wave:pre, execute:wave:post, execute:post",
        "    blocked after 3 failed claims",
        "  review (human gate, loop:review)",
        "    Review the work — is it done?",
        "    loop points: ship:pre",
        "  complete (terminal, loop:complete)",
        "    loop points: ship:post",
        "",
        "edges:",
        "  work → review      on pass",
        "  review → complete  on approved",
        "  review → work      on changes-requested",
        "",
      ].join("\n"),
    );
  });

  it("says what a claim must pass, the implicit artifact checks first", async () => {
    const { cwd } = await project(
      REVIEW_ONLY.replace("    produces: [notes.md]\n", "    produces: [notes.md]\n    checks: [{checklist: TODO.md}, {command: [npm, test]}]\n"),
    );
    const result = await runCli(["graph", "show", "review-only"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("review-only (.the-loop/graphs/review-only.yaml) — the default\n");
    expect(result.stdout).toContain("    produces: notes.md\n");
    expect(result.stdout).toContain('    a claim passes when: notes.md exists; the checklist of TODO.md is complete; ["npm","test"] exits 0 within 600 s\n');
  });

  it("prints only the Mermaid flowchart with --mermaid", async () => {
    const result = await runCli(["graph", "show", "work-item", "--mermaid"], { cwd: await tempDir() });
    expect(result.code, result.stderr).toBe(0);
    const workItem = (await loadBuiltinGraphs()).get("work-item");
    if (!workItem) throw new Error("work-item did not load");
    expect(result.stdout).toBe(`${graphMermaid(workItem)}\n`);
  });

  it("prints the graph as JSON with --json", async () => {
    const result = await runCli(["graph", "show", "adhoc", "--json"], { cwd: await tempDir() });
    expect(result.code, result.stderr).toBe(0);
    const graph = jsonOf<{ name: string; start: string; default: boolean; nodes: { id: string; actor: string; terminal: boolean }[]; edges: unknown[] }>(
      result,
    );
    expect(graph).toMatchObject({ name: "adhoc", source: "built-in", start: "work", default: false });
    expect(graph.nodes.map((node) => [node.id, node.actor, node.terminal])).toEqual([
      ["work", "agent", false],
      ["review", "human", false],
      ["complete", "agent", true],
    ]);
    expect(graph.edges).toHaveLength(3);
  });

  it("names the graphs there are when asked for another (exit 1)", async () => {
    const result = await runCli(["graph", "show", "nope", "--json"], { cwd: await tempDir() });
    expect(result.code).toBe(1);
    expect(jsonOf<{ error: { code: string; message: string } }>(result).error).toEqual({
      code: "not-found",
      message: 'no graph is named "nope"; known: work-item, adhoc (the-loop graph list)',
      details: [],
    });
  });

  it("refuses --json with --mermaid (exit 2)", async () => {
    const result = await runCli(["graph", "show", "adhoc", "--json", "--mermaid"], { cwd: await tempDir() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--json and --mermaid each print the whole answer; choose one");
  });
});

describe("the-loop config validate with graphs", () => {
  it("checks every graph and names them", async () => {
    const { cwd } = await project();
    const text = await runCli(["config", "validate"], { cwd });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("graphs OK: work-item, adhoc, review-only");
    const json = jsonOf<{ valid: boolean; graphs: string[] }>(await runCli(["config", "validate", "--json"], { cwd }));
    expect(json).toMatchObject({ valid: true, graphs: ["work-item", "adhoc", "review-only"] });
  });

  it("exits 2 on a graph file with a dangling edge, naming the file and the node", async () => {
    // Graphs off: a broken file is refused all the same, before anyone turns them on.
    const { cwd } = await project(REVIEW_ONLY.replace("to: done, on: approved", "to: dnoe, on: approved"), false);
    const text = await runCli(["config", "validate"], { cwd });
    expect(text.code).toBe(2);
    expect(text.stdout).toBe("");
    expect(text.stderr).toContain(
      'error: invalid graph: .the-loop/graphs/review-only.yaml:15:20: edges[1].to: edge "review" → "dnoe" on approved: there is no node "dnoe"; did you mean "done"?',
    );
    const json = await runCli(["config", "validate", "--json"], { cwd });
    expect(json.code).toBe(2);
    expect(jsonOf<{ error: { code: string; message: string } }>(json).error.code).toBe("config");
  });

  it("exits 2 when a declared graph file does not exist", async () => {
    const cwd = await tempDir();
    await mkdir(join(cwd, ".the-loop"));
    await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), "graphs:\n  - {name: mine, path: mine.yaml}\n");
    const result = await runCli(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      "error: invalid graph: .the-loop/mine.yaml: cannot read graph file (named by graphs[0] in .the-loop/cli-config.yaml): it does not exist",
    );
  });

  it("exits 2 when graph.default names no graph, at its line", async () => {
    const cwd = await tempDir();
    await mkdir(join(cwd, ".the-loop"));
    await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), "graph:\n  default: nope\n");
    const result = await runCli(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'error: invalid config: .the-loop/cli-config.yaml:2:3: graph.default: no graph is named "nope"; known: work-item, adhoc (declare it under graphs)',
    );
  });
});

describe("the-loop graph status", () => {
  it("says an item that does not exist does not exist, and one without a run has none", async () => {
    const { cwd } = await project();
    const missing = await runCli(["graph", "status", "#9"], { cwd });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("no work item local:default#9");
    expect(missing.stderr).toContain('the local project "default" has no items');
    expect(missing.stderr).not.toContain("has no graph run");

    expect((await runCli(["item", "new", "Fix it"], { cwd })).code).toBe(0);
    const beyond = await runCli(["graph", "status", "#9"], { cwd });
    expect(beyond.stderr).toContain('no work item local:default#9; the items of "default" are #1 to #1');

    const unstarted = await runCli(["graph", "status", "#1"], { cwd });
    expect(unstarted.code).toBe(beyond.code);
    expect(unstarted.stderr).toContain("local:default#1 has no graph run; it begins when the item is started");
  });
});
