import { Agent as HttpAgent, request as httpRequest } from "node:http";
import type { ClientRequest, IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { REDACTED, redactKnownSecrets, rememberSecret } from "../secrets.js";
import type { HookPoint } from "../sdk/hooks/catalog.js";
import { answerTopSchema, parseAnswer, rpcErrorSchema, rpcResponseSchema } from "./answer.js";
import { describe, isPlainObject } from "./values.js";
import type { RemoteHookEntry } from "./declaration.js";
import type { HookContext, HookExecutor } from "./types.js";

/**
 * A `url` entry: one JSON-RPC 2.0 POST per invocation, over node:http(s) with a keep-alive agent
 * of the executor's own. Nothing is sent at load; the first call opens the connection, and the
 * next calls reuse it (fetch was measured at four to five times the round trip on loopback).
 *
 * The bearer token is read from the environment at each call, so a rotated token needs no
 * restart, and it appears in no message: every error this executor raises names the endpoint by
 * its origin only and is scrubbed of the token's value before it leaves.
 */

/** A hook's answer is decisions, not a download: a reply larger than this is a failure. */
export const MAX_REPLY_BYTES = 1024 * 1024;
const MAX_REMOTE_MESSAGE = 300;
/** A hook's words are applied as a prompt or a question: bytes that are not UTF-8 are refused, not repaired. */
const utf8 = new TextDecoder("utf-8", { fatal: true });

export interface RemoteExecutorOptions {
  /** The points a remote entry without `on` runs at: every point of the catalog. */
  readonly points: readonly HookPoint[];
  /** Where tokenEnv is read, at each call (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
}

class RemoteHookExecutor implements HookExecutor {
  readonly name: string;
  readonly kind = "url" as const;
  readonly points: ReadonlySet<string>;
  readonly required: boolean;
  private nextId = 1;
  private readonly agent: HttpAgent;

  constructor(
    private readonly entry: RemoteHookEntry,
    private readonly options: RemoteExecutorOptions,
  ) {
    this.name = entry.name;
    this.points = new Set(entry.on ?? options.points.map((point) => point.name));
    this.required = entry.required;
    const https = entry.url.protocol === "https:";
    this.agent = https ? new HttpsAgent({ keepAlive: true, maxSockets: 8 }) : new HttpAgent({ keepAlive: true, maxSockets: 8 });
  }

  async invoke(point: HookPoint, context: HookContext): Promise<unknown> {
    const token = this.token();
    try {
      return await this.call(point, context, token);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // Not chained: the cause may quote the token (a server echoing it back), and a cause is logged whole.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(redactedText(message, token));
    }
  }

  /** Closes the kept-alive connections. */
  async close(): Promise<void> {
    this.agent.destroy();
  }

  private token(): string | undefined {
    const variable = this.entry.tokenEnv;
    if (variable === undefined) return undefined;
    const value = (this.options.env ?? process.env)[variable];
    if (value === undefined || value === "") throw new Error(`tokenEnv ${variable} is unset or empty; no request was sent`);
    // Known to the whole process: text quoting it may reach any sink (src/secrets.ts).
    rememberSecret(value);
    return value;
  }

  private async call(point: HookPoint, context: HookContext, token: string | undefined): Promise<unknown> {
    const id = this.nextId++;
    const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", method: point.name, params: context, id }), "utf8");
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(this.entry.headers)) headers[name.toLowerCase()] = value;
    headers["content-type"] = "application/json";
    headers["accept"] = "application/json";
    headers["content-length"] = String(body.byteLength);
    if (token !== undefined) headers["authorization"] = `Bearer ${token}`;
    const seconds = this.entry.timeoutSeconds;
    const bytes = await post(this.entry.url, { headers, body, agent: this.agent, timeoutMs: seconds * 1000 });
    // A server that echoes the token back must not carry it into a context, an event or a comment.
    // Redacted once parsed: in the text, JSON's escapes (`\/`, `\u0074`) could spell it unmatched;
    // in a parsed string it may still be spelled URL-encoded or JSON-escaped (src/secrets.ts).
    return readReply(bytes, id, token, point);
  }
}

interface PostOptions {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly agent: HttpAgent;
  readonly timeoutMs: number;
}

/**
 * POSTs `body` and resolves to the reply's bytes: a 2xx within `timeoutMs`, at most MAX_REPLY_BYTES.
 * node:http follows no redirect, so a 3xx is a failure and a token never goes where a server points.
 */
