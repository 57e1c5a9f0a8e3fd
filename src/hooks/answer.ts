import { z } from "zod";
import type { FieldKind, FieldSpec, HookPoint } from "../sdk/hooks/catalog.js";
import { kindInWords } from "./kinds.js";
import { describe } from "./values.js";

/**
 * The schemas a hook's answer is parsed with where it crosses from another process: the JSON-RPC
 * 2.0 envelope of a remote entry's reply, and the answer itself (a remote's `result`, a command's
 * stdout) against the decisions of the point it answers. Parsed, never cast.
 *
 * Lenient as the protocol is: a key the schema does not name (a fact, a key the point lacks, an
 * envelope member JSON-RPC does not define) is let through untouched, and the chain ignores it
 * and records it in `hooks.ignored`. Only a known key of the wrong type is the hook's failure,
 * in the chain's own words (`decision "proceed" must be a boolean, not a string`).
 */

const objectSchema = z.record(z.string(), z.unknown());

function kindSchema(kind: FieldKind): z.ZodType {
  switch (kind) {
    case "string":
      return z.string();
    case "boolean":
      return z.boolean();
    case "integer":
      return z.int();
    case "string[]":
      return z.array(z.string());
    case "work-item":
    case "json-object":
      return objectSchema;
    case "string-map":
      return z.record(z.string(), z.string());
  }
}

function specSchema(spec: FieldSpec): z.ZodType {
  const schema = kindSchema(spec.kind);
  return (spec.nullable === true ? schema.nullable() : schema).optional();
}

const answerSchemas = new WeakMap<HookPoint, z.ZodType<Record<string, unknown>>>();

/** The schema of an answer at `point`: each decision of its kind (absent allowed), every other key let through. */
export function answerSchema(point: HookPoint): z.ZodType<Record<string, unknown>> {
  let schema = answerSchemas.get(point);
  if (schema === undefined) {
    schema = z.looseObject(Object.fromEntries(Object.entries(point.decisions).map(([key, spec]) => [key, specSchema(spec)])));
    answerSchemas.set(point, schema);
  }
  return schema;
}

/**
 * An answer from another process (already a plain object) parsed at `point`. Throws, naming the
 * first wrong-typed decision in the answer's own key order, as the chain would.
 */
export function parseAnswer(point: HookPoint, answer: Record<string, unknown>): Record<string, unknown> {
  const result = answerSchema(point).safeParse(answer);
  if (result.success) return result.data;
  const wrong = new Set(result.error.issues.map((issue) => String(issue.path[0] ?? "")));
  const key = Object.keys(answer).find((name) => wrong.has(name));
  const spec = key === undefined ? undefined : point.decisions[key];
  if (key === undefined || spec === undefined) throw new Error(`the answer does not read: ${result.error.issues[0]?.message ?? "unexpected content"}`);
  throw new Error(`decision "${key}" must be ${kindInWords(spec)}, not ${describe(answer[key])}`);
}

/** What a JSON-RPC 2.0 response must be before its members are read; other members are ignored. */
export const rpcResponseSchema = z.looseObject({ jsonrpc: z.literal("2.0") });

/** A JSON-RPC 2.0 error object; `data` and other members are ignored. */
export const rpcErrorSchema = z.looseObject({ code: z.number(), message: z.string() });

/** An answer's top level: an object, or null to pass. */
export const answerTopSchema = z.union([z.null(), objectSchema]);
