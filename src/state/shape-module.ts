/**
 * The text of a generated shape module (state/record-shape.ts says what a shape is for): the
 * kind's JSON Schema as a constant, each part that stands in it more than once (a timestamp, a
 * non-empty string, an enum of outcomes) written once as a constant of its own and named where
 * it is used, so the module reads as the schema does rather than as its expansion.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A part is worth a name of its own when it is written on more than three lines (two entries or more). */
const isSharable = (value: Json): value is Json[] | { [key: string]: Json } =>
  typeof value === "object" && value !== null && (Array.isArray(value) ? value.length : Object.keys(value).length) >= 2;

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** A schema as plain JSON, the way JSON.stringify would write it (undefined entries dropped). */
function jsonOf(value: unknown): Json {
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (Array.isArray(value)) return value.map((item) => (item === undefined || typeof item === "function" ? null : jsonOf(item)));
  if (typeof value === "object") {
    const out: { [key: string]: Json } = {};
    for (const [key, item] of Object.entries(value)) if (item !== undefined && typeof item !== "function") out[key] = jsonOf(item);
    return out;
  }
  throw new Error(`a JSON Schema holds only JSON values, not a ${typeof value}`);
}

/** A name that says what a common part is; undefined for one named after where it first stands. */
function contentName(value: { [key: string]: Json }): string | undefined {
  const keys = Object.keys(value).sort().join(",");
  if (value.format === "date-time") return typeof value.pattern === "string" && value.pattern.includes("[+-]") ? "isoTimestamp" : "isoUtcTimestamp";
  if (keys === "minLength,type" && value.type === "string" && value.minLength === 1) return "nonEmptyString";
  if (keys === "exclusiveMinimum,maximum,type" && value.type === "integer" && value.exclusiveMinimum === 0 && value.maximum === MAX_SAFE) {
    return "positiveInteger";
  }
  if (keys === "maximum,minimum,type" && value.type === "integer" && value.minimum === 0 && value.maximum === MAX_SAFE) return "nonNegativeInteger";
  return undefined;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const camel = (words: readonly string[]): string =>
  words
    .map((word) => word.replace(/[^\w$]/g, "_"))
    .map((word, index) => (index === 0 ? word : word.charAt(0).toUpperCase() + word.slice(1)))
    .join("");

/** Where a part stands, as words: `["history", "item"]`, `["attempts", "entry"]`. */
function placeWords(path: readonly string[]): string[] {
  const words: string[] = [];
  for (let index = 0; index < path.length; index++) {
    const step = path[index] as string;
    const parent = path[index - 1];
    if (parent === "properties") words.push(step);
    else if (step === "items") words.push("item");
    else if (step === "additionalProperties") words.push("entry");
    else if (step === "propertyNames") words.push("key");
  }
  return words.slice(-2);
}

/**
 * Finds the parts to name, largest first: a part standing twice or more in what is still written
 * out (the shape and the parts named so far, each named part counted once) gets a name, and its
 * places use it.
 */
function sharedParts(shape: Json, exportName: string): { names: Map<string, string>; named: Map<string, Json> } {
  const names = new Map<string, string>();
  const named = new Map<string, Json>();
  const taken = new Set([exportName]);
  const count = (): Map<string, { uses: number; size: number; path: readonly string[]; value: Json }> => {
    const found = new Map<string, { uses: number; size: number; path: readonly string[]; value: Json }>();
    const walk = (value: Json, path: readonly string[], top: boolean): void => {
      if (typeof value !== "object" || value === null) return;
      const key = JSON.stringify(value);
      if (!top && isSharable(value)) {
        const seen = found.get(key);
        if (seen === undefined) found.set(key, { uses: 1, size: key.length, path, value });
        else seen.uses++;
        if (names.has(key)) return;
      }
      for (const [step, child] of Object.entries(value)) walk(child, [...path, step], false);
    };
    walk(shape, [], true);
    for (const value of named.values()) walk(value, [], true);
    return found;
  };
  for (;;) {
    const candidates = [...count()].filter(([key, part]) => part.uses >= 2 && !names.has(key)).sort((a, b) => b[1].size - a[1].size);
    const next = candidates[0];
    if (next === undefined) return { names, named };
    const [key, part] = next;
    const value = part.value;
    const wanted =
      (!Array.isArray(value) && typeof value === "object" && value !== null ? contentName(value) : undefined) ?? camel([...placeWords(part.path), "shape"]);
    const base = IDENTIFIER.test(wanted) ? wanted : "part";
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}${n}`;
    taken.add(name);
    names.set(key, name);
    named.set(key, value);
  }
}

/** JSON.stringify(value, null, 2), with each named part written as its name. */
function render(value: Json, names: ReadonlyMap<string, string>, indent: string, top: boolean): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  if (!top) {
    const name = names.get(JSON.stringify(value));
    if (name !== undefined) return name;
  }
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((item) => `${inner}${render(item, names, inner, false)}`).join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return "{}";
  return `{\n${entries.map(([key, item]) => `${inner}${JSON.stringify(key)}: ${render(item, names, inner, false)}`).join(",\n")}\n${indent}}`;
}

/** The text of a generated shape module: each common part as a constant, then `export const <name> = <JSON Schema> as const;`. */
export function recordShapeModuleText(exportName: string, source: string, shape: unknown): string {
  const json = jsonOf(shape);
  const { names, named } = sharedParts(json, exportName);
  // A part is written before the parts and the shape that use it: smallest first.
  const parts = [...names].sort((a, b) => a[0].length - b[0].length);
  return [
    "/**",
    ` * Generated by \`npm run generate\` from ${source}; do not edit.`,
    " * The kind's JSON Schema (z.toJSONSchema, input side): what code that loads no schema library",
    " * knows of the kind, and checks records against (state/record-shape.ts). A part that stands in",
    " * it more than once is written once, as a constant of its own.",
    " */",
    "",
    ...parts.flatMap(([key, name]) => [`const ${name} = ${render(named.get(key) ?? null, names, "", true)} as const;`, ""]),
    `export const ${exportName} = ${render(json, names, "", true)} as const;`,
    "",
  ].join("\n");
}
