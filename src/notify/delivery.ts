import { setTimeout as delay } from "node:timers/promises";
import type { NotifySinkConfig } from "../config/notify-schema.js";
import type { EventSink } from "../events/log.js";
import { messageOf } from "../errors.js";
import { redactKnownSecrets, rememberSecret } from "../secrets.js";

/**
 * Delivery of notifications to one sink: a bounded FIFO queue and one worker that posts its head,
 * retries it with exponential backoff (bounded by `maxAttempts`), and moves on. `offer` only
 * queues, so whatever emits an event — the dispatcher above all — never waits for a sink; a sink
 * that is slow or down holds up only its own queue. Every try ends in an event: `notify.sent`,
 * or `notify.failed` with `will_retry`.
 *
 * The sink's URL is a secret: it is read from its variable at each try (a rotated URL needs no
 * restart), remembered as a secret at once (src/secrets.ts), and named in no message, event or
 * error: those say the sink's name and the variable's.
 */

/** What a POST came back with. */
export interface PostResult {
  readonly status: number;
  /** A 429's or 503's Retry-After, in seconds. */
  readonly retryAfterSeconds?: number;
}

/** Posts a JSON body. Rejects for a network error or a timeout, with a message that never holds the URL. */
export interface NotifyTransport {
  post(url: URL, body: string, timeoutMs: number, signal: AbortSignal): Promise<PostResult>;
}

export interface RetrySettings {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/** What to do after one try. */
export type TryOutcome =
  | { readonly kind: "sent"; readonly status: number }
  | { readonly kind: "retry"; readonly error: string; readonly afterMs?: number }
  | { readonly kind: "give-up"; readonly error: string };

/**
 * A POST's answer, judged: 2xx is taken; 408, 429 and 5xx say "later" (a 429's Retry-After is
 * honoured); any other status — a redirect, which is never followed, a 404 of a deleted webhook,
 * a 400 of a body refused — will not change by trying again.
 */
export function judgeAnswer(result: PostResult, sink: string): TryOutcome {
  const { status } = result;
  if (status >= 200 && status <= 299) return { kind: "sent", status };
  const error = `the sink ${sink} answered HTTP ${status}${status >= 300 && status <= 399 ? " (a redirect, which is not followed)" : ""}`;
  if (status === 408 || status === 429 || (status >= 500 && status <= 599)) {
    return result.retryAfterSeconds !== undefined ? { kind: "retry", error, afterMs: result.retryAfterSeconds * 1000 } : { kind: "retry", error };
  }
  return { kind: "give-up", error };
}

/** The wait before try `attempt + 1` (attempt counts from 1): doubling from the first delay, at most the last, a Retry-After counted. */
export function backoffMs(attempt: number, settings: RetrySettings, afterMs?: number): number {
  const doubled = settings.initialDelayMs * 2 ** Math.max(0, attempt - 1);
  return Math.min(settings.maxDelayMs, Math.max(doubled, afterMs ?? 0));
}

/** Whether `host` is this machine: plain http is allowed there alone. */
function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || hostname === "::1" || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/** The sink's URL from its variable, or why there is none (naming the variable, never the value). */
export function sinkUrl(sink: Pick<NotifySinkConfig, "name" | "urlEnv">, env: NodeJS.ProcessEnv): URL | string {
  const value = env[sink.urlEnv];
  if (value === undefined || value.trim() === "") {
    return `${sink.urlEnv} (the URL of the sink ${sink.name}) is unset or empty in the daemon's environment; set it and restart the daemon`;
  }
  rememberSecret(value);
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return `${sink.urlEnv} (the URL of the sink ${sink.name}) holds no URL`;
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopback(url.hostname))) {
    return `${sink.urlEnv} (the URL of the sink ${sink.name}) is not https:// (plain http:// is for a loopback host only)`;
  }
  return url;
}

/** One notification waiting for its sink. */
export interface Delivery {
  readonly moment: string;
  readonly workItem: string;
  readonly eventType: string;
  readonly body: Readonly<Record<string, unknown>>;
}

