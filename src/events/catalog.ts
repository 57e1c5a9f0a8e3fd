/**
 * The closed catalog of event types. Every type the-loop records is declared here once, with its
 * family, its level and the fields it carries; `EventLog.emit` accepts nothing else, so a type
 * missing from this table fails type-checking, and `the-loop events --types` lists exactly this.
 *
 * Field specs: "string" | "integer" | "boolean" | "string[]", with a trailing "?" when optional.
 * Field names are snake_case; `work_item` always holds a canonical work item ref.
 */

export const EVENT_LEVELS = ["debug", "info", "warning", "error"] as const;
export type EventLevel = (typeof EVENT_LEVELS)[number];

/** Which part of the-loop wrote the event: the envelope's `source`. */
export const EVENT_SOURCES = ["cli", "demo", "daemon", "poll", "gh-webhook", "sessions", "ask"] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

/** Keys of the envelope; no event may declare a field with one of these names. */
export const ENVELOPE_KEYS = ["ts", "source", "event", "level", "pid"] as const;

type FieldKind = "string" | "integer" | "boolean" | "string[]";
export type FieldSpec = FieldKind | `${FieldKind}?`;

export interface EventSpec {
  readonly family: string;
  readonly level: EventLevel;
  readonly summary: string;
  readonly fields: Readonly<Record<string, FieldSpec>>;
}

export const EVENT_CATALOG = {
  "item.opened": {
    family: "item",
    level: "info",
    summary: "A work item was created on the local tracker.",
    fields: { work_item: "string", actor: "string", title: "string", labels: "string[]" },
  },
  "item.commented": {
    family: "item",
    level: "info",
    summary: "A comment was added to a local work item.",
    fields: { work_item: "string", actor: "string", comment_id: "string", marked: "boolean" },
  },
  "item.labeled": {
    family: "item",
    level: "info",
    summary: "A label was added to a local work item.",
    fields: { work_item: "string", actor: "string", label: "string" },
  },
  "item.unlabeled": {
    family: "item",
    level: "info",
    summary: "A label was removed from a local work item.",
    fields: { work_item: "string", actor: "string", label: "string" },
  },
  "item.closed": {
    family: "item",
    level: "info",
    summary: "A local work item was closed.",
    fields: { work_item: "string", actor: "string" },
  },
  "item.reopened": {
    family: "item",
    level: "info",
    summary: "A closed local work item was reopened.",
    fields: { work_item: "string", actor: "string" },
  },
} as const satisfies Readonly<Record<string, EventSpec>>;

export type EventCatalog = typeof EVENT_CATALOG;
export type EventType = keyof EventCatalog;

type KindValue<K> = K extends "string"
  ? string
  : K extends "integer"
    ? number
    : K extends "boolean"
      ? boolean
      : K extends "string[]"
        ? readonly string[]
        : never;
type Optional<S> = S extends `${infer K}?` ? K : never;
type SpecFields<T extends EventType> = EventCatalog[T]["fields"];

/** The fields `emit(type, …)` takes: required ones required, optional ones optional. */
export type EventFields<T extends EventType> = {
  -readonly [F in keyof SpecFields<T> as SpecFields<T>[F] extends `${string}?` ? never : F]: KindValue<SpecFields<T>[F]>;
} & {
  -readonly [F in keyof SpecFields<T> as SpecFields<T>[F] extends `${string}?` ? F : never]?: KindValue<
    Optional<SpecFields<T>[F]>
  >;
};

export const EVENT_TYPES = Object.keys(EVENT_CATALOG) as EventType[];

export function isEventType(name: string): name is EventType {
  return Object.hasOwn(EVENT_CATALOG, name);
}

export function specOf(type: EventType): EventSpec {
  return EVENT_CATALOG[type];
}

export function levelRank(level: string): number {
  return EVENT_LEVELS.indexOf(level as EventLevel);
}
