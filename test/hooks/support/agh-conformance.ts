import { readFileSync } from "node:fs";

/**
 * Checks a loop payload against agh's field names, JSON types and enums, as
 * test/fixtures/agh/loop-payloads.json records them (compozy/compozy at 8eeb8a381). Returns what
 * does not conform, in words; an empty list when it all does.
 */

interface AghContract {
  readonly always: readonly string[];
  readonly events: Readonly<Record<string, Readonly<Record<string, "string" | "integer" | "boolean" | "object" | "json">>>>;
  readonly enums: Readonly<Record<string, readonly string[]>>;
  readonly participation: Readonly<Record<string, readonly string[]>>;
}

export const AGH_CONTRACT = JSON.parse(readFileSync(new URL("../../fixtures/agh/loop-payloads.json", import.meta.url), "utf8")) as AghContract;

function typeOk(type: string, value: unknown): boolean {
  switch (type) {
    case "string":
      return typeof value === "string" && value !== "";
    case "integer":
      return Number.isSafeInteger(value) && value !== 0;
    case "boolean":
      return value === true;
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value);
    default:
      return value !== null && value !== undefined;
  }
}

export function aghViolations(payload: Readonly<Record<string, unknown>>): string[] {
  const event = String(payload["event"]);
  const fields = AGH_CONTRACT.events[event];
  if (fields === undefined) return [`${event}: not an agh loop event`];
  const problems: string[] = [];
  for (const key of AGH_CONTRACT.always) if (!Object.hasOwn(payload, key)) problems.push(`${event}: ${key} missing`);
  if (Number.isNaN(Date.parse(String(payload["timestamp"])))) problems.push(`${event}: timestamp is not RFC 3339`);
  for (const [key, value] of Object.entries(payload)) {
    const type = fields[key];
    // omitempty: agh never sends null, "", 0 or false, so a conforming payload does not either.
    if (type === undefined) problems.push(`${event}: ${key} is no field of agh's payload`);
    else if (!typeOk(type, value)) problems.push(`${event}: ${key} is ${JSON.stringify(value)}, not a non-empty ${type}`);
    const allowed = AGH_CONTRACT.enums[key];
    if (allowed !== undefined && !allowed.includes(String(value)))
      problems.push(`${event}: ${key} "${String(value)}" is not one of agh's (${allowed.join(", ")})`);
  }
  const spec = payload["resolved_network_participation"];
  if (typeof spec === "object" && spec !== null) {
    for (const [key, allowed] of Object.entries(AGH_CONTRACT.participation)) {
      const value = (spec as Record<string, unknown>)[key];
      if (!allowed.includes(String(value))) problems.push(`${event}: resolved_network_participation.${key} "${String(value)}" is not agh's`);
    }
  }
  return problems;
}
