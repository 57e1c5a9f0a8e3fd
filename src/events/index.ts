export {
  ENVELOPE_KEYS,
  EVENT_CATALOG,
  EVENT_LEVELS,
  EVENT_SOURCES,
  EVENT_TYPES,
  isEventType,
  levelRank,
  specOf,
} from "./catalog.js";
export type { EventFields, EventLevel, EventSource, EventSpec, EventType, FieldSpec } from "./catalog.js";
export { EventLog, MemoryEventSink, scrubSecrets } from "./log.js";
export type { EventLogOptions, EventSink } from "./log.js";
