import { randomUUID } from "node:crypto";
import { IncomingMessage, createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { GITHUB_WEBHOOK_EVENTS } from "../../config/schema.js";
import type { GhWebhookConfig } from "../../config/schema.js";
import { EXIT_FAILURE, ExitError, errnoOf, messageOf } from "../../errors.js";
import type { EventFields } from "../../events/catalog.js";
import type { EventSink } from "../../events/log.js";
import { DeliveryLru } from "../../routing/dedupe.js";
import type { InboundEvent } from "../../routing/inbound.js";
import { inboundFromGitHub } from "../github-events.js";
import type { EventHandler, HandleResult } from "../poller.js";
import { ACCEPTED, IGNORED, OK, REJECTIONS, WebhookResponse } from "./answers.js";
import type { Reply, WebhookRejection } from "./answers.js";
import { BodyBudget, BodySignature, isIdentityEncoding, utf8Text } from "./body.js";
import type { BodyReservation } from "./body.js";
import { webhookSecret } from "./secret.js";
import type { WebhookSecret } from "./secret.js";

/**
 * Push ingress: GitHub's webhook deliveries on plain node:http. A delivery is checked (size,
 * signature, JSON, dedupe), normalized, acknowledged with 202 at once and only then handed to
 * the handler, so GitHub's 10-second delivery timeout never depends on a spawn; handing out
 * happens in arrival order, which keeps each work item's events in order. Every refusal is
 * answered with its status and recorded as `webhook.rejected`; nothing secret is ever echoed.
 */

export interface WebhookReceiverOptions {
  readonly config: GhWebhookConfig;
  readonly handler: EventHandler;
  readonly events: EventSink;
  /** Where the secret variable is read from at start (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
  /** Ref host for payloads that carry no html_url. */
  readonly defaultHost?: string;
  /** How many recent delivery ids are remembered for dedupe (default 4096). */
  readonly dedupeSize?: number;
  /** How long stop() lets open requests finish before cutting their connections (default 10 s). */
  readonly stopGraceMs?: number;
  /** How long one request (headers and body) may take to arrive before it is cut off with 408 (default 30 s). */
  readonly requestTimeoutMs?: number;
  /**
   * Bytes every body in flight may hold together before any signature is checked; a body that
   * does not fit is refused with 503 and Retry-After (default the larger of maxBodyBytes and 64 MiB).
   */
  readonly bodyBudgetBytes?: number;
  /** How much of a refused upload is read and thrown away so its sender can read the answer (default 64 MiB). */
  readonly drainBytes?: number;
  /** How long a refused upload is read and thrown away before its connection is cut (default 5 s). */
  readonly drainMs?: number;
}

export interface WebhookAddress {
  readonly host: string;
  readonly port: number;
}

export type { WebhookRejection } from "./answers.js";

export const DEFAULT_DEDUPE_SIZE = 4_096;
const DEFAULT_STOP_GRACE_MS = 10_000;
// GitHub gives up on a delivery after ten seconds, so a request still arriving after thirty is
// not GitHub's. node:http's own limits (five minutes for a request, one for its headers, checked
// every thirty seconds) would let a sender that trickles a body hold up to maxBodyBytes of memory
// per connection for minutes before any signature can be checked, and a connection that sends
// nothing hold one of the daemon's file descriptors for up to ninety seconds.
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const MAX_HEADERS_TIMEOUT_MS = 10_000;
const MIB = 1024 * 1024;
const MIN_BODY_BUDGET_BYTES = 64 * MIB;
// A sender cut off mid-upload often never reads the answer (the reset discards it), so a refused
// upload is read and thrown away — bounded, so that this is no way to keep a connection busy.
const DEFAULT_DRAIN_BYTES = 64 * MIB;
const DEFAULT_DRAIN_MS = 5_000;
const MAX_TIMEOUT_CHECK_INTERVAL_MS = 1_000;
const HEALTH_PATHS: ReadonlySet<string> = new Set(["/healthz", "/health"]);
const SUPPORTED_EVENTS: ReadonlySet<string> = new Set(GITHUB_WEBHOOK_EVENTS);
const SETTLED: HandleResult = { settled: true };

/** Work that follows an answer, done after the answers of the same pass are out. */
type Deferred =
  | { readonly type: "webhook.received"; readonly fields: EventFields<"webhook.received">; readonly event: InboundEvent }
  | { readonly type: "webhook.ignored"; readonly fields: EventFields<"webhook.ignored"> }
  | { readonly type: "webhook.rejected"; readonly fields: EventFields<"webhook.rejected"> };

export class WebhookReceiver {
  private readonly config: GhWebhookConfig;
  private readonly enabled: ReadonlySet<string>;
  private readonly seen: DeliveryLru;
  private readonly budget: BodyBudget;
  /** Connections whose answer is out while the rest of a refused upload is thrown away. */
  private readonly draining = new WeakSet<Duplex>();
  private server: Server | undefined;
  private secret: WebhookSecret = { mode: "unsigned" };
  private listening: WebhookAddress | undefined;
  private stopping = false;
  private stopped: Promise<void> | undefined;
  // A keep-alive answer is chosen at once and written at the end of the pass of the event loop
  // that read its request, together with the answers to every other request of that pass: each
  // write on loopback wakes the sender, and a burst of writes wakes it once where writes spread
  // over the pass woke it each time (the server's CPU per ack, bench/webhook-ack.ts: about 0.85×
  // with the same work done). What follows an answer — its event-log line and, for an accepted
  // delivery, handing it out — comes after the pass's answers are out, so the log's synchronous
  // append is never between a sender and its 202. The order of arrival is kept.
  private answering: WebhookResponse[] = [];
  private pending: Deferred[] = [];
  private flushScheduled = false;
  private readonly flushNow = (): void => this.flush();
  private readonly onRequest = (req: WebhookRequest, res: WebhookResponse): void => this.route(req, res);

  constructor(private readonly options: WebhookReceiverOptions) {
    this.config = options.config;
    this.enabled = new Set(options.config.events);
    this.seen = new DeliveryLru(options.dedupeSize ?? DEFAULT_DEDUPE_SIZE);
    this.budget = new BodyBudget(options.bodyBudgetBytes ?? Math.max(options.config.maxBodyBytes, MIN_BODY_BUDGET_BYTES));
  }

  /** Whether deliveries must be signed; false only in insecure mode, once started. */
  get verified(): boolean {
    return this.secret.mode === "signed";
  }

  /** Where it listens, once started. */
  get address(): WebhookAddress | undefined {
    return this.listening;
  }

  /**
   * Reads the secret and listens. Rejects (WebhookSecretError, exit 2) when the secret variable
   * is unset and unsigned deliveries are not allowed, and when the address cannot be bound.
   */
  async start(): Promise<WebhookAddress> {
    if (this.server) throw new Error("the webhook receiver is already started");
    const secret = webhookSecret(this.config, this.options.env ?? process.env);
    const requestTimeout = this.options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const server = createServer(
      {
        IncomingMessage: WebhookRequest,
        ServerResponse: WebhookResponse,
        keepAlive: true,
        noDelay: true,
        requestTimeout,
        headersTimeout: Math.min(MAX_HEADERS_TIMEOUT_MS, requestTimeout),
        connectionsCheckingInterval: Math.max(50, Math.min(MAX_TIMEOUT_CHECK_INTERVAL_MS, Math.floor(requestTimeout / 4))),
      },
      this.onRequest,
    );
    await new Promise<void>((resolve, reject) => {
      const failed = (error: Error): void => {
        reject(
          new ExitError(
            `the webhook receiver cannot listen on ${this.config.host}:${this.config.port}: ${
              errnoOf(error) === "EADDRINUSE" ? "the address is in use" : messageOf(error)
            } (webhooks.ghWebhook.host and .port)`,
            EXIT_FAILURE,
          ),
        );
      };
      server.once("error", failed);
      server.listen(this.config.port, this.config.host, () => {
        server.off("error", failed);
        resolve();
      });
    });
    // A listening server reports later socket errors (a failed accept when out of descriptors) here
    // rather than crashing the daemon; each is recorded, and the receiver keeps listening.
    server.on("error", (error: Error) => this.options.events.emit("webhook.server_error", { error: messageOf(error) }));
    server.on("clientError", (error: Error & { code?: string }, socket: Duplex) => this.clientError(error, socket));
    const bound = server.address() as AddressInfo;
    this.server = server;
    this.secret = secret;
    this.stopping = false;
    this.listening = { host: bound.address, port: bound.port };
    const verified = secret.mode === "signed";
    if (!verified) this.options.events.emit("webhook.insecure", { secret_env: this.config.secretEnv });
    this.options.events.emit("webhook.listening", { host: bound.address, port: bound.port, path: this.config.path, verified });
    return this.listening;
  }

  /**
   * Stops accepting connections, lets requests already in progress finish (answered with
   * `Connection: close`), then hands every acknowledged delivery to the handler before it
   * resolves — so draining the handler afterwards carries all of them out.
   */
  stop(): Promise<void> {
    // A second caller waits for the same shutdown rather than closing a closing server.
    this.stopped ??= this.shutDown().finally(() => {
      this.stopped = undefined;
    });
    return this.stopped;
  }

  private async shutDown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.stopping = true;
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => server.closeAllConnections(), this.options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
      force.unref();
      server.close(() => {
        clearTimeout(force);
        resolve();
      });
      server.closeIdleConnections();
    });
    this.server = undefined;
    this.listening = undefined;
    this.flush();
  }

  /**
   * What node:http would answer on its own, plus the record of it: a request cut off by the
   * request timeout is a refusal like any other (`timeout`); a connection that is not speaking
   * HTTP is closed without one.
   */
  private clientError(error: Error & { code?: string }, socket: Duplex): void {
    // Answered already; what is left of its upload is being thrown away.
    if (this.draining.has(socket)) {
      socket.destroy();
      return;
    }
    const timedOut = error.code === "ERR_HTTP_REQUEST_TIMEOUT";
    const overflow = error.code === "HPE_HEADER_OVERFLOW";
    if (timedOut) this.defer({ type: "webhook.rejected", fields: { reason: "timeout", status: 408 } });
    if (overflow) this.defer({ type: "webhook.rejected", fields: { reason: "headers-too-large", status: 431 } });
    if (socket.writable && error.code !== "ECONNRESET") {
      socket.end(
        timedOut
          ? "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n"
          : overflow
            ? "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
            : "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n",
      );
    }
    socket.destroy();
  }

  private route(req: WebhookRequest, res: WebhookResponse): void {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    const path = query === -1 ? url : url.slice(0, query);
    const method = req.method;
    if ((method === "GET" || method === "HEAD") && HEALTH_PATHS.has(path)) {
      this.send(res, OK, hasBody(req));
      return;
    }
    if (path !== this.config.path) {
      this.reject(req, res, "not-found", hasBody(req));
      return;
    }
    if (method !== "POST") {
      this.reject(req, res, "method-not-allowed", hasBody(req));
      return;
    }
    this.receive(req, res);
  }

  /**
   * Reads a delivery's body, holding at most maxBodyBytes of it and only what the shared budget
   * has room for; the signature is computed over the raw bytes as they arrive. A refusal is
   * answered at once (the rest of the upload is thrown away, see send()).
   */
  private receive(req: WebhookRequest, res: WebhookResponse): void {
    // A compressed body is never inflated: that would be unbounded work before any signature.
    if (!isIdentityEncoding(headerOf(req, "content-encoding"))) return this.reject(req, res, "unsupported-content-encoding", true);
    const max = this.config.maxBodyBytes;
    const length = req.headers["content-length"];
    // node:http refuses a malformed Content-Length itself; a number is all that gets here.
    const declared = length === undefined || !/^\d+$/.test(length) ? 0 : Number(length);
    // Refused before a byte is read.
    if (declared > max) return this.reject(req, res, "body-too-large", true);
    const reservation = this.budget.open(declared);
    if (reservation === undefined) return this.reject(req, res, "overloaded", true);
    const signature = this.secret.mode === "signed" ? new BodySignature(this.secret.secret) : undefined;
    req.reading = new Reading(this, res, reservation, signature);
    // The same four functions for every request, which find its Reading: no closures per request.
    req.on("data", WebhookReceiver.onData);
    req.on("end", WebhookReceiver.onEnd);
    // A sender that goes away mid-body leaves nothing to answer, and gives its bytes back.
    req.on("close", WebhookReceiver.onClose);
    req.on("error", ignoreError);
  }

  private static onData(this: WebhookRequest, chunk: Buffer): void {
    const reading = this.reading;
    if (reading === undefined || reading.done) return;
    const size = reading.size + chunk.length;
    reading.size = size;
    const receiver = reading.receiver;
    const max = receiver.config.maxBodyBytes;
    if (size > max || !reading.reservation.cover(size)) {
      reading.finish();
      receiver.reject(this, reading.res, size > max ? "body-too-large" : "overloaded", true);
      return;
    }
    reading.chunks.push(chunk);
    reading.signature?.update(chunk);
  }

  private static onEnd(this: WebhookRequest): void {
    const reading = this.reading;
    if (reading === undefined || reading.done) return;
    const chunks = reading.chunks;
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, reading.size);
    const receiver = reading.receiver;
    try {
      receiver.deliver(this, reading.res, body, reading.signature);
    } catch (error) {
      // Only a bug gets here; the sender still gets an answer.
      if (!reading.res.answered) receiver.reject(this, reading.res, "invalid-payload", false);
      receiver.options.events.emit("dispatch.failed", {
        work_item: "",
        delivery_id: headerOf(this, "x-github-delivery") ?? "",
        action: "receive",
        error: messageOf(error),
        will_retry: false,
      });
    } finally {
      reading.finish();
    }
  }

  private static onClose(this: WebhookRequest): void {
    this.reading?.finish();
  }

  private deliver(req: IncomingMessage, res: WebhookResponse, body: Buffer, signature: BodySignature | undefined): void {
    const verified = signature !== undefined;
    if (signature !== undefined) {
      const header = headerOf(req, "x-hub-signature-256");
      if (header === undefined) return this.reject(req, res, "missing-signature", false);
      if (!signature.matches(header)) return this.reject(req, res, "invalid-signature", false);
    }
    const raw = utf8Text(body);
    if (raw === undefined) return this.reject(req, res, "not-utf8", false);
    const name = headerOf(req, "x-github-event");
    if (name === undefined) return this.reject(req, res, "invalid-payload", false);
    const payload = parsePayload(raw, req.headers["content-type"]);
    if (payload === undefined) return this.reject(req, res, "invalid-payload", false);
    const deliveryId = headerOf(req, "x-github-delivery") ?? `webhook-${randomUUID()}`;
    if (this.seen.has(deliveryId)) return this.reject(req, res, "duplicate-delivery", false);
    if (SUPPORTED_EVENTS.has(name) && !this.enabled.has(name)) return this.ignore(res, deliveryId, name, "disabled-event");
    const defaultHost = this.options.defaultHost;
    const result = inboundFromGitHub(
      name,
      payload,
      defaultHost === undefined ? { deliveryId, source: "gh-webhook" } : { deliveryId, source: "gh-webhook", defaultHost },
    );
    if ("rejected" in result) return this.reject(req, res, "invalid-payload", false, result.rejected);
    if (!("event" in result)) return this.ignore(res, deliveryId, name, result.ignored);
    this.seen.add(deliveryId);
    this.send(res, ACCEPTED, false);
    const fields = { delivery_id: deliveryId, github_event: name, action: actionOf(payload), bytes: body.length, verified };
    this.defer({ type: "webhook.received", fields, event: result.event });
  }

  private defer(work: Deferred): void {
    this.pending.push(work);
    this.schedule();
  }

  private schedule(): void {
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushNow);
    }
  }

  /**
   * Writes the pass's answers, then records what was answered and hands accepted deliveries to
   * the handler, in arrival order (handle() queues synchronously, so call order is queue order).
   */
  private flush(): void {
    this.flushScheduled = false;
    const answering = this.answering;
    if (answering.length > 0) {
      this.answering = [];
      for (const res of answering) {
        const answer = res.answer;
        res.answer = undefined;
        if (answer !== undefined) this.write(res, answer, false);
      }
    }
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    // The pass's lines go to the event log in one write, in this order, before flush returns.
    const events = this.options.events;
    if (events.batch !== undefined) events.batch(() => this.carryOut(batch));
    else this.carryOut(batch);
  }

  private carryOut(batch: readonly Deferred[]): void {
    const events = this.options.events;
    for (const work of batch) {
      switch (work.type) {
        case "webhook.received":
          events.emit(work.type, work.fields);
          this.handOut(work.event);
          break;
        case "webhook.ignored":
          events.emit(work.type, work.fields);
          break;
        case "webhook.rejected":
          events.emit(work.type, work.fields);
          break;
      }
    }
  }

  private handOut(event: InboundEvent): void {
    let outcome: Promise<HandleResult>;
    try {
      outcome = this.options.handler.handle(event);
    } catch (error) {
      this.handlingFailed(event, error);
      return;
    }
    outcome.then(
      (result = SETTLED) => {
        // GitHub will not send it again on its own, but a person may redeliver it: let that through.
        if (!result.settled) this.seen.delete(event.deliveryId);
      },
      (error: unknown) => this.handlingFailed(event, error),
    );
  }

  private handlingFailed(event: InboundEvent, error: unknown): void {
    this.seen.delete(event.deliveryId);
    this.options.events.emit("dispatch.failed", {
      work_item: event.workItems[0]?.ref ?? "",
      delivery_id: event.deliveryId,
      action: "handle",
      error: messageOf(error),
      will_retry: false,
    });
  }

  private ignore(res: WebhookResponse, deliveryId: string, event: string, reason: string): void {
    this.send(res, IGNORED, false);
    this.defer({ type: "webhook.ignored", fields: { delivery_id: deliveryId, github_event: event, reason } });
  }

  private reject(req: IncomingMessage, res: WebhookResponse, reason: WebhookRejection, close: boolean, detail?: string): void {
    const answer = REJECTIONS[reason];
    this.send(res, answer, close);
    const fields = {
      reason,
      status: answer.status,
      delivery_id: headerOf(req, "x-github-delivery"),
      github_event: headerOf(req, "x-github-event"),
      ...(detail === undefined ? {} : { detail }),
    };
    this.defer({ type: "webhook.rejected", fields });
  }

  /** Answers `res`: at once when the connection closes after it, else at the end of the pass (see `answering`). */
  private send(res: WebhookResponse, answer: Reply, close: boolean): void {
    if (res.answered) return;
    if (close || this.stopping) {
      this.write(res, answer, true);
      return;
    }
    res.answer = answer;
    this.answering.push(res);
    this.schedule();
  }

  private write(res: WebhookResponse, answer: Reply, close: boolean): void {
    const closing = close || this.stopping;
    res.writeHead(answer.status, closing ? answer.closing : answer.headers);
    if (!closing || res.req.complete) {
      res.end(answer.body);
      return;
    }
    // The sender may still be uploading. Closing now would reset the connection under it, and a
    // reset often discards the answer before the sender reads it: the answer goes out whole, the
    // rest of the upload is read and thrown away (up to drainBytes, for up to drainMs), and only
    // then is the connection closed.
    res.write(answer.body);
    this.drain(res.req, res);
  }

  private drain(req: IncomingMessage, res: WebhookResponse): void {
    const socket = req.socket;
    this.draining.add(socket);
    const limit = this.options.drainBytes ?? DEFAULT_DRAIN_BYTES;
    let drained = 0;
    const count = (chunk: Buffer): void => {
      drained += chunk.length;
      if (drained > limit) cut();
    };
    const finish = (): void => {
      clearTimeout(timer);
      req.off("data", count);
      if (!res.writableEnded) res.end();
    };
    const cut = (): void => {
      finish();
      socket.destroy();
    };
    const timer = setTimeout(cut, this.options.drainMs ?? DEFAULT_DRAIN_MS);
    timer.unref();
    req.on("data", count);
    req.once("end", finish);
    req.once("close", finish);
    req.resume();
  }
}

