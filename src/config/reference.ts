import type { JsonSchemaNode } from "./json-schema.js";

/**
 * The reference table of docs/config.md, rendered from the JSON Schema so the documentation can
 * never list a key the loader rejects or miss one it accepts (a test compares the two).
 */

/** The name of the generated section in docs/config.md (see src/docs/sections.ts). */
export const CONFIG_REFERENCE_SECTION = "config reference";

export interface ReferenceRow {
  readonly key: string;
  readonly type: string;
  readonly defaultValue: string;
  readonly description: string;
}

function typeOf(node: JsonSchemaNode): string {
  if (node.const !== undefined) return JSON.stringify(node.const);
  if (node.enum) return node.enum.map((value) => JSON.stringify(value)).join(" \\| ");
  const variants = node.anyOf ?? node.oneOf;
  if (variants) return variants.map(typeOf).join(" \\| ");
  if (node.type === "array") return `${node.items ? typeOf(node.items) : "value"}[]`;
  if (node.type === "object" && typeof node.additionalProperties === "object") {
    return `map of ${typeOf(node.additionalProperties)}`;
  }
  if (Array.isArray(node.type)) return node.type.join(" \\| ");
  return typeof node.type === "string" ? node.type : "value";
}

function defaultOf(node: JsonSchemaNode): string {
  if (node["x-derivedDefault"]) return `\`${node["x-derivedDefault"]}\``;
  if (node.default === undefined) return "—";
  if (typeof node.default === "object" && node.default !== null && Object.keys(node.default).length === 0) return "—";
  return `\`${JSON.stringify(node.default)}\``;
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

export function referenceRows(root: JsonSchemaNode): ReferenceRow[] {
  const rows: ReferenceRow[] = [];
  const visit = (node: JsonSchemaNode, prefix: string): void => {
    for (const [name, child] of Object.entries(node.properties ?? {})) {
      const key = prefix ? `${prefix}.${name}` : name;
      const deprecated = child.deprecated ? "**Deprecated.** " : "";
      rows.push({
        key,
        type: child.properties ? "object" : typeOf(child),
        defaultValue: defaultOf(child),
        description: `${deprecated}${child.description ?? ""}`,
      });
      // A deprecated block repeats a current one; its keys are documented there.
      if (child.properties && !child.deprecated) visit(child, key);
      if (child.type === "array" && child.items?.properties) visit(child.items, `${key}[]`);
    }
  };
  visit(root, "");
  return rows;
}

export function renderReferenceTable(root: JsonSchemaNode): string {
  const lines = ["| key | type | default | description |", "| --- | --- | --- | --- |"];
  for (const row of referenceRows(root)) {
    lines.push(`| \`${row.key}\` | ${cell(row.type)} | ${cell(row.defaultValue)} | ${cell(row.description)} |`);
  }
  return lines.join("\n");
}
