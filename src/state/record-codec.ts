import type { z } from "zod";
import { redactKnownSecretsIn } from "../secrets.js";
import { RefError, formatWorkItemRef, parseWorkItemRef } from "../workitem/index.js";
import { DamagedRecordError } from "./record-kind.js";
import type { RecordDamage, RecordKind, RecordRow } from "./record-kind.js";

/**
 * What every backend of a record kind does the same way: load the kind's schema, check what it
 * reads, validate what it writes, and name a damaged record. A backend stores and fetches JSON
 * values; this says whether a value is the record of its item.
 */

export type Checked<T> = { readonly record: T; readonly problem?: undefined } | { readonly problem: string };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function isSchema<S extends z.ZodType>(schema: S | (() => Promise<S>)): schema is S {
  return typeof schema !== "function";
}

/** The first issue of a failed parse, as `path: message`. */
function schemaProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "unexpected content";
  const path = issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  return `${path}${issue.message}`;
}

/** A work item's canonical ref; throws RefError for one that does not parse. */
export function canonicalItem(item: string): string {
  return formatWorkItemRef(parseWorkItemRef(item));
}

export class RecordCodec<S extends z.ZodType> {
  readonly kind: RecordKind<S>;
  private readonly itemSteps: readonly string[];
  private schemaLoaded: S | undefined;
  private schemaLoading: Promise<S> | undefined;

  /** The kind's row in a database, for a backend that keeps records as rows (its damaged-record errors name it). */
  private readonly row: RecordRow | undefined;

  constructor(kind: RecordKind<S>, row?: RecordRow) {
    this.kind = kind;
    this.row = row;
    this.itemSteps = kind.itemField.split(".");
    if (isSchema(kind.schema)) this.schemaLoaded = kind.schema;
  }

  /** The kind's schema, loaded once. */
  schema(): Promise<S> {
    if (this.schemaLoaded !== undefined) return Promise.resolve(this.schemaLoaded);
    const load = this.kind.schema as () => Promise<S>;
    this.schemaLoading ??= load().then((schema) => (this.schemaLoaded = schema));
    return this.schemaLoading;
  }

  /** The work item a record names, by the kind's item field. */
  itemOf(record: unknown): string | undefined {
    let value = record;
    for (const step of this.itemSteps) value = isObject(value) ? value[step] : undefined;
    return typeof value === "string" ? value : undefined;
  }

  /**
   * The canonical item a valid record names, or why it names none a read could find: missing,
   * not a ref, or not spelt canonically. Each backend then says whether the record sits where
   * that item's record belongs.
   */
  namedItem(record: unknown): { readonly item: string; readonly named: string } | { readonly problem: string } {
    const field = this.kind.itemField;
    const named = this.itemOf(record);
    if (named === undefined) return { problem: `${field}: missing` };
    let canonical: string;
    try {
      canonical = canonicalItem(named);
    } catch (error) {
      if (error instanceof RefError) return { problem: `${field}: ${error.message}` };
      throw error;
    }
    if (canonical !== named) return { problem: `${field}: ${named} is not canonical (${canonical})` };
    return { item: canonical, named };
  }

  damaged(item: string, where: string, reason: string): DamagedRecordError {
    const damage: RecordDamage = { kind: this.kind.name, item, where, reason, ...(this.row !== undefined ? { row: this.row } : {}) };
    return this.kind.damaged?.(damage) ?? new DamagedRecordError(damage, this.kind.remedy);
  }

  /** A read value checked as a read checks it: the kind's check, else its (loaded) schema. */
  checked(value: unknown): Checked<z.output<S>> {
    if (this.kind.check !== undefined) {
      const problem = this.kind.check(value);
      return problem === undefined ? { record: value as z.output<S> } : { problem };
    }
    const schema = this.schemaLoaded;
    if (schema === undefined) {
      throw new Error(`a ${this.kind.name} is read with its schema, which is not loaded: give the kind its schema, or a check`);
    }
    const result = schema.safeParse(value);
    return result.success ? { record: result.data } : { problem: schemaProblem(result.error) };
  }

  /** A listed value checked as a listing checks it: the kind's listCheck when it has one. */
  listed(value: unknown): Checked<z.output<S>> {
    const listCheck = this.kind.listCheck ?? this.kind.check;
    if (listCheck === undefined) return this.checked(value);
    const problem = listCheck(value);
    return problem === undefined ? { record: value as z.output<S> } : { problem };
  }

  /** The record of `item` read at `where`, or the DamagedRecordError saying why it is not. */
  recordOf(item: string, where: string, value: unknown): z.output<S> {
    const checked = this.checked(value);
    if (checked.problem !== undefined) throw this.damaged(item, where, `not a ${this.kind.name} (${checked.problem})`);
    const named = this.itemOf(checked.record);
    if (named !== item) throw this.damaged(item, where, `it holds ${named}, not ${item}`);
    return checked.record;
  }

  /**
   * A record about to be written, redacted of every secret this process knows and validated: a
   * bad one is a bug in the caller, caught before it is stored.
   */
  validated(schema: S, item: string, record: z.output<S>): z.output<S> {
    const result = schema.safeParse(redactKnownSecretsIn(record));
    const invalid = `refusing to write an invalid ${this.kind.name} for ${item}: `;
    if (!result.success) throw new Error(invalid + schemaProblem(result.error));
    const problem = this.kind.check?.(result.data);
    if (problem !== undefined) throw new Error(invalid + problem);
    const named = this.itemOf(result.data) ?? "";
    if (named !== item) {
      throw new Error(this.kind.misaddressed?.(named, item) ?? `refusing to write a ${this.kind.name} for ${named} as the record of ${item}`);
    }
    return result.data;
  }
}
