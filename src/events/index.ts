export { ENVELOPE_KEYS, EVENT_CATALOG, EVENT_LEVELS, EVENT_SOURCES, EVENT_TYPES, isEventType, levelRank, specOf } from "./catalog.js";
export type { EventFields, EventLevel, EventSource, EventSpec, EventType, FieldSpec } from "./catalog.js";
export { EventLog, eventLine, MemoryEventSink, scrubSecrets } from "./log.js";
export type { EventLogOptions, EventSink } from "./log.js";
export { bindEvents } from "./bound.js";
export type { BoundEvents, EventsWith } from "./bound.js";
export { eventMatcher, LineReader, parseEventLine, readEvents, RingBuffer } from "./reader.js";
export type { EventFilter, EventPredicate, EventRecord, ReadEventsOptions, ReadEventsResult } from "./reader.js";
export { DEFAULT_FOLLOW_INTERVAL_MS, describeFollowNotice, followEvents } from "./follow.js";
export type { FollowNotice, FollowOptions } from "./follow.js";
export type { SharedEventLog } from "./table.js";
export { RECORDED_BY } from "./table.js";
export { LogCursor } from "./cursor.js";
export type { CursorChange } from "./cursor.js";
export { globToRegExp, matchesGlob } from "./glob.js";
export { parseSince, SINCE_FORMS, SinceFormatError } from "./since.js";
export { catalogEntries, EVENT_CATALOG_SECTION, fieldNames, renderEventCatalogTable } from "./reference.js";
export type { CatalogEntry } from "./reference.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { readLatestEvents } from "./tail.js";
export type { ReadLatestResult } from "./tail.js";
