import { readdir, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import type { CliConfigInput } from "../../src/config/schema.js";
import { BUILTIN_GRAPH_NAMES } from "../../src/config/graph-schema.js";
import { GraphError } from "../../src/graph/load.js";
import { BUILTIN_GRAPHS_DIR, loadBuiltinGraphs, loadGraphs, resolveGraphPath } from "../../src/graph/registry.js";
import type { Graph } from "../../src/graph/types.js";
import { tempDir } from "../support/temp.js";

/** The nodes from which no terminal node can be reached, computed here without the compiler. */
function stuckNodes(graph: Graph): string[] {
  return [...graph.nodes.keys()].filter((from) => {
    const seen = new Set([from]);
    const queue = [from];
    for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
      if (graph.nodes.get(id)?.terminal) return false;
      for (const edge of graph.edges) {
        if (edge.from === id && !seen.has(edge.to)) {
          seen.add(edge.to);
          queue.push(edge.to);
        }
      }
    }
    return true;
  });
}

const OTHER = `name: other
start: work
nodes:
  - {id: work, description: Work.}
  - {id: end, terminal: true}
edges:
  - {from: work, to: end, on: pass}
`;

const configOf = (input: CliConfigInput) => configSchema.parse(input);

describe("the built-in graphs", () => {
  it("ships exactly the graphs it names, each in its own file", async () => {
    const files = (await readdir(BUILTIN_GRAPHS_DIR)).filter((file) => file.endsWith(".yaml")).sort();
    expect(files).toEqual(BUILTIN_GRAPH_NAMES.map((name) => `${name}.yaml`).sort());
  });

  it("loads both, and from every node of each a terminal node can be reached", async () => {
    const graphs = await loadBuiltinGraphs();
    expect([...graphs.keys()]).toEqual(["work-item", "adhoc"]);
    for (const graph of graphs.values()) {
      expect(graph.source).toBe("built-in");
      expect(stuckNodes(graph), graph.name).toEqual([]);
    }
  });

  it("walks work-item through the phases the product names, each approval sending changes back to its author", async () => {
    const graph = (await loadBuiltinGraphs()).get("work-item");
    expect([...(graph?.nodes.keys() ?? [])]).toEqual([
      "requirements",
      "requirements-approval",
      "design",
      "design-approval",
      "tasks",
      "implementation",
      "verification",
      "final-review",
      "complete",
    ]);
    const back = graph?.edges.filter((edge) => edge.on === "changes-requested").map((edge) => `${edge.from} → ${edge.to}`);
    expect(back).toEqual(["requirements-approval → requirements", "design-approval → design", "final-review → implementation"]);
    const humans = [...(graph?.nodes.values() ?? [])].filter((node) => node.actor === "human" && !node.terminal).map((node) => node.id);
    expect(humans).toEqual(["requirements-approval", "design-approval", "final-review"]);
  });

  it("walks adhoc from work through review to complete", async () => {
    const graph = (await loadBuiltinGraphs()).get("adhoc");
    expect(graph?.start).toBe("work");
    expect(graph?.edges.map((edge) => `${edge.from} -${edge.on}-> ${edge.to}`)).toEqual([
      "work -pass-> review",
      "review -approved-> complete",
      "review -changes-requested-> work",
    ]);
  });
});

describe("the built-in graphs' loop points", () => {
  /** Each node's points, and its task plan where it has one. */
  async function bindingOf(name: string): Promise<Record<string, unknown>> {
    const graph = (await loadBuiltinGraphs()).get(name);
    if (!graph) throw new Error(`${name} did not load`);
    return Object.fromEntries(
      [...graph.nodes.values()].map((node) => [node.id, node.taskPlan === undefined ? node.points : { points: node.points, taskPlan: node.taskPlan }]),
    );
  }

  it("binds every point in work-item, the execute points and the task plan at implementation", async () => {
    expect(await bindingOf("work-item")).toEqual({
      requirements: ["discuss:pre", "discuss:post"],
      "requirements-approval": [],
      design: ["plan:pre"],
      "design-approval": [],
      tasks: ["plan:post"],
      implementation: { points: ["execute:pre", "execute:wave:pre", "execute:wave:post", "execute:post"], taskPlan: "spec/tasks.md" },
      verification: ["verify:pre", "verify:post"],
      "final-review": ["ship:pre"],
      complete: ["ship:post"],
    });
  });

  it("binds execute at adhoc's work and ship around its review, with no task plan", async () => {
    expect(await bindingOf("adhoc")).toEqual({
      work: ["execute:pre", "execute:wave:pre", "execute:wave:post", "execute:post"],
      review: ["ship:pre"],
      complete: ["ship:post"],
    });
  });
});

