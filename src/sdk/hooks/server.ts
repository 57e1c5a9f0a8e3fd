/**
 * `HookServer`: hosts one executor over node:http, so the class an operator declares by `path`
 * can be declared by `url` unchanged.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { LifecycleHooks } from "./base.js";
import { handleRequest } from "./protocol.js";

export interface HookServerOptions {
  /**
   * When set, every request must carry `Authorization: Bearer <token>`. Omit the key to serve
   * without a check: present but undefined is refused.
   */
  readonly token?: string;
  /** Default `127.0.0.1`: a hook server is reachable from elsewhere only when its operator says so. */
  readonly host?: string;
  /** Default 0: a free port, read back from `listen()` or `url`. */
  readonly port?: number;
  /** The one path answered; default `/`. */
  readonly path?: string;
  /** Default 1 MiB. A larger body is refused with 413 before it is read into memory. */
  readonly maxBodyBytes?: number;
  /** Default 30000: the bound on receiving a request, and on the executor answering it (all of a batch). */
  readonly requestTimeoutMs?: number;
}

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Longer than the gap between the points of one delivery, so the-loop reuses its connection. */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/**
 * How often node:http looks for a request past requestTimeoutMs. Its default, 30 s, would let a
 * slow client hold a connection up to 30 s beyond the bound.
 */
const MAX_TIMEOUT_CHECK_MS = 1_000;
const UNAUTHORIZED_CODE = -32001;

export class HookServer {
  private readonly server: Server;
  /** Only the digest is kept, so no inspection of the server can reveal the token. */
  private readonly tokenDigest: Buffer | undefined;
  private readonly host: string;
  private readonly port: number;
  private readonly path: string;
  private readonly maxBodyBytes: number;
  private readonly requestTimeoutMs: number;
  private listeningUrl: string | undefined;
  private closing = false;

  constructor(
    private readonly executor: LifecycleHooks,
    options: HookServerOptions = {},
  ) {
    // `{ token: process.env.X }` with X unset must not quietly become a server with no bearer check.
    if (Object.hasOwn(options, "token") && options.token === undefined) {
      throw new TypeError("HookServer: token is undefined (an unset environment variable?); omit the option to serve without a bearer check");
    }
    if (options.token !== undefined && typeof options.token !== "string") {
      throw new TypeError(`HookServer: token must be a string, got ${typeof options.token}`);
    }
    if (options.token !== undefined && options.token === "") {
      throw new TypeError("HookServer: token must not be empty; omit it to serve without a bearer check");
    }
    // A bearer credential is one word: a token with whitespace (a newline read from a file) would
    // refuse every request with 401, and the cause would show nowhere.
    if (options.token !== undefined && /\s/.test(options.token)) {
      throw new TypeError("HookServer: token must not contain whitespace (a line break read with it from a file?)");
    }
    this.tokenDigest = options.token === undefined ? undefined : digest(options.token);
    this.host = options.host ?? "127.0.0.1";
    this.port = options.port ?? 0;
    this.path = options.path ?? "/";
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (!this.path.startsWith("/")) throw new TypeError(`HookServer: path must start with "/", got ${JSON.stringify(this.path)}`);
    if (!Number.isInteger(this.port) || this.port < 0 || this.port > 65_535)
      throw new RangeError(`HookServer: port must be an integer from 0 to 65535, got ${this.port}`);
    if (!Number.isInteger(this.maxBodyBytes) || this.maxBodyBytes < 1)
      throw new RangeError(`HookServer: maxBodyBytes must be a positive integer, got ${this.maxBodyBytes}`);
    if (!Number.isInteger(this.requestTimeoutMs) || this.requestTimeoutMs < 1) {
      throw new RangeError(`HookServer: requestTimeoutMs must be a positive integer, got ${this.requestTimeoutMs}`);
    }

    const connectionsCheckingInterval = Math.min(MAX_TIMEOUT_CHECK_MS, this.requestTimeoutMs);
    this.server = createServer({ requestTimeout: this.requestTimeoutMs, connectionsCheckingInterval }, (request, response) => {
      this.serve(request, response).catch((error: unknown) => {
        if (!response.headersSent) reply(response, 500, rpcError(-32603, "Internal error"), { connection: "close" });
        else response.destroy(error instanceof Error ? error : undefined);
      });
    });
    this.server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  }

