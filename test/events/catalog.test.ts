import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { extractSection } from "../../src/docs/sections.js";
import { ENVELOPE_KEYS, EVENT_CATALOG, EVENT_LEVELS, EVENT_TYPES, isEventType } from "../../src/events/catalog.js";
import { EventLog } from "../../src/events/log.js";
import { EVENT_CATALOG_SECTION, catalogEntries, fieldNames, renderEventCatalogTable } from "../../src/events/reference.js";
import { REPO_ROOT } from "../support/cli.js";

async function sourceFiles(): Promise<string[]> {
  const src = join(REPO_ROOT, "src");
  const names = await readdir(src, { recursive: true });
  return names.filter((name) => name.endsWith(".ts") && !name.endsWith(".d.ts")).map((name) => join(src, name));
}

describe("the event catalog", () => {
  it("declares every event type the code emits", async () => {
    const emitted = new Map<string, string>();
    for (const file of await sourceFiles()) {
      const text = await readFile(file, "utf8");
      for (const match of text.matchAll(/\bemit\(\s*(["'`])([^"'`]+)\1/g)) emitted.set(match[2] ?? "", file);
    }
    const undeclared = [...emitted].filter(([type]) => !isEventType(type)).map(([type, file]) => `${type} (${file})`);
    expect(undeclared, "add these to EVENT_CATALOG in src/events/catalog.ts").toEqual([]);
  });

  it("lets no event declare an envelope key as a field", () => {
    const clashes = EVENT_TYPES.flatMap((type) =>
      Object.keys(EVENT_CATALOG[type].fields)
        .filter((field) => (ENVELOPE_KEYS as readonly string[]).includes(field))
        .map((field) => `${type}.${field}`),
    );
    expect(clashes).toEqual([]);
  });

  it.each(EVENT_TYPES)("%s is named <family>.<snake_case name> and has a level, a summary and snake_case fields", (type) => {
    const spec = EVENT_CATALOG[type];
    expect(type.startsWith(`${spec.family}.`)).toBe(true);
    expect(type).toMatch(/^[a-z]+(?:_[a-z]+)*\.[a-z]+(?:_[a-z]+)*$/);
    expect(EVENT_LEVELS).toContain(spec.level);
    expect(spec.summary).toMatch(/^[A-Z].*\.$/);
    for (const field of Object.keys(spec.fields)) expect(field).toMatch(/^[a-z]+(?:_[a-z]+)*$/);
  });

  it("is checked by the compiler at every emit", () => {
    // This test is type-checked by `npx tsc --noEmit -p .`; at run time the log is disabled.
    const log = new EventLog({ path: null, source: "cli" });
    // @ts-expect-error — a type that is not in the catalog
    log.emit("no.such_type", {});
    // @ts-expect-error — `actor` is required for item.closed
    log.emit("item.closed", { work_item: "local:p#1" });
    // @ts-expect-error — `marked` is a boolean
    log.emit("item.commented", { work_item: "local:p#1", actor: "ann", comment_id: "c1", marked: "yes" });
    log.emit("item.closed", { work_item: "local:p#1", actor: "ann" });
  });

  it("is listed with optional fields marked", () => {
    expect(fieldNames({ work_item: "string", reason: "string?" })).toEqual(["work_item", "reason?"]);
    expect(catalogEntries().map((entry) => entry.type)).toEqual(EVENT_TYPES);
  });

  it("is documented in docs/events.md exactly as the code declares it", async () => {
    const document = await readFile(join(REPO_ROOT, "docs", "events.md"), "utf8");
    expect(
      extractSection(document, EVENT_CATALOG_SECTION),
      `docs/events.md's "${EVENT_CATALOG_SECTION}" section is stale or missing: run \`npm run generate\``,
    ).toBe(renderEventCatalogTable());
  });
});
