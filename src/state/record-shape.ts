import type { z } from "zod";

/**
 * A record kind's shape: the JSON Schema of its zod schema (`z.toJSONSchema`, input side),
 * generated into a checked-in module by `npm run generate`. It is how code that must not load
 * the schema library (zod costs 60–130 ms to import, on a start-up budget of 300 ms for
 * `sessions list`) still checks a record against the kind's one schema rather than against a
 * second, hand-written description of it: compileShape turns the shape into a check, and a test
 * per kind fails when the generated module is stale.
 *
 * Only the part of JSON Schema zod emits for records is understood; anything else is refused
 * when the shape is compiled, so a schema that grows a construct the check cannot follow fails
 * at once instead of being checked less strictly than it reads.
 */

export type ShapeType = "object" | "string" | "number" | "integer" | "array" | "boolean";

export interface RecordShape {
  readonly $schema?: string;
  readonly description?: string;
  readonly type?: ShapeType;
  readonly const?: unknown;
  readonly enum?: readonly unknown[];
  readonly properties?: { readonly [key: string]: RecordShape };
  readonly required?: readonly string[];
  /** false: no other key; a shape: every other key's value (a map, `z.record`), its keys checked by `propertyNames`. */
  readonly additionalProperties?: boolean | RecordShape;
  readonly propertyNames?: RecordShape;
  /** `{a: ["b"]}`: when a is present, so is b (both ways: the two go together). */
  readonly dependentRequired?: { readonly [key: string]: readonly string[] };
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly format?: string;
  readonly items?: RecordShape;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly exclusiveMaximum?: number;
}

/** Why a value is not a record of the kind, or undefined when it is one. */
export type RecordCheck = (value: unknown) => string | undefined;

const KNOWN: ReadonlySet<string> = new Set([
  "$schema",
  "description",
  "type",
  "const",
  "enum",
  "properties",
  "required",
  "additionalProperties",
  "propertyNames",
  "dependentRequired",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "items",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
]);

/** Where in the value a problem is (dotted, relative to the node checked; "" for the node) and what it is. */
interface Problem {
  readonly path: string;
  readonly text: string;
}

/** A check of one value; `undefined` is a missing value (only asked of a required key). */
type Check = (value: unknown) => Problem | undefined;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const got = (value: unknown): string => (value === undefined ? "missing" : `got ${JSON.stringify(value)}`);

const here = (text: string): Problem => ({ path: "", text });

const under = (step: string, problem: Problem): Problem => ({ path: problem.path === "" ? step : `${step}.${problem.path}`, text: problem.text });

/**
 * The check a shape describes, answering with the first problem in the shape's own order: for an
 * object, an unknown key first, then each known key in turn, then keys that go together. The
 * wording is the one records have always been refused with (`command: expected one of start,
 * stop, pause, resume; got "go"`), so an operator reads the same message whichever way a record
 * was read.
 */
export function compileShape(shape: RecordShape): RecordCheck {
  if (shape.type !== "object") throw new Error(`a record shape describes an object, not ${shape.type ?? "anything"}`);
  const check = compileNode(shape, "", true);
  return (value) => {
    if (!isObject(value)) return "not a JSON object";
    const problem = check(value);
    if (problem === undefined) return undefined;
    return problem.path === "" ? problem.text : `${problem.path}: ${problem.text}`;
  };
}

function compileNode(shape: RecordShape, path: string, root = false): Check {
  const where = path || "its root";
  for (const key of Object.keys(shape)) {
    if (!KNOWN.has(key) || (key === "$schema" && !root)) {
      throw new Error(`a record shape uses ${JSON.stringify(key)} at ${where}, which compileShape does not understand`);
    }
  }
  if (shape.const !== undefined) {
    const expected = shape.const;
    return (value) => (value === expected ? undefined : here(`expected ${JSON.stringify(expected)}; ${got(value)}`));
  }
  if (shape.enum !== undefined) {
    const allowed = shape.enum;
    return (value) => (allowed.includes(value) ? undefined : here(`expected one of ${allowed.join(", ")}; ${got(value)}`));
  }
  switch (shape.type) {
    case "object":
      return compileObject(shape, path);
    case "array":
      return compileArray(shape, path);
    case "string":
      return compileString(shape, path);
    case "number":
    case "integer":
      return compileNumber(shape);
    case "boolean":
      return (value) => (typeof value === "boolean" ? undefined : here(`expected true or false; ${got(value)}`));
    default:
      throw new Error(`a record shape has the type ${JSON.stringify(shape.type)} at ${where}, which compileShape does not understand`);
  }
}

