import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { extractSection } from "../../src/docs/sections.js";
import { GRAPH_SCHEMA_FILE, graphJsonSchemaText } from "../../src/graph/definition.js";
import { SHIPPED_GRAPHS_SECTION, renderShippedGraphs } from "../../src/graph/reference.js";
import { loadBuiltinGraphs } from "../../src/graph/registry.js";
import { REPO_ROOT } from "../support/cli.js";

const STALE = "stale generated file: run `npm run generate` and commit the result";

interface SchemaNode {
  readonly properties?: Record<string, SchemaNode>;
  readonly additionalProperties?: unknown;
  readonly items?: SchemaNode;
  readonly anyOf?: readonly SchemaNode[];
}

describe("artifacts generated from the graph schema", () => {
  it("keeps the checked-in JSON Schema of graph files equal to the schema the loader uses", async () => {
    const checkedIn = await readFile(`${REPO_ROOT}/${GRAPH_SCHEMA_FILE}`, "utf8");
    expect(checkedIn, STALE).toBe(graphJsonSchemaText());
  });

  it("rejects unknown keys at every level of the published schema", () => {
    const open: string[] = [];
    const visit = (node: SchemaNode, path: string): void => {
      if (node.properties) {
        if (node.additionalProperties !== false) open.push(path || "(root)");
        for (const [key, child] of Object.entries(node.properties)) visit(child, path ? `${path}.${key}` : key);
      }
      if (node.items) visit(node.items, `${path}[]`);
      node.anyOf?.forEach((variant, index) => visit(variant, `${path}|${index}`));
    };
    visit(JSON.parse(graphJsonSchemaText()) as SchemaNode, "");
    expect(open).toEqual([]);
  });

  it("keeps the pictures of the shipped graphs in docs/graph.md equal to the graphs", async () => {
    const doc = await readFile(`${REPO_ROOT}/docs/graph.md`, "utf8");
    expect(extractSection(doc, SHIPPED_GRAPHS_SECTION), STALE).toBe(renderShippedGraphs(await loadBuiltinGraphs()));
  });

  it("ships the graphs and their schema in the package", async () => {
    const { files } = JSON.parse(await readFile(`${REPO_ROOT}/package.json`, "utf8")) as { files: string[] };
    expect(files).toEqual(expect.arrayContaining(["graphs", GRAPH_SCHEMA_FILE]));
  });
});
