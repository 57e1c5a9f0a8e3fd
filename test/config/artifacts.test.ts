import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { CONFIG_SCHEMA_FILE, configJsonSchema, configJsonSchemaText } from "../../src/config/json-schema.js";
import type { JsonSchemaNode } from "../../src/config/json-schema.js";
import { REDACTED, redactSecrets, secretPaths } from "../../src/config/redact.js";
import { CONFIG_REFERENCE_SECTION, referenceRows, renderReferenceTable } from "../../src/config/reference.js";
import { extractSection } from "../../src/docs/sections.js";
import { REPO_ROOT } from "../support/cli.js";

const STALE = "stale generated file: run `npm run generate` and commit the result";

describe("artifacts generated from the config schema", () => {
  it("keeps the checked-in JSON Schema equal to the schema the loader uses", async () => {
    const checkedIn = await readFile(`${REPO_ROOT}/${CONFIG_SCHEMA_FILE}`, "utf8");
    expect(checkedIn, STALE).toBe(configJsonSchemaText());
  });

  it("keeps the docs/config.md reference equal to the schema", async () => {
    const doc = await readFile(`${REPO_ROOT}/docs/config.md`, "utf8");
    expect(extractSection(doc, CONFIG_REFERENCE_SECTION), STALE).toBe(renderReferenceTable(configJsonSchema()));
  });

  it("rejects unknown keys at every level of the published schema", () => {
    const objects: string[] = [];
    const visit = (node: JsonSchemaNode, path: string): void => {
      if (node.properties) {
        if (node.additionalProperties !== false) objects.push(path || "(root)");
        for (const [key, child] of Object.entries(node.properties)) visit(child, path ? `${path}.${key}` : key);
      }
    };
    visit(configJsonSchema(), "");
    expect(objects).toEqual([]);
  });

  it("documents every key the state root derives", () => {
    const keys = referenceRows(configJsonSchema()).map((row) => row.key);
    expect(keys).toEqual(
      expect.arrayContaining(["state.root", "routing.registryDir", "polling.stateFile", "eventLog.enabled", "eventLog.path", "webhooks.ghWebhook.pidfile"]),
    );
    for (const row of referenceRows(configJsonSchema())) expect(row.description, row.key).not.toBe("");
  });
});

describe("redaction", () => {
  const schema: JsonSchemaNode = {
    type: "object",
    properties: {
      api: { type: "object", properties: { token: { type: "string", "x-secret": true }, url: { type: "string" } } },
      hooks: {
        type: "array",
        items: { type: "object", properties: { headers: { type: "object", additionalProperties: { type: "string", "x-secret": true } } } },
      },
    },
  };

  it("finds secret paths through objects, arrays and maps", () => {
    expect(secretPaths(schema)).toEqual([
      ["api", "token"],
      ["hooks", "[]", "headers", "*"],
    ]);
  });

  it("replaces secret values and leaves everything else, without mutating the input", () => {
    const config = { api: { token: "s3cret", url: "https://x" }, hooks: [{ headers: { Authorization: "Bearer abc" } }, {}] };
    const redacted = redactSecrets(config, secretPaths(schema));
    expect(redacted).toEqual({ api: { token: REDACTED, url: "https://x" }, hooks: [{ headers: { Authorization: REDACTED } }, {}] });
    expect(config.api.token).toBe("s3cret");
    expect(JSON.stringify(redacted)).not.toContain("s3cret");
  });
});
