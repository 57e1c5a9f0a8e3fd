import { REDACTED } from "../secrets.js";
import type { JsonSchemaNode } from "./json-schema.js";

/*
 * Redaction by place: the config's values the schema marks secret, for `config show`. Values
 * themselves — a token however it is spelled, wherever text quotes it — are redacted by
 * src/secrets.ts, at every sink.
 */

export { REDACTED };

/**
 * Paths of every value the schema marks `x-secret`, with `*` for any map key and `[]` for any
 * array element: `integrations.example.token`, `hooks[].headers.*`.
 */
export function secretPaths(root: JsonSchemaNode): string[][] {
  const found: string[][] = [];
  const visit = (node: JsonSchemaNode, path: string[]): void => {
    if (node["x-secret"]) {
      found.push(path);
      return;
    }
    for (const [name, child] of Object.entries(node.properties ?? {})) visit(child, [...path, name]);
    if (typeof node.additionalProperties === "object") visit(node.additionalProperties, [...path, "*"]);
    if (node.items) visit(node.items, [...path, "[]"]);
    for (const variant of node.anyOf ?? node.oneOf ?? []) visit(variant, path);
  };
  visit(root, []);
  return found;
}

/** A copy of `value` with every value at a secret path replaced by "[redacted]". */
export function redactSecrets<T>(value: T, paths: readonly (readonly string[])[]): T {
  const redactAt = (current: unknown, path: readonly string[]): unknown => {
    if (path.length === 0) return current === undefined || current === "" ? current : REDACTED;
    const [head, ...rest] = path;
    if (head === "[]") return Array.isArray(current) ? current.map((item) => redactAt(item, rest)) : current;
    if (current === null || typeof current !== "object" || Array.isArray(current)) return current;
    const record = current as Record<string, unknown>;
    const copy: Record<string, unknown> = { ...record };
    for (const key of head === "*" ? Object.keys(record) : [head ?? ""]) {
      if (key in record) copy[key] = redactAt(record[key], rest);
    }
    return copy;
  };
  return paths.reduce<unknown>((current, path) => redactAt(current, path), value) as T;
}
