import type { EventFields, EventType } from "./catalog.js";
import type { EventSink } from "./log.js";

/**
 * A sink with some fields given once, as probot's child loggers are: the dispatcher binds
 * `{ work_item, delivery_id }` once per event and every emit about that event adds them. It wraps
 * an EventSink and is not one, so nothing that implements or takes a sink changes.
 */

/** Field values a sink may be bound to: what the catalog's field kinds hold. */
type BoundValue = string | number | boolean | readonly string[];

/** The event types whose catalog fields include every key of `K` (so binding `K` adds no field an event lacks). */
export type EventsWith<K extends string> = {
  [T in EventType]: [K] extends [keyof EventFields<T>] ? T : never;
}[EventType];

export interface BoundEvents<B extends Readonly<Record<string, BoundValue>>> {
  /** The fields every emit adds. */
  readonly fields: B;
  /** The sink underneath, for events that do not take the bound fields. */
  readonly sink: EventSink;
  /** Emits `type` with the bound fields and `fields` (which cannot name a bound one). */
  emit<T extends EventsWith<keyof B & string>>(type: T, fields: Omit<EventFields<T>, keyof B>): void;
}

export function bindEvents<B extends Readonly<Record<string, BoundValue>>>(sink: EventSink, fields: B): BoundEvents<B> {
  return {
    fields,
    sink,
    emit<T extends EventsWith<keyof B & string>>(type: T, rest: Omit<EventFields<T>, keyof B>): void {
      // The bound fields first, as hand-written emits put them; the event's own after.
      sink.emit(type, { ...fields, ...rest } as unknown as EventFields<T>);
    },
  };
}
