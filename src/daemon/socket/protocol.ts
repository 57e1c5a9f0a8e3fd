import type { Socket } from "node:net";
import { z } from "zod";
import { messageOf } from "../../errors.js";

/**
 * What travels on the daemon's socket, each way one JSON line, and how one connection is
 * answered. Every line is parsed with a schema: a request that is not `{method, params?,
 * session?}` gets an error line, never an exception, so no line a caller sends can stop the
 * daemon. A connection that sends no whole line within the idle bound is closed.
 */

/** A request line longer than this is not a request: refused unread. */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** An answer line longer than this is cut off and refused by the client. */
export const MAX_ANSWER_BYTES = 1024 * 1024;
/** How long a connection may stay open without sending a whole request line. */
export const DEFAULT_IDLE_MS = 5_000;
/** Connections served at once; one past it gets an error line and is closed. */
export const DEFAULT_MAX_CONNECTIONS = 64;
/** How long an answered connection the caller keeps open is left before it is closed. */
const LINGER_MS = 1_000;

/** The session a caller inside one proves it is: its work item and the credential the daemon gave it at spawn. */
export const sessionCredentialSchema = z.strictObject({
  workItem: z.string().min(1).max(300),
  token: z.string().min(16).max(200),
});
export type SessionCredential = z.output<typeof sessionCredentialSchema>;

export const requestSchema = z.strictObject({
  method: z.string().min(1).max(100),
  params: z.unknown().optional(),
  session: sessionCredentialSchema.optional(),
});

export const replySchema = z.discriminatedUnion("ok", [
  z.strictObject({ ok: z.literal(true), result: z.unknown() }),
  z.strictObject({ ok: z.literal(false), error: z.string() }),
]);

/** Who sent a request: a session's credential when one was presented (checked by the method, not here). */
export interface RpcCaller {
  readonly session?: SessionCredential;
}

export type RpcHandler = (params: unknown, caller: RpcCaller) => Promise<unknown>;

export interface RpcLimits {
  readonly idleMs: number;
  readonly maxConnections: number;
}

/** The first problem zod found, as a line: `params.ref: expected string`. No input value is quoted. */
export function schemaProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return "not in the expected shape";
  const where = issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ` : "";
  return `${where}${issue.message}`;
}

function line(value: unknown): string {
  try {
    return `${JSON.stringify(value)}\n`;
  } catch (error) {
    return `${JSON.stringify({ ok: false, error: `the answer could not be written: ${messageOf(error)}` })}\n`;
  }
}

/** Refuses a connection past the cap: one error line, then closed. */
export function refuseConnection(socket: Socket, maxConnections: number): void {
  socket.on("error", () => socket.destroy());
  socket.end(line({ ok: false, error: `the daemon serves at most ${maxConnections} connections at once; try again` }));
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

/** Answers the one request of a connection with the handler its method names. Never throws. */
export function answerConnection(socket: Socket, handlers: Readonly<Record<string, RpcHandler>>, limits: RpcLimits): void {
  let received = "";
  let settled = false;
  const reply = (value: unknown): void => {
    if (settled) return;
    settled = true;
    socket.setTimeout(0);
    if (socket.destroyed) return;
    socket.end(line(value));
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  };
  socket.setEncoding("utf8");
  socket.on("error", () => socket.destroy());
  socket.setTimeout(limits.idleMs, () => {
    if (received.includes("\n")) return;
    reply({ ok: false, error: `no request within ${Math.max(1, Math.round(limits.idleMs / 1000))} s; send one JSON line` });
  });
  socket.on("data", (chunk: string) => {
    if (settled) return;
    try {
      received += chunk;
      if (Buffer.byteLength(received) > MAX_REQUEST_BYTES) {
        reply({ ok: false, error: `a request is at most ${MAX_REQUEST_BYTES} bytes` });
        return;
      }
      const end = received.indexOf("\n");
      if (end < 0) return;
      // The whole line is in: the handler may take long (a claim's checks), the caller bounds its own wait.
      socket.setTimeout(0);
      dispatch(received.slice(0, end), handlers, reply);
    } catch (error) {
      reply({ ok: false, error: `the request could not be read: ${messageOf(error)}` });
    }
  });
}

function dispatch(text: string, handlers: Readonly<Record<string, RpcHandler>>, reply: (value: unknown) => void): void {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    reply({ ok: false, error: "a request is one line of JSON" });
    return;
  }
  const request = requestSchema.safeParse(json);
  if (!request.success) {
    reply({ ok: false, error: `a request is one JSON object {"method", "params", "session"}: ${schemaProblem(request.error)}` });
    return;
  }
  const { method, params, session } = request.data;
  const handler = Object.hasOwn(handlers, method) ? handlers[method] : undefined;
  if (handler === undefined) {
    reply({ ok: false, error: `the daemon does not answer ${JSON.stringify(method)}` });
    return;
  }
  Promise.resolve()
    .then(() => handler(params, session !== undefined ? { session } : {}))
    .then(
      (result) => reply({ ok: true, result }),
      (error: unknown) => reply({ ok: false, error: messageOf(error) }),
    );
}
