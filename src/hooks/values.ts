/** Reading JSON values that came from a hook: their shape in words, and equality by content. */

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A value's type in words, for messages: `a string`, `an array`, `a Map`, `null`. */
export function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number" && !Number.isSafeInteger(value)) return `a number (${value})`;
  if (typeof value === "object" && !isPlainObject(value)) {
    const name: unknown = (value as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === "string" && name !== "") return `${/^[AEIOUaeiou]/.test(name) ? "an" : "a"} ${name}`;
  }
  const type = typeof value;
  return `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}

/** Compares two JSON values by content, whatever the order of their keys. */
export function sameJson(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (Array.isArray(left)) {
    return Array.isArray(right) && left.length === right.length && left.every((item, index) => sameJson(item, right[index]));
  }
  if (typeof left === "object" && left !== null && typeof right === "object" && right !== null && !Array.isArray(right)) {
    const leftKeys = Object.keys(left).filter((key) => (left as Record<string, unknown>)[key] !== undefined);
    const rightKeys = Object.keys(right).filter((key) => (right as Record<string, unknown>)[key] !== undefined);
    return (
      leftKeys.length === rightKeys.length &&
      leftKeys.every((key) => Object.hasOwn(right, key) && sameJson((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key]))
    );
  }
  return false;
}
