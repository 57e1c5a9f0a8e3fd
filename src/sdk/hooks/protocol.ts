/**
 * The server half of the remote hook protocol: one JSON-RPC 2.0 request per point invocation,
 * `method` the point's name (`work_item_start`, `loop.gate.pre`: both families alike), `params`
 * its context; the result is `null` (pass through) or the point's decisions. Notifications and batches are served as JSON-RPC 2.0 defines them, for a
 * client other than the-loop (which sends one request, with an id, per call). Framework-free, so
 * an operator can mount it in whatever HTTP server they run; `HookServer` is the ready-made host.
 */
import type { LifecycleHooks } from "./base.js";
import { HOOK_POINT_NAMES, hookPoint } from "./points.js";

export type JsonRpcId = string | number | null;

/** The error codes the protocol answers with: JSON-RPC's own, and -32000 for a hook that raised. */
export const HOOK_RPC_ERRORS = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  hookRaised: -32000,
} as const;

export interface JsonRpcSuccess {
  readonly jsonrpc: "2.0";
  readonly id: JsonRpcId;
  /** null passes the context through; otherwise the decisions the hook returned. */
  readonly result: Readonly<Record<string, unknown>> | null;
}

export interface JsonRpcFailure {
  readonly jsonrpc: "2.0";
  readonly id: JsonRpcId;
  readonly error: { readonly code: number; readonly message: string };
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;

/**
 * The most requests one batch may hold; a longer batch is refused whole with one Invalid Request
 * error, none of it run. The body cap bounds a batch's bytes, not the hooks it sets off: without
 * this, one small body could queue thousands of runs of an executor behind a single request.
 */
export const MAX_BATCH_REQUESTS = 100;

/** A hook's message can be anything it was given, prompt text included; the client needs only the gist. */
const MAX_RAISED_MESSAGE_CHARS = 1000;

/** Invalid UTF-8 is a parse error, not text silently repaired into something the sender never wrote. */
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Answers one JSON-RPC request body — a request, a notification or a batch of them — with the
 * response body text, or undefined when nothing is to be answered: a notification, or a batch of
 * notifications only. It never throws: every failure, the executor's included, becomes a JSON-RPC
 * error, so a host can always send what it returns.
 */
export async function handleRequest(executor: LifecycleHooks, body: string | Uint8Array): Promise<string | undefined> {
  try {
    return await respond(executor, body);
  } catch (error) {
    return encode(failure(null, HOOK_RPC_ERRORS.internalError, `Internal error: ${describeError(error)}`));
  }
}

async function respond(executor: LifecycleHooks, body: string | Uint8Array): Promise<string | undefined> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === "string" ? body : utf8.decode(body));
  } catch {
    return encode(failure(null, HOOK_RPC_ERRORS.parseError, "Parse error: the body is not JSON"));
  }
  if (!Array.isArray(parsed)) {
    const response = await respondToOne(executor, parsed);
    return response === undefined ? undefined : encode(response);
  }

  if (parsed.length === 0) return encode(failure(null, HOOK_RPC_ERRORS.invalidRequest, "Invalid Request: the batch is empty"));
  if (parsed.length > MAX_BATCH_REQUESTS) {
    return encode(
      failure(null, HOOK_RPC_ERRORS.invalidRequest, `Invalid Request: a batch holds at most ${MAX_BATCH_REQUESTS} requests; this one holds ${parsed.length}`),
    );
  }
  const answered: string[] = [];
  for (const element of parsed as unknown[]) {
    // One after another, in the batch's order: the points reach the executor in the order the
    // client put them, and an executor need not be safe to run concurrently with itself.
    const response = await respondToOne(executor, element);
    // Each element is encoded apart, so a decision with no JSON form spoils its own answer only.
    if (response !== undefined) answered.push(encode(response));
  }
  return answered.length === 0 ? undefined : `[${answered.join(",")}]`;
}

