/**
 * A checker of the JSON Schema keywords the API's answers use (pure, table-tested in
 * test/dashboard/page-answers.test.ts): what the page reads from the daemon is checked against
 * its route's schema before it is shown. The schemas are generated from the API's own
 * (src/dashboard/answer-schemas.ts), which refuses a keyword this checker does not enforce.
 */

export interface JsonSchema {
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly items?: JsonSchema;
  readonly anyOf?: readonly JsonSchema[];
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly minimum?: number;
  readonly maximum?: number;
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function fits(type: string | readonly string[], value: unknown): boolean {
  const kind = kindOf(value);
  return (typeof type === "string" ? [type] : type).some((one) => kind === one || (one === "number" && kind === "integer"));
}

const typeText = (type: string | readonly string[]): string => (typeof type === "string" ? type : type.join(" or "));

function shown(value: unknown): string {
  const kind = kindOf(value);
  if (kind === "object" || kind === "array") return `an ${kind}`;
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

const where = (path: string): string => (path === "" ? "the answer" : path);

function propertyPath(path: string, name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? (path === "" ? name : `${path}.${name}`) : `${path}[${JSON.stringify(name)}]`;
}

/** The first place `value` departs from `schema`, in words (`items[2].column: expected one of …, got "later"`), or null when it fits. */
export function departure(schema: JsonSchema | boolean, value: unknown, path = ""): string | null {
  if (schema === true) return null;
  if (schema === false) return `${where(path)}: not expected here`;
  if (schema.anyOf !== undefined) {
    const misses = schema.anyOf.map((branch) => departure(branch, value, path));
    if (misses.includes(null)) return null;
    // The branch of the value's own type says the most (a nullable object that is an object, say).
    const typed = schema.anyOf.findIndex((branch) => branch.type !== undefined && fits(branch.type, value));
    const expected = schema.anyOf.map((branch) => (branch.type !== undefined ? typeText(branch.type) : "a value")).join(" or ");
    if (typed >= 0) return misses[typed] ?? null;
    return `${where(path)}: expected ${expected}, got ${shown(value)}`;
  }
  if ("const" in schema && value !== schema.const) return `${where(path)}: expected ${shown(schema.const)}, got ${shown(value)}`;
  if (schema.enum !== undefined && !schema.enum.includes(value)) {
    return `${where(path)}: expected one of ${schema.enum.map(shown).join(", ")}, got ${shown(value)}`;
  }
  if (schema.type !== undefined && !fits(schema.type, value)) return `${where(path)}: expected ${typeText(schema.type)}, got ${shown(value)}`;
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) return `${where(path)}: expected at least ${schema.minimum}, got ${value}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `${where(path)}: expected at most ${schema.maximum}, got ${value}`;
  }
  if (Array.isArray(value)) {
    if (schema.items === undefined) return null;
    for (const [index, entry] of value.entries()) {
      const miss = departure(schema.items, entry, `${path}[${index}]`);
      if (miss !== null) return miss;
    }
    return null;
  }
  if (typeof value === "object" && value !== null) {
    const fields = new Map(Object.entries(value));
    for (const name of schema.required ?? []) {
      if (fields.get(name) === undefined) return `${propertyPath(path, name)}: missing`;
    }
    for (const [name, field] of fields) {
      const declared = schema.properties?.[name];
      const miss =
        declared !== undefined
          ? departure(declared, field, propertyPath(path, name))
          : departure(schema.additionalProperties ?? true, field, propertyPath(path, name));
      if (miss !== null) return miss;
    }
  }
  return null;
}
