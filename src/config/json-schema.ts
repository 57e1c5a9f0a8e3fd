import { z } from "zod";
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

export function configJsonSchema(): JsonSchemaNode {
  cached ??= z.toJSONSchema(configSchema, { target: "draft-2020-12", io: "input" }) as JsonSchemaNode;
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
      .map((variant) =>
        variant.properties?.[segment] ??
        (typeof variant.additionalProperties === "object" ? variant.additionalProperties : undefined),
      )
      .find((found) => found !== undefined);
  }
  return node;
}