export interface SinkQueueOptions {
  readonly sink: NotifySinkConfig;
  readonly retry: RetrySettings;
  readonly queueLimit: number;
  readonly transport: NotifyTransport;
  readonly events: EventSink;
  readonly env?: NodeJS.ProcessEnv;
  /** Waits `ms` unless the signal aborts first (tests pass one that does not wait). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

async function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch {
    // Aborted: the worker sees the signal and gives up what is left.
  }
}

export class SinkQueue {
  private readonly waiting: Delivery[] = [];
  private readonly stopping = new AbortController();
  private worker: Promise<void> | undefined;
  private closed = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: SinkQueueOptions) {}

  get name(): string {
    return this.options.sink.name;
  }

  /** Queues a notification and returns at once; past the queue's limit the oldest waiting one is given up. */
  offer(delivery: Delivery): void {
    if (this.closed) {
      this.failed(delivery, 0, "the daemon is stopping, so it was not sent", false);
      return;
    }
    this.waiting.push(delivery);
    while (this.waiting.length > this.options.queueLimit) {
      const dropped = this.waiting.shift();
      if (dropped)
        this.failed(
          dropped,
          0,
          `the sink's queue was full (notify.queueLimit ${this.options.queueLimit}): the oldest waiting notification was given up`,
          false,
        );
    }
    this.kick();
  }

  /** Starts the worker unless it runs. */
  private kick(): void {
    if (this.worker !== undefined || this.waiting.length === 0) return;
    this.worker = this.work().finally(() => {
      this.worker = undefined;
      // One offered while the worker was finishing is taken by the next; idle only when none is left.
      if (this.waiting.length > 0) this.kick();
      else for (const wake of this.idleWaiters.splice(0)) wake();
    });
  }

  /** Resolves once nothing waits or is being posted. */
  idle(): Promise<void> {
    if (this.worker === undefined) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Takes no more, gives what waits up to `graceMs` to go out, then aborts the try under way and
   * gives up the rest (`notify.failed`, the daemon stopped).
   */
  async close(graceMs: number): Promise<void> {
    this.closed = true;
    if (this.worker !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.idle(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
    }
    this.stopping.abort();
    while (this.worker !== undefined) await this.worker;
  }

  private async work(): Promise<void> {
    for (let next = this.waiting.shift(); next !== undefined; next = this.waiting.shift()) {
      if (this.stopping.signal.aborted) this.failed(next, 0, "the daemon stopped before it was sent", false);
      else await this.deliver(next);
    }
  }

  private async deliver(delivery: Delivery): Promise<void> {
    const { sink, retry, transport } = this.options;
    const sleep = this.options.sleep ?? abortableSleep;
    const text = JSON.stringify(delivery.body);
    for (let attempt = 1; ; attempt++) {
      const url = sinkUrl(sink, this.options.env ?? process.env);
      if (typeof url === "string") return this.failed(delivery, attempt, url, false);
      let outcome: TryOutcome;
      try {
        outcome = judgeAnswer(await transport.post(url, text, sink.timeoutSeconds * 1000, this.stopping.signal), sink.name);
      } catch (error) {
        outcome = { kind: "retry", error: `the sink ${sink.name} could not be reached: ${messageOf(error)}` };
      }
      if (outcome.kind === "sent") {
        this.options.events.emit("notify.sent", {
          sink: sink.name,
          moment: delivery.moment,
          work_item: delivery.workItem,
          event_type: delivery.eventType,
          attempts: attempt,
          status: outcome.status,
        });
        return;
      }
      const stopped = this.stopping.signal.aborted;
      const again = outcome.kind === "retry" && attempt < sink.maxAttempts && !stopped;
      const error = stopped
        ? `${outcome.error}; the daemon stopped, so it is not tried again`
        : outcome.kind === "retry" && !again
          ? `${outcome.error}; ${attempt} tries, none taken`
          : outcome.error;
      this.failed(delivery, attempt, error, again);
      if (!again) return;
      await sleep(backoffMs(attempt, retry, outcome.kind === "retry" ? outcome.afterMs : undefined), this.stopping.signal);
      if (this.stopping.signal.aborted) return this.failed(delivery, attempt, "the daemon stopped before it was tried again", false);
    }
  }

  private failed(delivery: Delivery, attempt: number, error: string, willRetry: boolean): void {
    this.options.events.emit("notify.failed", {
      sink: this.options.sink.name,
      moment: delivery.moment,
      work_item: delivery.workItem,
      event_type: delivery.eventType,
      attempt,
      // Scrubbed here too: a network error's text is not the-loop's own.
      error: redactKnownSecrets(error),
      will_retry: willRetry,
    });
  }
}
