export { LocalTracker } from "./tracker.js";
export type {
  LabelChange,
  LabelChangeResult,
  ListItemsFilter,
  LocalItem,
  LocalTrackerOptions,
  OpenItemInput,
  RepairReport,
  StateChangeResult,
} from "./tracker.js";
export { CorruptTrackerFileError, InvalidCursorError, LocalTrackerInputError, NotLocalRefError } from "./errors.js";
export { LOCAL_LIMITS, LOGIN_PATTERN, SELF_LOGIN, checkActor } from "./limits.js";
export { CHECK_LOG_MAX_BYTES } from "./item-events.js";
export type { CheckInput } from "./item-events.js";
export { DatabaseLocalTracker, databaseItemsUrl, localTitlesOf, openLocalTracker, trackerLockKey } from "./database-tracker.js";
export type { DatabaseTrackerOptions } from "./database-tracker.js";
export { copyTrackerToDatabase } from "./database-copy.js";
export { damagedTrackerRows } from "./database-scan.js";
export type { DamagedTrackerRow } from "./database-scan.js";
export type { TrackerCopyCount } from "./database-copy.js";
