import type { PoolClient } from "pg";
import { messageOf } from "../../errors.js";
import type { PostgresDatabase } from "../../state/index.js";

/**
 * Live change detection of the local tracker on PostgreSQL: one pooled connection held for
 * `LISTEN <channel>`, each announcement handed on (a burst told once, `debounceMs` after it began,
 * as the journal watcher on files does). A lost connection is reported once through
 * `onUnwatchable` — changes are then seen at the poll interval — and the watch connects again after
 * `reconnectMs`. Returns the function that stops it; never throws.
 */

export interface AnnouncementWatchOptions {
  readonly debounceMs?: number;
  readonly reconnectMs?: number;
}

export function watchAnnouncements(
  database: PostgresDatabase,
  channel: string,
  onAnnouncement: (payload: unknown) => void,
  onUnwatchable: (problem: string) => void,
  options: AnnouncementWatchOptions = {},
): () => void {
  const debounceMs = options.debounceMs ?? 50;
  let stopped = false;
  let reported = false;
  let client: PoolClient | undefined;
  let timer: NodeJS.Timeout | undefined;
  let retry: NodeJS.Timeout | undefined;
  let payloads: unknown[] = [];

  const tell = (): void => {
    timer = undefined;
    const told = payloads;
    payloads = [];
    if (stopped) return;
    for (const payload of told) {
      try {
        onAnnouncement(payload);
      } catch {
        // The listener's own failure is its to report; the watch goes on.
      }
    }
  };

  const failed = (error: unknown): void => {
    if (!reported) {
      reported = true;
      try {
        onUnwatchable(`cannot listen for local tracker changes in the state database: ${messageOf(error)}`);
      } catch {
        // A reporter that fails has nobody left to tell.
      }
    }
    if (!stopped) {
      retry = setTimeout(connect, options.reconnectMs ?? 1_000);
      retry.unref();
    }
  };

  const lost = (held: PoolClient, error: unknown): void => {
    if (client !== held) return;
    client = undefined;
    // A connection that failed is closed, not reused.
    held.release(error instanceof Error ? error : new Error(String(error)));
    failed(error);
  };

  function connect(): void {
    retry = undefined;
    database.connect().then(async (held) => {
      if (stopped) {
        held.release();
        return;
      }
      client = held;
      held.on("error", (error) => lost(held, error));
      held.on("notification", (message) => {
        if (message.channel !== channel) return;
        let payload: unknown;
        try {
          payload = JSON.parse(message.payload ?? "");
        } catch {
          // Not an announcement of ours: nothing to tell.
          return;
        }
        payloads.push(payload);
        if (timer === undefined) {
          timer = setTimeout(tell, debounceMs);
          timer.unref();
        }
      });
      try {
        await held.query(`LISTEN ${channel}`);
        // Whatever changed before the LISTEN was in place is read by the next poll; told now so it is soon.
        payloads.push({});
        if (timer === undefined) {
          timer = setTimeout(tell, debounceMs);
          timer.unref();
        }
      } catch (error) {
        lost(held, error);
      }
    }, failed);
  }

  connect();
  return () => {
    stopped = true;
    clearTimeout(timer);
    clearTimeout(retry);
    const held = client;
    client = undefined;
    if (held !== undefined) {
      held.query(`UNLISTEN ${channel}`).then(
        () => held.release(),
        (error: unknown) => held.release(error instanceof Error ? error : new Error(String(error))),
      );
    }
  };
}
