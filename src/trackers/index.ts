export { WorkItemNotFoundError } from "./tracker.js";
export type {
  ChangeBatch,
  ItemState,
  Tracker,
  TrackerChange,
  TrackerChangeKind,
  TrackerComment,
  TrackerScope,
  WorkItemState,
} from "./tracker.js";
export {
  CorruptTrackerFileError,
  InvalidCursorError,
  LOCAL_LIMITS,
  LocalTracker,
  LocalTrackerInputError,
  NotLocalRefError,
  SELF_LOGIN,
} from "./local/index.js";
export type {
  LabelChange,
  LabelChangeResult,
  ListItemsFilter,
  LocalItem,
  LocalTrackerOptions,
  OpenItemInput,
  StateChangeResult,
} from "./local/index.js";
