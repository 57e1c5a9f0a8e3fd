import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, statSync, unlinkSync } from "node:fs";
import type { Stats } from "node:fs";
import { createConnection, createServer } from "node:net";
import type { Server, Socket } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { EXIT_FAILURE, ExitError, errnoOf, messageOf } from "../errors.js";

/**
 * The daemon's local request channel: how a command asks the running daemon to decide something
 * with the daemon's own config, graphs and hooks (`the-loop graph complete` is the first). One
 * request per connection, each way one JSON line.
 *
 * It is a socket *file* in the state root, not an abstract name: a file has permissions, so only
 * the operator's OS user (who owns the state root) can connect. A state root whose path is too
 * long for a socket address (about 100 bytes) gets it in a per-user 0700 folder of the temporary
 * directory instead, named by the state root's hash. The daemon holds its service lock before it
 * listens, so a socket file left by a killed daemon is replaced without asking whose it was.
 */

/** A request line longer than this is not a request: refused unread. */
const MAX_REQUEST_BYTES = 64 * 1024;
/** An answer line longer than this is cut off and refused by the client. */
const MAX_ANSWER_BYTES = 1024 * 1024;
/** unix(7): sun_path holds 108 bytes with its NUL; leave room. */
const MAX_SOCKET_PATH = 100;

export function daemonSocketPath(stateRoot: string): string {
  const inRoot = join(stateRoot, "daemon.sock");
  if (Buffer.byteLength(inRoot) <= MAX_SOCKET_PATH) return inRoot;
  const hash = createHash("sha256").update(stateRoot).digest("hex").slice(0, 24);
  return join(tmpdir(), `the-loop-${userInfo().uid}`, `${hash}.sock`);
}

export type RpcHandler = (params: unknown) => Promise<unknown>;

export interface RpcServer {
  readonly path: string;
  close(): Promise<void>;
}

/** Listens on the state root's daemon socket; each request goes to the handler its method names. */
export async function serveRpc(stateRoot: string, handlers: Readonly<Record<string, RpcHandler>>): Promise<RpcServer> {
  const path = daemonSocketPath(stateRoot);
  if (!path.startsWith(stateRoot)) {
    mkdirSync(join(path, ".."), { recursive: true, mode: 0o700 });
    chmodSync(join(path, ".."), 0o700);
  }
  removeSocketFile(path);
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    answer(socket, handlers);
  });
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

function answer(socket: Socket, handlers: Readonly<Record<string, RpcHandler>>): void {
  let received = "";
  let settled = false;
  const reply = (value: unknown): void => {
    if (settled) return;
    settled = true;
    socket.end(`${JSON.stringify(value)}\n`);
  };
  socket.setEncoding("utf8");
  socket.on("error", () => socket.destroy());
  socket.on("data", (chunk: string) => {
    if (settled) return;
    received += chunk;
    if (Buffer.byteLength(received) > MAX_REQUEST_BYTES) {
      reply({ ok: false, error: `a request is at most ${MAX_REQUEST_BYTES} bytes` });
      return;
    }
    const end = received.indexOf("\n");
    if (end < 0) return;
    let request: { method?: unknown; params?: unknown };
    try {
      request = JSON.parse(received.slice(0, end)) as { method?: unknown; params?: unknown };
    } catch {
      reply({ ok: false, error: "a request is one line of JSON" });
      return;
    }
    const handler = typeof request.method === "string" && Object.hasOwn(handlers, request.method) ? handlers[request.method] : undefined;
    if (handler === undefined) {
      reply({ ok: false, error: `the daemon does not answer ${JSON.stringify(request.method)}` });
      return;
    }
    handler(request.params).then(
      (result) => reply({ ok: true, result }),
      (error: unknown) => reply({ ok: false, error: messageOf(error) }),
    );
  });
}

/** No daemon listens for this state root: the command says how to start one. */
export class NoDaemonError extends ExitError {
  override readonly name: string = "NoDaemonError";
  constructor(readonly path: string) {
    super(`no daemon is running for this project (nothing listens on ${path}); start it with \`the-loop start\``, EXIT_FAILURE, "not-found");
  }
}

/** Sends one request to the daemon of `stateRoot` and waits (at most `timeoutMs`) for its answer. */
export function callDaemon(stateRoot: string, method: string, params: unknown, timeoutMs: number): Promise<unknown> {
  const path = daemonSocketPath(stateRoot);
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
    socket.on("connect", () => socket.write(`${JSON.stringify({ method, params })}\n`));
    socket.on("error", (error) => {
      const code = errnoOf(error);
      fail(code === "ENOENT" || code === "ECONNREFUSED" ? new NoDaemonError(path) : new ExitError(`the daemon's socket ${path}: ${messageOf(error)}`, EXIT_FAILURE));
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
      let parsed: { ok?: unknown; result?: unknown; error?: unknown };
      try {
        parsed = JSON.parse(received.split("\n", 1)[0] ?? "") as typeof parsed;
      } catch {
        reject(new ExitError("the daemon's answer was not JSON", EXIT_FAILURE));
        return;
      }
      if (parsed.ok === true) resolve(parsed.result);
      else reject(new ExitError(`the daemon refused: ${typeof parsed.error === "string" ? parsed.error : "no reason given"}`, EXIT_FAILURE));
    });
  });
}
