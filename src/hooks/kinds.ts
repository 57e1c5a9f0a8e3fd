import type { FieldKind, FieldSpec } from "../sdk/hooks/catalog.js";
import { isPlainObject } from "./values.js";

/** A hook's answer checked against a field's kind: never coerced, always the engine's own copy. */

/**
 * The value a decision of `kind` is applied as, or undefined when `value` is not of that kind.
 * Always the chain's own copy (the hook may keep and later mutate what it returned); a list is
 * copied item by item as it is checked, so a hole or a late-changing item cannot slip through.
 */
export function ofKind(value: unknown, kind: FieldKind): { value: unknown } | undefined {
  switch (kind) {
    case "string":
      return typeof value === "string" ? { value } : undefined;
    case "boolean":
      return typeof value === "boolean" ? { value } : undefined;
    case "integer":
      return typeof value === "number" && Number.isSafeInteger(value) ? { value } : undefined;
    case "string[]": {
      if (!Array.isArray(value)) return undefined;
      const items: string[] = [];
      const length = value.length;
      for (let index = 0; index < length; index += 1) {
        const item: unknown = value[index];
        if (typeof item !== "string") return undefined;
        items.push(item);
      }
      return { value: items };
    }
    case "work-item":
    case "json-object":
      return isPlainObject(value) ? { value: structuredClone(value) } : undefined;
    case "string-map": {
      if (!isPlainObject(value)) return undefined;
      const entries: [string, string][] = [];
      for (const key of Object.keys(value)) {
        const item: unknown = value[key];
        if (typeof item !== "string") return undefined;
        entries.push([key, item]);
      }
      return { value: Object.fromEntries(entries) };
    }
  }
}

/** As ofKind, and null for a nullable spec. */
export function ofSpec(value: unknown, spec: FieldSpec): { value: unknown } | undefined {
  return value === null && spec.nullable === true ? { value: null } : ofKind(value, spec.kind);
}

export function article(kind: FieldKind): string {
  switch (kind) {
    case "string":
      return "a string";
    case "boolean":
      return "a boolean";
    case "integer":
      return "an integer";
    case "string[]":
      return "a list of strings";
    case "work-item":
      return "a work item object";
    case "json-object":
      return "a JSON object";
    case "string-map":
      return "an object of strings";
  }
}

/** A field's kind in words, with "or null" for a nullable one. */
export function kindInWords(spec: FieldSpec): string {
  return spec.nullable === true ? `${article(spec.kind)} or null` : article(spec.kind);
}
