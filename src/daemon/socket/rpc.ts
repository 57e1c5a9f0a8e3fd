import { chmodSync, mkdirSync, statSync, unlinkSync } from "node:fs";
import type { Stats } from "node:fs";
import { createConnection, createServer } from "node:net";
import type { Server, Socket } from "node:net";
import { join } from "node:path";
import { daemonSocketPath } from "./path.js";
import { stripControlCharacters } from "../../subprocess/index.js";
import type { z } from "zod";
import { EXIT_FAILURE, ExitError, errnoOf, messageOf } from "../../errors.js";
import { DEFAULT_IDLE_MS, DEFAULT_MAX_CONNECTIONS, MAX_ANSWER_BYTES, answerConnection, refuseConnection, replySchema, schemaProblem } from "./protocol.js";
import type { RpcHandler, RpcLimits, SessionCredential } from "./protocol.js";

export type { RpcCaller, RpcHandler, SessionCredential } from "./protocol.js";

/**
 * The daemon's local request channel: how a command asks the running daemon to decide something
 * with the daemon's own config, graphs and hooks (`the-loop graph complete` is the first). One
 * request per connection, each way one JSON line.
 *
 * It is a socket *file* in the state root, not an abstract name: a file has permissions, so only
 * the operator's OS user (who owns the state root) can connect. A state root whose path is too
 * long for a socket address (about 100 bytes) gets it in a private folder of $XDG_RUNTIME_DIR,
 * never a shared temporary one, each folder checked before it is trusted (socket-path.ts). The daemon holds its service lock before it
 * listens, so a socket file left by a killed daemon is replaced without asking whose it was.
 */

export { daemonSocketPath };

export interface RpcServer {
  readonly path: string;
  close(): Promise<void>;
}

/**
 * Listens on the state root's daemon socket; each request goes to the handler its method names.
 * `limits` (tests shorten them): the idle bound of a connection, and how many are served at once.
 */
export async function serveRpc(stateRoot: string, handlers: Readonly<Record<string, RpcHandler>>, limits: Partial<RpcLimits> = {}): Promise<RpcServer> {
  const path = daemonSocketPath(stateRoot);
  if (!path.startsWith(stateRoot)) {
    mkdirSync(join(path, ".."), { recursive: true, mode: 0o700 });
    chmodSync(join(path, ".."), 0o700);
  }
  return serveRpcAt(path, handlers, limits);
}

/**
 * Listens on the socket file `path` (a file left there is replaced: the caller holds what makes
 * the path its own), in a folder the caller made private.
 */
export async function serveRpcAt(path: string, handlers: Readonly<Record<string, RpcHandler>>, limits: Partial<RpcLimits> = {}): Promise<RpcServer> {
  const bounds: RpcLimits = { idleMs: limits.idleMs ?? DEFAULT_IDLE_MS, maxConnections: limits.maxConnections ?? DEFAULT_MAX_CONNECTIONS };
  removeSocketFile(path);
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    if (sockets.size >= bounds.maxConnections) {
      refuseConnection(socket, bounds.maxConnections);
      return;
    }
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    answerConnection(socket, handlers, bounds);
  });
  // A failed accept (out of file descriptors) is the listener's error: it goes on listening.
  server.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // The folder's permissions guard it; the file's own make the intent plain.
  chmodSync(path, 0o600);
  const ours = statSync(path).ino;
  return {
    path,
    close: () => closeServer(server, sockets, path, ours),
  };
}

function removeSocketFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (errnoOf(error) !== "ENOENT") throw error;
  }
}

function closeServer(server: Server, sockets: Set<Socket>, path: string, ours: number): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    for (const socket of sockets) socket.destroy();
  }).then(() => {
    // A daemon that took the state root over since has its own socket there: leave it.
    const current = statIfPresent(path);
    if (current?.ino === ours) removeSocketFile(path);
  });
}

function statIfPresent(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  }
}

/** No daemon listens for this state root: the command says how to start one. */
export class NoDaemonError extends ExitError {
  override readonly name: string = "NoDaemonError";
  constructor(readonly path: string) {
    super(`no daemon is running for this project (nothing listens on ${path}); start it with \`the-loop start\``, EXIT_FAILURE, "not-found");
  }
}

export interface CallOptions<T> {
  /** The session this caller runs in, proved by its credential (THE_LOOP_SESSION_TOKEN). */
  readonly session?: SessionCredential | undefined;
  /** The answer's schema: an answer that does not match it is refused. */
  readonly result?: z.ZodType<T>;
}

/**
 * Sends one request to the daemon of `stateRoot` and waits (at most `timeoutMs`) for its answer.
 * The answer is typed only by its schema: without `result` it is `unknown`, never a caller's claim.
 */