function post(url: URL, options: PostOptions): Promise<Buffer> {
  const origin = url.origin;
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<Buffer>((resolve, reject) => {
    let settled = false;
    let current: ClientRequest | undefined;
    const finish = (error: Error | undefined, bytes?: Buffer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error !== undefined) reject(error);
      else resolve(bytes ?? Buffer.alloc(0));
    };
    const timer = setTimeout(() => {
      finish(new Error(`${origin} timed out after ${options.timeoutMs / 1000}s`));
      current?.destroy();
    }, options.timeoutMs);

    const attempt = (): void => {
      let answered = false;
      const request = send(url, { method: "POST", headers: options.headers, agent: options.agent }, (response: IncomingMessage) => {
        answered = true;
        const status = response.statusCode ?? 0;
        if (status < 200 || status > 299) {
          // Not drained: an error body that never ends would hold the connection, and with the
          // agent's few connections held so, every later call would wait out its timeout.
          request.destroy();
          const redirect = status >= 300 && status <= 399 ? " (a redirect, which is not followed)" : "";
          finish(new Error(`${origin} answered HTTP ${status}${redirect}`));
          return;
        }
        const declared = Number(response.headers["content-length"] ?? Number.NaN);
        const tooLarge = (): void => {
          finish(new Error(`the reply is larger than ${MAX_REPLY_BYTES} bytes`));
          request.destroy();
        };
        if (declared > MAX_REPLY_BYTES) return tooLarge();
        const chunks: Buffer[] = [];
        let size = 0;
        response.on("data", (chunk: Buffer) => {
          size += chunk.byteLength;
          if (size > MAX_REPLY_BYTES) return tooLarge();
          chunks.push(chunk);
        });
        response.on("end", () => finish(undefined, Buffer.concat(chunks)));
        response.on("error", (error) => finish(new Error(`cannot read the reply of ${origin}: ${networkReason(error)}`)));
      });
      current = request;
      request.on("error", (error) => {
        // A kept-alive connection the server or a middlebox closed while it sat idle fails on
        // reuse before any answer; that says nothing of the endpoint, so the call goes again on
        // another. Bounded: each such connection is gone once it fails, and a new one is not retried.
        if (!settled && !answered && request.reusedSocket && isConnectionLost(error)) return attempt();
        finish(new Error(`cannot reach ${origin}: ${networkReason(error)}`));
      });
      request.end(options.body);
    };

    try {
      attempt();
    } catch (error) {
      // A header value node:http refuses (a token with a newline) throws before anything is sent.
      finish(error instanceof Error ? error : new Error(String(error)));
    }
  });
}

function isConnectionLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ECONNRESET" || code === "EPIPE";
}

export function createRemoteExecutor(entry: RemoteHookEntry, options: RemoteExecutorOptions): HookExecutor {
  return new RemoteHookExecutor(entry, options);
}

/** The result of a JSON-RPC 2.0 response to request `id`, parsed at `point`: an object, or undefined for null. */
function readReply(bytes: Buffer, id: number, token: string | undefined, point: HookPoint): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new Error("malformed reply: not UTF-8");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error("malformed reply: not JSON");
  }
  if (token !== undefined) parsed = redact(parsed, token);
  if (!isPlainObject(parsed)) throw new Error(`malformed reply: ${describe(parsed)}, not a JSON-RPC response object`);
  const envelope = rpcResponseSchema.safeParse(parsed);
  if (!envelope.success) throw new Error('malformed reply: not a JSON-RPC 2.0 response ("jsonrpc" is not "2.0")');
  const reply = envelope.data;
  const hasResult = Object.hasOwn(reply, "result");
  const hasError = Object.hasOwn(reply, "error");
  if (hasResult === hasError) throw new Error("malformed reply: a JSON-RPC response carries exactly one of result and error");
  // A server that could not parse the request answers an error with id null.
  if (reply["id"] !== id && !(hasError && reply["id"] === null)) {
    throw new Error(`malformed reply: id ${JSON.stringify(reply["id"]) ?? "absent"} does not match the request's ${id}`);
  }
  if (hasError) {
    const error = rpcErrorSchema.safeParse(reply["error"]);
    if (!error.success) throw new Error("malformed reply: error must be an object with a numeric code and a message");
    const message = error.data.message;
    const shown = message.length > MAX_REMOTE_MESSAGE ? `${message.slice(0, MAX_REMOTE_MESSAGE - 1)}…` : message;
    throw new Error(`the hook answered error ${error.data.code}: ${shown}`);
  }
  const result = answerTopSchema.safeParse(reply["result"]);
  if (!result.success) throw new Error(`malformed reply: result is ${describe(reply["result"])}, not an object or null`);
  return result.data === null ? undefined : parseAnswer(point, result.data);
}

/**
 * `text` without `token` in any spelling of it. The token as is even when it is too short to be
 * redacted inside other text in general: here it is known to be what the text may quote.
 */
function redactedText(text: string, token: string | undefined): string {
  return redactKnownSecrets(token === undefined ? text : text.replaceAll(token, REDACTED));
}

/** `value` with `token` replaced in every string, keys included: a key reaches hooks.ignored by name. */
function redact(value: unknown, token: string): unknown {
  if (typeof value === "string") return redactedText(value, token);
  if (Array.isArray(value)) return value.map((item) => redact(item, token));
  if (isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [redactedText(key, token), redact(item, token)]));
  }
  return value;
}

/** Why the server could not be reached, in words: the system error's code where there is one. */
function networkReason(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z_]+$/.test(code)) return code;
    current = current.cause;
  }
  return error instanceof Error ? error.message : String(error);
}
