import type { EventSink } from "../events/log.js";
import type { StatePaths } from "../state/layout.js";
import { parseWorkItemRef } from "../workitem/index.js";
import { LocalTracker } from "./local/index.js";
import type { Tracker } from "./tracker.js";

/** The trackers one process talks to, and which one owns a given work item. */
export interface TrackerSet {
  readonly local: LocalTracker;
  /** The tracker holding `ref`; throws UnsupportedTrackerError for a tracker not configured here. */
  forRef(ref: string): Tracker;
}

export class UnsupportedTrackerError extends Error {
  override readonly name: string = "UnsupportedTrackerError";
}

export function openTrackers(paths: StatePaths, events: EventSink): TrackerSet {
  const local = new LocalTracker({ trackerDir: paths.trackerDir, events });
  return {
    local,
    forRef(ref: string): Tracker {
      const parsed = parseWorkItemRef(ref);
      if (parsed.tracker === "local") return local;
      throw new UnsupportedTrackerError(`${ref}: the GitHub tracker is not available in this version of the-loop`);
    },
  };
}
