import { ServerResponse } from "node:http";
import type { IncomingMessage, OutgoingHttpHeaders } from "node:http";

/** The receiver's answers, each built once at load: the hot path only writes them. */

export type WebhookRejection =
  | "missing-signature"
  | "invalid-signature"
  | "body-too-large"
  | "overloaded"
  | "unsupported-content-encoding"
  | "not-utf8"
  | "invalid-payload"
  | "duplicate-delivery"
  | "not-found"
  | "method-not-allowed";

const RETRY_AFTER_SECONDS = "5";

/**
 * A response built once. The body is a string on purpose: Node sends a string body in one write
 * together with the headers, a Buffer in a second (writev).
 */
export interface Reply {
  readonly status: number;
  readonly body: string;
  readonly headers: OutgoingHttpHeaders;
  /** The same with `Connection: close`, for a refused body or a receiver shutting down. */
  readonly closing: OutgoingHttpHeaders;
}

function reply(status: number, value: unknown, extra: OutgoingHttpHeaders = {}): Reply {
  const body = JSON.stringify(value);
  const headers = { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), ...extra };
  return { status, body, headers, closing: { ...headers, connection: "close" } };
}

export const OK = reply(200, { status: "ok" });
export const ACCEPTED = reply(202, { status: "accepted" });
export const IGNORED = reply(202, { status: "ignored" });
const DUPLICATE = reply(202, { status: "duplicate" });
export const REJECTIONS: Readonly<Record<WebhookRejection, Reply>> = {
  "missing-signature": reply(401, { status: "rejected", reason: "missing-signature" }),
  "invalid-signature": reply(401, { status: "rejected", reason: "invalid-signature" }),
  "body-too-large": reply(413, { status: "rejected", reason: "body-too-large" }),
  overloaded: reply(503, { status: "rejected", reason: "overloaded" }, { "retry-after": RETRY_AFTER_SECONDS }),
  "unsupported-content-encoding": reply(415, { status: "rejected", reason: "unsupported-content-encoding" }),
  "not-utf8": reply(400, { status: "rejected", reason: "not-utf8" }),
  "invalid-payload": reply(400, { status: "rejected", reason: "invalid-payload" }),
  "duplicate-delivery": DUPLICATE,
  "not-found": reply(404, { status: "rejected", reason: "not-found" }),
  "method-not-allowed": reply(405, { status: "rejected", reason: "method-not-allowed" }, { allow: "POST" }),
};

/**
 * A response that carries the answer chosen for it until the answers of its pass of the event loop
 * are written together (WebhookReceiver.flush). On the response object itself, like the body's
 * reading on the request: a map keyed by response would make every response an ephemeron key.
 */
export class WebhookResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  answer: Reply | undefined = undefined;

  /** Whether an answer is chosen: written already, or waiting for the end of the pass. */
  get answered(): boolean {
    return this.answer !== undefined || this.headersSent;
  }
}
