import type { CliConfig } from "../config/schema.js";
import type { NotifyConfig } from "../config/notify-schema.js";
import type { EventFields, EventType } from "../events/catalog.js";
import { followEvents } from "../events/follow.js";
import type { EventRecord } from "../events/reader.js";
import { RECORDED_BY } from "../events/table.js";
import type { SharedEventLog } from "../events/table.js";
import type { EventSink } from "../events/log.js";
import { messageOf } from "../errors.js";
import { SinkQueue, sinkUrl } from "./delivery.js";
import type { NotifyTransport } from "./delivery.js";
import { httpTransport } from "./http.js";
import { bodyFor, linkOf } from "./message.js";
import { noticeOf } from "./moments.js";
import type { MomentEvent, NotifyKeywords } from "./moments.js";

/**
 * The daemon's notifier: it watches the events the daemon's work records, turns the moments
 * among them into notices (moments.ts), shapes each for its sinks (message.ts) and queues it on
 * every sink that wants the moment (delivery.ts). Watching is two streams: the daemon's own
 * events as they are emitted (teeEvents), and the event log for what other processes of the
 * same state root record (a `the-loop graph force`, a CLI start), each read once.
 */

/** The keywords a notification names, from the config the daemon runs. */
export function notifyKeywordsOf(config: Pick<CliConfig, "graph" | "routing">): NotifyKeywords {
  return {
    approve: config.graph.keywords.approve,
    requestChanges: config.graph.keywords.requestChanges,
    start: config.routing.control.keywords.start,
    resume: config.routing.control.keywords.resume,
  };
}

export interface NotifierOptions {
  readonly config: NotifyConfig;
  readonly keywords: NotifyKeywords;
  /** `<state.root>/tracker`: a local item's link is its file there. */
  readonly localTrackerDir: string;
  /** With the local tracker in the state database: the URL of a project's items there (a link names no file). */
  readonly localItemsUrl?: (project: string) => string;
  readonly events: EventSink;
  readonly env?: NodeJS.ProcessEnv;
  readonly transport?: NotifyTransport;
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** How long queued notifications are given to go out when the daemon stops. */
export const STOP_GRACE_MS = 5_000;

export class Notifier {
  private readonly queues: SinkQueue[];
  private keywords: NotifyKeywords;

  constructor(private readonly options: NotifierOptions) {
    this.keywords = options.keywords;
    const { config } = options;
    const retry = { initialDelayMs: config.retry.initialDelaySeconds * 1000, maxDelayMs: config.retry.maxDelaySeconds * 1000 };
    this.queues = config.sinks.map(
      (sink) =>
        new SinkQueue({
          sink,
          retry,
          queueLimit: config.queueLimit,
          transport: options.transport ?? httpTransport,
          events: options.events,
          ...(options.env ? { env: options.env } : {}),
          ...(options.sleep ? { sleep: options.sleep } : {}),
        }),
    );
  }

  /** Whether any sink is configured: without one the daemon builds no notifier. */
  get active(): boolean {
    return this.queues.length > 0;
  }

  /**
   * What is wrong with the sinks' URLs as the daemon starts, one line each (naming the variable,
   * never a value). Reading them also makes their values known secrets before any text could quote them.
   */
  problems(): string[] {
    return this.options.config.sinks.map((sink) => sinkUrl(sink, this.options.env ?? process.env)).filter((url): url is string => typeof url === "string");
  }

  /** The keywords of a reloaded config (routing.control's apply at once). */
  setKeywords(keywords: NotifyKeywords): void {
    this.keywords = keywords;
  }

  /** Queues the notification `event` makes on every sink that wants its moment; returns at once. */
  observe(event: MomentEvent): void {
    const notice = noticeOf(event, this.keywords);
    if (notice === undefined) return;
    const link = linkOf(notice.workItem, this.options.localTrackerDir, this.options.localItemsUrl);
    this.options.config.sinks.forEach((sink, index) => {
      if (!sink.moments.includes(notice.moment)) return;
      this.queues[index]?.offer({ moment: notice.moment, workItem: notice.workItem, eventType: notice.eventType, body: bodyFor(sink.kind, notice, link) });
    });
  }

  /** Resolves once every sink's queue is empty (tests). */
  async idle(): Promise<void> {
    await Promise.all(this.queues.map((queue) => queue.idle()));
  }

  /** Stops taking notifications, gives what is queued `graceMs` to go out, and gives up the rest. */
  async close(graceMs: number = STOP_GRACE_MS): Promise<void> {
    await Promise.all(this.queues.map((queue) => queue.close(graceMs)));
  }
}

/**
 * `sink`, with every event it records also handed to `observe` (after it is written): the
 * daemon's own events reach the notifier as they happen, never through the file. Whatever
 * `observe` throws is kept from the caller, as a failed write of the log is.
 */
export function teeEvents(sink: EventSink, observe: (event: MomentEvent) => void, now: () => Date = () => new Date()): EventSink {
  const tee: EventSink = {
    emit<T extends EventType>(type: T, fields: EventFields<T>): void {
      sink.emit(type, fields);
      try {
        observe({ ...(fields as Record<string, unknown>), event: type, ts: now().toISOString() });
      } catch {
        // Recording an event never throws into its caller (events/log.ts): a notice that could not
        // be made is lost, the work that emitted the event goes on. observe only queues; this is a guard.
      }
    },
  };
  if (sink.batch) {
    const batch = sink.batch.bind(sink);
    tee.batch = <R>(work: () => R): R => batch(work);
  }
  return tee;
}

/**
 * Follows the event log from its end for the events other processes record (this process's
 * own come through teeEvents), handing each to `observe` until `signal` aborts. Resolves
 * `caughtUp` once it reads from the end: what is recorded after that is seen.
 */
export function followOtherProcesses(
  path: string,
  observe: (event: MomentEvent) => void,
  signal: AbortSignal,
  warn: (message: string) => void,
  table?: SharedEventLog,
): { readonly caughtUp: Promise<void>; readonly done: Promise<void> } {
  let markCaughtUp: () => void = () => undefined;
  const caughtUp = new Promise<void>((resolve) => (markCaughtUp = resolve));
  // On a shared table another host's daemon may have this process's pid: its own events are those with both.
  const own = (record: EventRecord): boolean => record.pid === process.pid && (table === undefined || record[RECORDED_BY] === table.writer);
  const onEvent = (record: EventRecord): void => {
    if (!own(record)) observe(record);
  };
  const options = { backlog: 0, onCaughtUp: () => markCaughtUp() };
  // state.store: postgres: the event log is the database's table, followed by LISTEN/NOTIFY.
  const following = table !== undefined ? table.follow({}, onEvent, signal, options) : followEvents(path, {}, onEvent, signal, options);
  const done = following.then(
    () => markCaughtUp(),
    (error: unknown) => {
      markCaughtUp();
      warn(`notifications stopped following the event log ${path}: ${messageOf(error)}`);
    },
  );
  return { caughtUp, done };
}