/** A delivery's body being read (see WebhookReceiver.receive). */
class Reading {
  chunks: Buffer[] = [];
  size = 0;
  done = false;

  constructor(
    readonly receiver: WebhookReceiver,
    readonly res: WebhookResponse,
    readonly reservation: BodyReservation,
    readonly signature: BodySignature | undefined,
  ) {}

  /** Done with: the bytes are given back to the budget; a second call does nothing. */
  finish(): void {
    this.done = true;
    this.chunks = [];
    this.reservation.release();
  }
}

/**
 * A request that carries its body's Reading itself. A WeakMap from request to Reading cost about
 * 17 µs of server CPU per delivery under load (measured in bench/webhook-ack.ts): every request
 * became an ephemeron key, and the old-space collections that cleared them ran about ten times as
 * often as without.
 */
class WebhookRequest extends IncomingMessage {
  reading: Reading | undefined = undefined;
}

function ignoreError(): void {
  // A request's stream errors when its sender goes away; its 'close' gives the bytes back.
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** Whether a request carries a body we would rather not read (answered with the connection closed). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return (length !== undefined && length !== "0") || req.headers["transfer-encoding"] !== undefined;
}

/**
 * The payload as JSON, or undefined. GitHub sends `application/json`, or — when the hook is set
 * to `application/x-www-form-urlencoded` — the JSON in a `payload` form field.
 */
function parsePayload(raw: string, contentType: string | undefined): unknown {
  let text: string | null = raw;
  if (contentType !== undefined && contentType.startsWith("application/x-www-form-urlencoded")) {
    text = new URLSearchParams(raw).get("payload");
  }
  if (text === null || text === "") return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value === null ? undefined : value;
  } catch {
    return undefined;
  }
}

function actionOf(payload: unknown): string | undefined {
  const action = typeof payload === "object" && payload !== null && "action" in payload ? payload.action : undefined;
  return typeof action === "string" ? action : undefined;
}
