import { z } from "zod";
import { hookEntrySchema } from "./hooks-schema.js";
import { HOOK_POINT_NAMES } from "../sdk/hooks/points.js";
import { configSchema } from "./schema.js";

/** The subset of JSON Schema our config schema produces, as read by the generators below. */
export interface JsonSchemaNode {
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchemaNode>>;
  readonly additionalProperties?: boolean | JsonSchemaNode;
  readonly items?: JsonSchemaNode;
  readonly anyOf?: readonly JsonSchemaNode[];
  readonly oneOf?: readonly JsonSchemaNode[];
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly default?: unknown;
  readonly description?: string;
  readonly deprecated?: boolean;
  readonly pattern?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly "x-derivedDefault"?: string;
  readonly "x-secret"?: boolean;
}

export const CONFIG_SCHEMA_FILE = ".the-loop/cli-config.schema.json";

let cached: JsonSchemaNode | undefined;

/**
 * One `hooks:` entry as an editor should check it. The loader accepts any list there (a one-shot
 * command must still run, with no hooks, on a declaration a daemon refuses), so the entry's own
 * schema is grafted in here rather than into the config schema, with `on` limited to the catalog's
 * points (the declaration's own check, done at load). `with` holds any JSON values:
 * the recursive definition zod emits for them would need a `$defs` at the root, and an object
 * with no constraint on its values says the same for a YAML file.
 */
function hookEntryJsonSchema(): JsonSchemaNode {
  const {
    $schema: _dialect,
    $defs: _recursive,
    ...entry
  } = z.toJSONSchema(hookEntrySchema, {
    target: "draft-2020-12",
    io: "input",
  }) as Record<string, unknown> & { properties: Record<string, { description?: string }> };
  const properties = Object.fromEntries(
    Object.entries(entry.properties).map(([key, node]) => {
      if (key === "with") return [key, { description: node.description, type: "object" }];
      // The loader checks `on` against the catalog; an editor can too.
      if (key === "on") return [key, { ...node, items: { enum: HOOK_POINT_NAMES } }];
      return [key, node];
    }),
  );
  return { ...entry, properties } as JsonSchemaNode;
}

const HOOKS_DESCRIPTION =
  "Lifecycle hooks: local modules or remote JSON-RPC services run at the points of a work item's delivery, in this order (see docs/hooks.md). `the-loop config validate` and `the-loop hooks` check every entry; loading the config only checks that this is a list, so a one-shot command still runs (with no hooks) on a declaration a daemon refuses.";

export function configJsonSchema(): JsonSchemaNode {
  if (cached) return cached;
  const root = z.toJSONSchema(configSchema, { target: "draft-2020-12", io: "input" }) as JsonSchemaNode;
  const hooks = root.properties?.hooks;
  if (!hooks) return (cached = root);
  const described: JsonSchemaNode = { ...hooks, description: HOOKS_DESCRIPTION, items: hookEntryJsonSchema() };
  cached = { ...root, properties: { ...root.properties, hooks: described } };
  return cached;
}

/** The exact text of the checked-in schema file. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

/** The node describing the value at `path`, following properties, array items and maps. */
export function schemaNodeAt(root: JsonSchemaNode, path: readonly (string | number)[]): JsonSchemaNode | undefined {
  let node: JsonSchemaNode | undefined = root;
  for (const segment of path) {
    if (!node) return undefined;
    if (typeof segment === "number") {
      node = node.items;
      continue;
    }
    const variants: readonly JsonSchemaNode[] = node.anyOf ?? node.oneOf ?? [node];
    node = variants
      .map((variant) => variant.properties?.[segment] ?? (typeof variant.additionalProperties === "object" ? variant.additionalProperties : undefined))
      .find((found) => found !== undefined);
  }
  return node;
}