function compileObject(shape: RecordShape, path: string): Check {
  const properties = shape.properties ?? {};
  const required = new Set(shape.required ?? []);
  const order = Object.keys(properties);
  const fields = order.map((key) => ({
    key,
    required: required.has(key),
    check: compileNode(properties[key] as RecordShape, path === "" ? key : `${path}.${key}`),
  }));
  const closed = shape.additionalProperties === false;
  const entries = mapEntryCheck(shape, path);
  const together = dependencyChecks(shape.dependentRequired ?? {}, order);
  return (value) => {
    if (!isObject(value)) return here(`expected an object; ${got(value)}`);
    if (closed) {
      const unknown = Object.keys(value).find((key) => !Object.hasOwn(properties, key));
      if (unknown !== undefined) return here(`unknown key ${JSON.stringify(unknown)}`);
    }
    if (entries !== undefined) {
      for (const key of Object.keys(value)) {
        if (Object.hasOwn(properties, key)) continue;
        const problem = entries(key, value[key]);
        if (problem !== undefined) return problem;
      }
    }
    for (const field of fields) {
      const fieldValue = value[field.key];
      if (fieldValue === undefined && !field.required) continue;
      const problem = field.check(fieldValue);
      if (problem !== undefined) return under(field.key, problem);
    }
    for (const check of together) {
      const problem = check(value);
      if (problem !== undefined) return problem;
    }
    return undefined;
  };
}

/**
 * The check of a map's entries (`z.record`: `propertyNames` for the keys, `additionalProperties`
 * for the values), or undefined for an object that is not one. A key is checked as a string and
 * reported as `key "…": …`; a value is reported under its key.
 */
function mapEntryCheck(shape: RecordShape, path: string): ((key: string, value: unknown) => Problem | undefined) | undefined {
  const values = shape.additionalProperties;
  if (typeof values !== "object") {
    if (shape.propertyNames !== undefined) throw new Error(`a record shape has propertyNames without a value shape at ${path || "its root"}`);
    return undefined;
  }
  const keyCheck = shape.propertyNames === undefined ? undefined : compileNode(shape.propertyNames, `${path}{}`);
  const valueCheck = compileNode(values, `${path}{}`);
  return (key, value) => {
    const keyProblem = keyCheck?.(key);
    if (keyProblem !== undefined) return here(`key ${JSON.stringify(key)}: ${keyProblem.text}`);
    const problem = valueCheck(value);
    return problem === undefined ? undefined : under(key, problem);
  };
}

function dependencyChecks(
  dependencies: { readonly [key: string]: readonly string[] },
  order: readonly string[],
): ((value: Record<string, unknown>) => Problem | undefined)[] {
  const position = (key: string): number => order.indexOf(key);
  return Object.entries(dependencies).flatMap(([key, needs]) =>
    needs.map((need) => {
      const both = dependencies[need]?.includes(key) === true;
      const [first, second] = position(key) <= position(need) ? [key, need] : [need, key];
      const problem = here(both ? `${first} and ${second} go together` : `${key} needs ${need}`);
      return (value: Record<string, unknown>) => (value[key] !== undefined && value[need] === undefined ? problem : undefined);
    }),
  );
}

const PLURAL: Record<ShapeType, string> = {
  object: "objects",
  string: "strings",
  number: "numbers",
  integer: "integers",
  array: "lists",
  boolean: "booleans",
};

