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
