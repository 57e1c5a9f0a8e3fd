import { EVENT_CATALOG, EVENT_TYPES } from "./catalog.js";
import type { EventLevel, EventType, FieldSpec } from "./catalog.js";

/**
 * The catalog as people read it: `the-loop events --types` and the generated table in
 * docs/events.md both come from here, so neither can drift from what `emit` accepts.
 */

/** The name of the generated section in docs/events.md (see src/docs/sections.ts). */
export const EVENT_CATALOG_SECTION = "event catalog";

export interface CatalogEntry {
  readonly type: EventType;
  readonly family: string;
  readonly level: EventLevel;
  readonly summary: string;
  readonly fields: Readonly<Record<string, FieldSpec>>;
}

export function catalogEntries(): CatalogEntry[] {
  return EVENT_TYPES.map((type) => {
    const spec = EVENT_CATALOG[type];
    return { type, family: spec.family, level: spec.level, summary: spec.summary, fields: { ...spec.fields } };
  });
}

/** `name` for a required field, `name?` for an optional one. */
export function fieldNames(fields: Readonly<Record<string, FieldSpec>>): string[] {
  return Object.entries(fields).map(([name, spec]) => (spec.endsWith("?") ? `${name}?` : name));
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

function markdownFields(fields: Readonly<Record<string, FieldSpec>>): string {
  return Object.entries(fields)
    .map(([name, spec]) => {
      const optional = spec.endsWith("?");
      const kind = optional ? spec.slice(0, -1) : spec;
      return `\`${name}\`${optional ? "?" : ""}: ${kind}`;
    })
    .join(", ");
}

/** The markdown table of every event type, in catalog order. */
export function renderEventCatalogTable(): string {
  const lines = ["| type | level | fields | summary |", "| --- | --- | --- | --- |"];
  for (const entry of catalogEntries()) {
    lines.push(`| \`${entry.type}\` | ${entry.level} | ${cell(markdownFields(entry.fields)) || "—"} | ${cell(entry.summary)} |`);
  }
  return lines.join("\n");
}
