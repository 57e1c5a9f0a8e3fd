/**
 * Regenerates the checked-in files derived from code: the config and graph JSON Schemas, the
 * shapes of the record kinds (state/record-shape.ts) and the generated tables and pictures in
 * docs/. Tests fail when any of them is stale; run `npm run generate` to fix that.
 */
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { CONFIG_SCHEMA_FILE, configJsonSchema, configJsonSchemaText } from "../src/config/json-schema.js";
import { CONFIG_REFERENCE_SECTION, renderReferenceTable } from "../src/config/reference.js";
import { spliceSection } from "../src/docs/sections.js";
import { EVENT_CATALOG_SECTION, renderEventCatalogTable } from "../src/events/reference.js";
import { HELP_TEXT_FILE, helpTextModule } from "../src/cli/help-source.js";
import { CONTROL_RECORD_SHAPE_FILE, controlRecordShapeModule } from "../src/control/record-schema.js";
import { SESSION_RECORD_SHAPE_FILE, sessionRecordShapeModule } from "../src/registry/record-schema.js";
import { GRAPH_STATE_SHAPE_FILE, graphStateShapeModule } from "../src/graph-run/state.js";
import { GRAPH_SCHEMA_FILE, graphJsonSchemaText } from "../src/graph/definition.js";
import { SHIPPED_GRAPHS_SECTION, renderShippedGraphs } from "../src/graph/reference.js";
import { loadBuiltinGraphs } from "../src/graph/registry.js";
import { CAPABILITY_SCHEMA_FILE, capabilityJsonSchemaText } from "../src/capabilities/manifest.js";
import { RESPONSE_SCHEMAS_SECTION, renderResponseSchemas } from "../src/dashboard/schemas.js";
import { PAGE_ANSWER_SCHEMA_FILE, pageAnswerSchemasModule } from "../src/dashboard/answer-schemas.js";

const root = new URL("..", import.meta.url);
const at = (path: string): string => fileURLToPath(new URL(path, root));

async function updateSection(file: string, section: string, content: string): Promise<void> {
  const before = await readFile(at(file), "utf8");
  const after = spliceSection(before, section, content);
  if (after !== before) {
    await writeFile(at(file), after);
    console.log(`updated ${file} (${section})`);
  }
}

await writeFile(at(CONFIG_SCHEMA_FILE), configJsonSchemaText());
console.log(`wrote ${CONFIG_SCHEMA_FILE}`);
await updateSection("docs/config.md", CONFIG_REFERENCE_SECTION, renderReferenceTable(configJsonSchema()));
await updateSection("docs/events.md", EVENT_CATALOG_SECTION, renderEventCatalogTable());
await writeFile(at(GRAPH_SCHEMA_FILE), graphJsonSchemaText());
console.log(`wrote ${GRAPH_SCHEMA_FILE}`);
await writeFile(at(CAPABILITY_SCHEMA_FILE), capabilityJsonSchemaText());
console.log(`wrote ${CAPABILITY_SCHEMA_FILE}`);
await updateSection("docs/graph.md", SHIPPED_GRAPHS_SECTION, renderShippedGraphs(await loadBuiltinGraphs()));
await updateSection("docs/dashboard.md", RESPONSE_SCHEMAS_SECTION, renderResponseSchemas());
// Generated modules: the help text, the shape of each record kind (a new kind adds its line), the page's answer schemas.
for (const [file, text] of [
  [HELP_TEXT_FILE, helpTextModule()],
  [SESSION_RECORD_SHAPE_FILE, sessionRecordShapeModule()],
  [CONTROL_RECORD_SHAPE_FILE, controlRecordShapeModule()],
  [GRAPH_STATE_SHAPE_FILE, graphStateShapeModule()],
  [PAGE_ANSWER_SCHEMA_FILE, pageAnswerSchemasModule()],
] as const) {
  if ((await readFile(at(file), "utf8").catch(() => "")) !== text) {
    await writeFile(at(file), text);
    console.log(`wrote ${file}`);
  }
}