  /** Starts listening; resolves to the URL to declare, e.g. `http://127.0.0.1:41234/`. */
  async listen(): Promise<string> {
    if (this.listeningUrl !== undefined) return this.listeningUrl;
    this.closing = false;
    await new Promise<void>((resolve, reject) => {
      const fail = (error: Error): void => reject(error);
      this.server.once("error", fail);
      this.server.listen(this.port, this.host, () => {
        this.server.off("error", fail);
        resolve();
      });
    });
    const address = this.server.address() as AddressInfo;
    const host = address.address.includes(":") ? `[${address.address}]` : address.address;
    this.listeningUrl = `http://${host}:${address.port}${this.path}`;
    return this.listeningUrl;
  }

  get url(): string {
    if (this.listeningUrl === undefined) throw new Error("HookServer: not listening; await listen() first");
    return this.listeningUrl;
  }

  /** The node:http server underneath, for its events and settings. */
  get httpServer(): Server {
    return this.server;
  }

  /**
   * Stops accepting connections and closes the idle keep-alive ones; a request in flight is
   * answered first, within requestTimeoutMs.
   */
  async close(): Promise<void> {
    if (!this.server.listening) return;
    this.listeningUrl = undefined;
    this.closing = true;
    const closed = new Promise<void>((resolve, reject) => this.server.close((error) => (error ? reject(error) : resolve())));
    this.server.closeIdleConnections();
    await closed;
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    // An early answer leaves the body unread: closing the connection spares reading it just to discard it.
    const refuseUnread = { connection: "close" };
    if (requestPath(request.url) !== this.path) {
      reply(response, 404, rpcError(-32600, "Not found: the hook endpoint is elsewhere on this server"), refuseUnread);
      return;
    }
    if (request.method !== "POST") {
      reply(response, 405, rpcError(-32600, "Method not allowed: send the JSON-RPC request with POST"), { ...refuseUnread, allow: "POST" });
      return;
    }
    if (!this.authorized(request.headers.authorization)) {
      reply(response, 401, rpcError(UNAUTHORIZED_CODE, "Unauthorized: a valid bearer token is required"), {
        ...refuseUnread,
        "www-authenticate": "Bearer",
      });
      return;
    }
    const declaredLength = Number(request.headers["content-length"] ?? 0);
    if (declaredLength > this.maxBodyBytes) {
      reply(response, 413, this.tooLarge(), refuseUnread);
      return;
    }

    const body = await readBody(request, this.maxBodyBytes);
    if (body === "too-large") {
      reply(response, 413, this.tooLarge(), refuseUnread);
      return;
    }
    if (body === "aborted") return;

    const answer = await withTimeout(handleRequest(this.executor, body), this.requestTimeoutMs);
    if (answer === TIMED_OUT) {
      reply(response, 503, rpcError(-32000, `the hook did not answer within ${this.requestTimeoutMs} ms`), refuseUnread);
      return;
    }
    // Once closing, a keep-alive connection left open by this answer would hold close() until the client let go.
    const headers: Record<string, string> = this.closing ? { connection: "close" } : {};
    if (answer === undefined) {
      // A notification, or a batch of them only: JSON-RPC answers nothing, and HTTP says so with 204.
      response.writeHead(204, headers);
      response.end();
      return;
    }
    reply(response, 200, answer, headers);
  }

  private authorized(header: string | undefined): boolean {
    if (this.tokenDigest === undefined) return true;
    // The token is never empty, so a missing or malformed header compares as "" and fails.
    const presented = /^Bearer +(\S+) *$/i.exec(header ?? "")?.[1] ?? "";
    // Digests have one length whatever was presented, so the comparison reveals neither the token nor its length.
    return timingSafeEqual(digest(presented), this.tokenDigest);
  }

  private tooLarge(): string {
    return rpcError(-32600, `Payload too large: the body exceeds ${this.maxBodyBytes} bytes`);
  }
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

function requestPath(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}

function rpcError(code: number, message: string): string {
  return JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message } });
}

function reply(response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  response.end(body);
}

function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer | "too-large" | "aborted"> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (outcome: Buffer | "too-large" | "aborted"): void => {
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("error", onAbort);
      request.off("close", onAbort);
      resolve(outcome);
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > maxBytes) {
        request.pause();
        finish("too-large");
      } else {
        chunks.push(chunk);
      }
    };
    const onEnd = (): void => finish(Buffer.concat(chunks));
    const onAbort = (): void => finish("aborted");
    request.on("data", onData);
    request.on("end", onEnd);
    request.on("error", onAbort);
    // "close" before "end": the client went away mid-body.
    request.on("close", onAbort);
  });
}

/** What withTimeout resolves to when time runs out: a symbol, since undefined is one of handleRequest's answers. */
const TIMED_OUT: unique symbol = Symbol("timed out");

/** The promise's value, or TIMED_OUT once `ms` have passed without one. */
async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(resolve, ms, TIMED_OUT);
    timer.unref();
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
