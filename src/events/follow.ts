import { setTimeout as delay } from "node:timers/promises";
import { messageOf } from "../errors.js";
import { LogCursor } from "./cursor.js";
import { LineReader, RingBuffer, eventMatcher } from "./reader.js";
import type { EventFilter, EventRecord } from "./reader.js";

/**
 * `tail -F` for the event log: the last matches already written, then every new match as it is
 * appended, until the signal aborts. It polls the file's size rather than relying on fs.watch,
 * which misses events on network filesystems and across rotation; and it survives everything an
 * external logrotate does (truncate, remove, replace) by reading the new file from its start.
 */

export const DEFAULT_FOLLOW_INTERVAL_MS = 250;

/** Something worth telling the person watching; none of it stops the follower. */
export type FollowNotice =
  | { readonly kind: "missing" } // no file yet: waiting for it
  | { readonly kind: "appeared" }
  | { readonly kind: "removed" }
  | { readonly kind: "truncated" }
  | { readonly kind: "replaced" }
  | { readonly kind: "malformed"; readonly count: number }
  | { readonly kind: "unreadable"; readonly message: string };

export interface FollowOptions {
  /** How many of the matches already in the file to deliver first (0: only new ones; Infinity: all). */
  readonly backlog?: number;
  readonly intervalMs?: number;
  readonly onNotice?: (notice: FollowNotice) => void;
  /** Called once, after the backlog is delivered: from here on every event is one appended since. */
  readonly onCaughtUp?: () => void;
}

/** One line a person can read for a notice, naming the log as `path`. */
export function describeFollowNotice(notice: FollowNotice, path: string): string {
  switch (notice.kind) {
    case "missing":
      return `no events yet: ${path} does not exist; waiting for it to be created`;
    case "appeared":
      return `${path} was created; reading it from the start`;
    case "removed":
      return `${path} was removed; waiting for it to be created again`;
    case "truncated":
      return `${path} was truncated; reading it again from the start`;
    case "replaced":
      return `${path} was replaced (rotated?); reading the new file from the start`;
    case "malformed":
      return `skipped ${notice.count} malformed line${notice.count === 1 ? "" : "s"} in ${path}`;
    case "unreadable":
      return `cannot read ${path}: ${notice.message}; retrying`;
  }
}

/**
 * Delivers matching events to `onEvent` until `signal` aborts, then resolves. Never rejects for
 * trouble with the file (that becomes a notice and a retry); an exception thrown by `onEvent` or
 * `onNotice` ends the follow and rejects.
 */
export async function followEvents(
  path: string,
  filter: EventFilter,
  onEvent: (record: EventRecord) => void,
  signal: AbortSignal,
  options: FollowOptions = {},
): Promise<void> {
  const notify = options.onNotice ?? (() => undefined);
  const intervalMs = options.intervalMs ?? DEFAULT_FOLLOW_INTERVAL_MS;
  const matches = eventMatcher(filter);
  const cursor = new LogCursor(path);

  const backlog = new RingBuffer<EventRecord>(options.backlog ?? 0);
  const initial = new LineReader(matches, (record) => backlog.push(record));
  // The callback runs inside a poll; its failure must end the follow, not pass for a read error.
  let callbackFailure: { readonly error: unknown } | undefined;
  const live = new LineReader(matches, (record) => {
    try {
      onEvent(record);
    } catch (error) {
      callbackFailure = { error };
      throw error;
    }
  });

  let reader = initial;
  let lastUnreadable: string | undefined;
  let toldMissing = false;
  while (!signal.aborted) {
    let polled = false;
    try {
      const change = await cursor.poll(reader);
      polled = true;
      lastUnreadable = undefined;
      if (change === "missing") {
        if (!toldMissing) notify({ kind: "missing" });
        toldMissing = true;
      } else if (change !== "read" && change !== "unchanged") {
        notify({ kind: change });
      }
    } catch (error) {
      if (callbackFailure) throw callbackFailure.error;
      const message = messageOf(error);
      if (message !== lastUnreadable) notify({ kind: "unreadable", message });
      lastUnreadable = message;
    }
    if (reader === initial && polled) {
      // The first complete pass is over: what it kept is the backlog, and all after it is live.
      reportMalformed(initial, notify);
      for (const record of backlog.toArray()) onEvent(record);
      reader = live;
      options.onCaughtUp?.();
    } else {
      reportMalformed(reader, notify);
    }
    await pause(intervalMs, signal);
  }
}

function reportMalformed(reader: LineReader, notify: (notice: FollowNotice) => void): void {
  const count = reader.takeMalformed();
  if (count > 0) notify({ kind: "malformed", count });
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch {
    // Aborted: the loop condition ends the follow.
  }
}