export function callDaemon<T>(
  stateRoot: string,
  method: string,
  params: unknown,
  timeoutMs: number,
  options: CallOptions<T> & { readonly result: z.ZodType<T> },
): Promise<T>;
export function callDaemon(stateRoot: string, method: string, params: unknown, timeoutMs: number, options?: CallOptions<unknown>): Promise<unknown>;
export function callDaemon(stateRoot: string, method: string, params: unknown, timeoutMs: number, options: CallOptions<unknown> = {}): Promise<unknown> {
  return callSocket(daemonSocketPath(stateRoot), method, params, timeoutMs, options);
}

/** How long a command inside a session waits for its session's socket to open (the daemon looks every half second). */
export const SESSION_SOCKET_WAIT_MS = 5_000;

/**
 * callSocket on a session's own socket (THE_LOOP_SESSION_SOCKET). A session the daemon has just
 * started may ask before the daemon has opened its socket: nothing listening is tried again
 * within SESSION_SOCKET_WAIT_MS, then refused with what to do.
 */
export async function callSessionSocket<T>(
  path: string,
  method: string,
  params: unknown,
  timeoutMs: number,
  options: CallOptions<T> & { readonly result: z.ZodType<T> },
): Promise<T> {
  const deadline = Date.now() + SESSION_SOCKET_WAIT_MS;
  for (let pause = 100; ; pause = Math.min(pause * 2, 1_000)) {
    try {
      return await callSocket(path, method, params, timeoutMs, options);
    } catch (error) {
      if (!(error instanceof NoDaemonError)) throw error;
      if (Date.now() + pause > deadline) {
        throw new ExitError(
          `nothing listens on this session's socket (${path}, THE_LOOP_SESSION_SOCKET): the daemon that started the session is not running or has closed the session; the operator starts it with \`the-loop start\``,
          EXIT_FAILURE,
          "not-found",
        );
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** callDaemon on the socket file `path`: the daemon's own, or a session's (session-sockets.ts). */
export function callSocket<T>(
  path: string,
  method: string,
  params: unknown,
  timeoutMs: number,
  options: CallOptions<T> & { readonly result: z.ZodType<T> },
): Promise<T>;
export function callSocket(path: string, method: string, params: unknown, timeoutMs: number, options?: CallOptions<unknown>): Promise<unknown>;
export function callSocket(path: string, method: string, params: unknown, timeoutMs: number, options: CallOptions<unknown> = {}): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    let received = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new ExitError(`the daemon did not answer within ${Math.round(timeoutMs / 1000)} s; see \`the-loop events\``, EXIT_FAILURE));
    }, timeoutMs);
    const fail = (error: Error): void => {
      clearTimeout(timer);
      reject(error);
    };
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`${JSON.stringify({ method, params, ...(options.session !== undefined ? { session: options.session } : {}) })}\n`));
    socket.on("error", (error) => {
      const code = errnoOf(error);
      fail(
        code === "ENOENT" || code === "ECONNREFUSED"
          ? new NoDaemonError(path)
          : new ExitError(`the daemon's socket ${path}: ${messageOf(error)}`, EXIT_FAILURE),
      );
    });
    socket.on("data", (chunk: string) => {
      received += chunk;
      if (received.length > MAX_ANSWER_BYTES) {
        socket.destroy();
        fail(new ExitError("the daemon's answer was too long", EXIT_FAILURE));
      }
    });
    socket.on("end", () => {
      clearTimeout(timer);
      let json: unknown;
      try {
        json = JSON.parse(received.split("\n", 1)[0] ?? "");
      } catch {
        reject(new ExitError("the daemon's answer was not JSON", EXIT_FAILURE));
        return;
      }
      const parsed = replySchema.safeParse(json);
      if (!parsed.success) {
        reject(new ExitError(`the daemon's answer is not {ok, result} or {ok, error}: ${schemaProblem(parsed.error)}`, EXIT_FAILURE));
        return;
      }
      if (!parsed.data.ok) {
        reject(new ExitError(`the daemon refused: ${stripControlCharacters(parsed.data.error)}`, EXIT_FAILURE));
        return;
      }
      if (options.result === undefined) {
        resolve(parsed.data.result);
        return;
      }
      const result = options.result.safeParse(parsed.data.result);
      if (result.success) resolve(result.data);
      else
        reject(
          new ExitError(
            `the daemon's answer to ${method} is not what this version of the-loop expects (${schemaProblem(result.error)}); restart the daemon (\`the-loop stop\`, then \`the-loop start\`)`,
            EXIT_FAILURE,
          ),
        );
    });
  });
}
