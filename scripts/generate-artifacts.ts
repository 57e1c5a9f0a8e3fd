/**
 * Regenerates the checked-in files derived from code: the config JSON Schema and the generated
 * tables in docs/. Tests fail when any of them is stale; run `npm run generate` to fix that.
 */
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { CONFIG_SCHEMA_FILE, configJsonSchema, configJsonSchemaText } from "../src/config/json-schema.js";
import { CONFIG_REFERENCE_SECTION, renderReferenceTable } from "../src/config/reference.js";
import { spliceSection } from "../src/docs/sections.js";
import { EVENT_CATALOG_SECTION, renderEventCatalogTable } from "../src/events/reference.js";
import { HELP_TEXT_FILE, helpTextModule } from "../src/cli/help-source.js";

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
const helpText = helpTextModule();
if ((await readFile(at(HELP_TEXT_FILE), "utf8").catch(() => "")) !== helpText) {
  await writeFile(at(HELP_TEXT_FILE), helpText);
  console.log(`wrote ${HELP_TEXT_FILE}`);
}