/** The response to one request object, or undefined for a notification, which gets none. */
async function respondToOne(executor: LifecycleHooks, request: unknown): Promise<JsonRpcResponse | undefined> {
  if (!isPlainObject(request)) {
    return failure(null, HOOK_RPC_ERRORS.invalidRequest, "Invalid Request: the request must be an object");
  }
  const id = readableId(request);
  if (id === undefined) {
    return failure(null, HOOK_RPC_ERRORS.invalidRequest, "Invalid Request: id must be a string, a number or null");
  }
  if (request.jsonrpc !== "2.0") {
    return failure(id, HOOK_RPC_ERRORS.invalidRequest, 'Invalid Request: jsonrpc must be "2.0"');
  }
  const methodName = request.method;
  if (typeof methodName !== "string") {
    return failure(id, HOOK_RPC_ERRORS.invalidRequest, "Invalid Request: method must be a string");
  }

  let response: JsonRpcResponse;
  try {
    response = await answer(executor, methodName, request.params, id);
  } catch (error) {
    // Only a hook's own object can throw here (a getter, a proxy); the id is known, so it is kept.
    response = failure(id, HOOK_RPC_ERRORS.internalError, `Internal error: ${describeError(error)}`);
  }
  // Only a well-formed request is known to be a notification: a malformed one without an id was
  // answered above with id null, as JSON-RPC 2.0 requires. A notification's outcome, its failure
  // included, is not reported.
  return Object.hasOwn(request, "id") ? response : undefined;
}

async function answer(executor: LifecycleHooks, methodName: string, context: unknown, id: JsonRpcId): Promise<JsonRpcResponse> {
  const point = hookPoint(methodName);
  if (!point) {
    const names = HOOK_POINT_NAMES.join(", ");
    return failure(
      id,
      HOOK_RPC_ERRORS.methodNotFound,
      `Method not found: ${JSON.stringify(truncate(methodName, 100))} is not a hook point; the points are ${names}`,
    );
  }
  if (!isPlainObject(context)) {
    return failure(id, HOOK_RPC_ERRORS.invalidParams, `Invalid params: params must be the ${point.name} context, an object of its fields`);
  }

  const method: unknown = (executor as unknown as Record<string, unknown>)[point.method];
  if (typeof method !== "function" && point.family === "loop") {
    // A LifecycleHooks class declared by url with a loop event in its `on`: the class is what to change.
    return failure(
      id,
      HOOK_RPC_ERRORS.methodNotFound,
      `Method not found: the executor has no ${point.method} method; a class handling ${point.name} extends LoopHooks`,
    );
  }
  if (typeof method !== "function") {
    return failure(id, HOOK_RPC_ERRORS.internalError, `Internal error: the executor has no ${point.method} method`);
  }

  let returned: unknown;
  try {
    returned = await (method as (context: Record<string, unknown>) => unknown).call(executor, context);
  } catch (error) {
    return failure(id, HOOK_RPC_ERRORS.hookRaised, truncate(`the hook raised: ${describeError(error)}`, MAX_RAISED_MESSAGE_CHARS));
  }

  if (returned == null) return { jsonrpc: "2.0", id, result: null };
  if (!isPlainObject(returned)) {
    return failure(id, HOOK_RPC_ERRORS.internalError, `the executor returned ${describeType(returned)}, not a context`);
  }
  // The client applies decisions only; facts and unknown keys stay home rather than travel back
  // just to be dropped, and a value that cannot be JSON never reaches the encoder.
  const decisions: Record<string, unknown> = {};
  for (const key of Object.keys(point.decisions)) {
    if (Object.hasOwn(returned, key)) decisions[key] = returned[key];
  }
  return { jsonrpc: "2.0", id, result: decisions };
}

function encode(response: JsonRpcResponse): string {
  try {
    return JSON.stringify(response);
  } catch (error) {
    // A decision the hook set to a BigInt or a cycle: its value has no JSON form.
    return JSON.stringify(failure(response.id, HOOK_RPC_ERRORS.internalError, `the executor's result is not JSON: ${describeError(error)}`));
  }
}

function failure(id: JsonRpcId, code: number, message: string): JsonRpcFailure {
  return { jsonrpc: "2.0", id, error: { code, message } };
}

/** The id to echo, null for none; undefined when the request carries one JSON-RPC does not allow. */
function readableId(request: Record<string, unknown>): JsonRpcId | undefined {
  if (!Object.hasOwn(request, "id")) return null;
  const id = request.id;
  if (id === null || typeof id === "string" || (typeof id === "number" && Number.isFinite(id))) return id;
  return undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function describeType(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && value !== null) {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
    return typeof name === "string" && name !== "" ? `a ${name}` : "an object";
  }
  const type = typeof value;
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

function describeError(error: unknown): string {
  try {
    if (error instanceof Error) return error.message || error.name;
    return String(error);
  } catch {
    return "an error that cannot be described";
  }
}

function truncate(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`;
}