describe("loadGraphs", () => {
  it("adds the config's graphs to the built-in ones and picks the default", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "graphs"));
    await writeFile(join(dir, "graphs", "other.yaml"), OTHER);
    const loaded = await loadGraphs(configOf({ graph: { enabled: true, default: "other" }, graphs: [{ name: "other", path: "graphs/other.yaml" }] }), dir);
    expect([...loaded.graphs.keys()]).toEqual(["work-item", "adhoc", "other"]);
    expect(loaded.defaultGraph.name).toBe("other");
    expect(loaded.defaultGraph.source).toBe(join(dir, "graphs", "other.yaml"));
    expect(loaded.enabled).toBe(true);
  });

  it("defaults to work-item, off", async () => {
    const loaded = await loadGraphs(configOf({}), "/nowhere");
    expect(loaded.defaultGraph.name).toBe("work-item");
    expect(loaded.enabled).toBe(false);
  });

  it("refuses every graph when one file is bad, naming each file, entry and node", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "bad.yaml"), OTHER.replace("to: end", "to: ned"));
    await writeFile(join(dir, "named.yaml"), OTHER);
    const config = configOf({
      graphs: [
        { name: "bad", path: "bad.yaml" },
        { name: "named", path: "named.yaml" },
        { name: "missing", path: "missing.yaml" },
      ],
    });
    const error = await loadGraphs(config, dir, { configFile: join(dir, "cli-config.yaml") }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GraphError);
    const lines = (error as GraphError).details;
    expect((error as GraphError).exitCode).toBe(2);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(
      /bad\.yaml:1:1: name: the file names the graph "other", but graphs\[0\] in .*cli-config\.yaml calls it "bad"; make them the same$/,
    );
    expect(lines[1]).toMatch(/bad\.yaml:7:18: edges\[0\]\.to: edge "work" → "ned" on pass: there is no node "ned"; did you mean "end"\?$/);
    expect(lines[2]).toMatch(/named\.yaml:1:1: name: the file names the graph "other", but graphs\[1\] in .* calls it "named"/);
    expect(lines[3]).toMatch(/missing\.yaml: cannot read graph file \(named by graphs\[2\] in .*cli-config\.yaml\): it does not exist$/);
    expect((error as GraphError).message).toMatch(/^invalid graph files .*bad\.yaml, .*named\.yaml, .*missing\.yaml: 4 problems$/);
  });

  it("refuses a default no graph has", async () => {
    // Built in code, so the config schema's own check was never run.
    const config = { ...configOf({}), graph: { ...configOf({}).graph, default: "nope" } };
    await expect(loadGraphs(config, "/nowhere")).rejects.toThrow('graph.default: no graph is named "nope"; known: work-item, adhoc');
  });
});

describe("resolveGraphPath", () => {
  it.each([
    ["graphs/a.yaml", "/etc/the-loop/graphs/a.yaml"],
    ["./a.yaml", "/etc/the-loop/a.yaml"],
    ["/srv/a.yaml", "/srv/a.yaml"],
    ["~/a.yaml", "/home/op/a.yaml"],
    ["../shared/a.yaml", "/etc/shared/a.yaml"],
  ])("%s → %s", (path, expected) => {
    expect(resolveGraphPath(path, "/etc/the-loop", "/home/op")).toBe(expected);
  });
});