function compileArray(shape: RecordShape, path: string): Check {
  const items = shape.items;
  if (items === undefined) throw new Error(`a record shape has an array without items at ${path}`);
  const { minItems = 0, maxItems = Number.POSITIVE_INFINITY } = shape;
  const quantity = Number.isFinite(maxItems) ? `at most ${maxItems}` : minItems > 0 ? `at least ${minItems}` : "a list of";
  const noun = items.type === undefined || items.const !== undefined || items.enum !== undefined ? "allowed values" : PLURAL[items.type];
  const refused = (value: unknown): Problem => here(`expected ${quantity} ${noun}; ${got(value)}`);
  const element = compileNode(items, `${path}[]`);
  // A list of plain values is refused whole, as one field; a list of objects names the element.
  const whole = items.type !== "object" && items.type !== "array";
  return (value) => {
    if (!Array.isArray(value) || value.length < minItems || value.length > maxItems) return refused(value);
    for (let index = 0; index < value.length; index++) {
      const problem = element(value[index]);
      if (problem !== undefined) return whole ? refused(value) : under(String(index), problem);
    }
    return undefined;
  };
}

function compileString(shape: RecordShape, path: string): Check {
  const { minLength = 0, maxLength = Number.POSITIVE_INFINITY } = shape;
  const pattern = shape.pattern === undefined ? undefined : new RegExp(shape.pattern);
  if (shape.format !== undefined && shape.format !== "date-time") {
    throw new Error(`a record shape uses the string format ${JSON.stringify(shape.format)} at ${path}, which compileShape does not understand`);
  }
  if (shape.format === "date-time" && pattern === undefined) throw new Error(`a record shape's date-time at ${path} has no pattern`);
  let expected: string;
  if (shape.format === "date-time") {
    // zod's z.iso.datetime() takes UTC only unless told otherwise, and its pattern then admits no offset.
    expected = shape.pattern?.includes("[+-]") ? "an ISO 8601 timestamp" : "an ISO 8601 UTC timestamp";
  } else if (pattern !== undefined) {
    expected = `a string matching /${shape.pattern}/`;
  } else if (minLength === 1 && !Number.isFinite(maxLength)) {
    expected = "a non-empty string";
  } else if (minLength > 0 || Number.isFinite(maxLength)) {
    expected = `a string of ${minLength}${Number.isFinite(maxLength) ? `–${maxLength}` : " or more"} characters`;
  } else {
    expected = "a string";
  }
  return (value) =>
    typeof value === "string" && value.length >= minLength && value.length <= maxLength && (pattern === undefined || pattern.test(value))
      ? undefined
      : here(`expected ${expected}; ${got(value)}`);
}

function compileNumber(shape: RecordShape): Check {
  const integer = shape.type === "integer";
  const {
    minimum = Number.NEGATIVE_INFINITY,
    maximum = Number.POSITIVE_INFINITY,
    exclusiveMinimum = Number.NEGATIVE_INFINITY,
    exclusiveMaximum = Number.POSITIVE_INFINITY,
  } = shape;
  const noun = integer ? "integer" : "number";
  const expected =
    exclusiveMinimum === 0 ? `a positive ${noun}` : minimum === 0 ? `a non-negative ${noun}` : integer ? "an integer" : "a number";
  return (value) =>
    typeof value === "number" &&
    Number.isFinite(value) &&
    (!integer || Number.isInteger(value)) &&
    value >= minimum &&
    value <= maximum &&
    value > exclusiveMinimum &&
    value < exclusiveMaximum
      ? undefined
      : here(`expected ${expected}; ${got(value)}`);
}

/**
 * Two optional keys that are both present or both absent, said once: the zod refinement that
 * enforces it, and the `dependentRequired` its JSON Schema (so the kind's shape) carries.
 */
export function keysGoTogether<S extends z.ZodObject>(schema: S, first: string, second: string): S {
  return schema
    .refine((record: Record<string, unknown>) => (record[first] === undefined) === (record[second] === undefined), {
      message: `${first} and ${second} go together`,
    })
    .meta({ dependentRequired: { [first]: [second], [second]: [first] } }) as S;
}
