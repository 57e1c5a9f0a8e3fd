import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { HookChain } from "../../src/hooks/chain.js";
import { parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { RemoteHookEntry } from "../../src/hooks/declaration.js";
import { loadHooks } from "../../src/hooks/load.js";
import { MAX_REPLY_BYTES, createRemoteExecutor } from "../../src/hooks/remote.js";
import type { HookExecutor } from "../../src/hooks/types.js";
import { LIFECYCLE_POINTS, LIFECYCLE_POINT_NAMES, lifecyclePoint } from "../../src/sdk/hooks/catalog.js";
import type { HookPoint } from "../../src/sdk/hooks/catalog.js";
import { WORK_ITEM, failureOf, hookEvents, spawnContext, startContext } from "./support/fixtures.js";
import { ScriptedServer, closedPort, reply } from "./support/rpc-server.js";

const TOKEN = "s3cr3t-Token-Value-0123456789";
const SPAWN = lifecyclePoint("session_spawn") as HookPoint;

let server: ScriptedServer;
const servers: ScriptedServer[] = [];

beforeEach(async () => {
  server = await ScriptedServer.start();
  servers.push(server);
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((started) => started.close()));
});

function entryFor(raw: Record<string, unknown>): RemoteHookEntry {
  const [entry] = parseHookDeclaration([{ name: "remote", url: server.url, ...raw }], { configDir: "/etc/the-loop", points: LIFECYCLE_POINT_NAMES });
  return entry as RemoteHookEntry;
}

function executor(raw: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}): HookExecutor {
  return createRemoteExecutor(entryFor(raw), { points: LIFECYCLE_POINTS, env });
}

function chainOf(raw: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}): { chain: HookChain; sink: MemoryEventSink } {
  const sink = new MemoryEventSink();
  return { chain: new HookChain([executor(raw, env)], sink), sink };
}

describe("remote executors: the request", () => {
  it("POSTs one JSON-RPC 2.0 request per invocation: method the point, params the context, an increasing integer id", async () => {
    const remote = executor({ headers: { "X-Team": "security" } });
    await remote.invoke(SPAWN, spawnContext());
    await remote.invoke(lifecyclePoint("work_item_start") as HookPoint, startContext());
    expect(server.requests).toHaveLength(2);
    const [first, second] = server.requests;
    expect(first?.method).toBe("POST");
    expect(first?.path).toBe("/rpc");
    expect(first?.json).toEqual({ jsonrpc: "2.0", method: "session_spawn", params: spawnContext(), id: 1 });
    expect(second?.json).toMatchObject({ method: "work_item_start", params: startContext(), id: 2 });
    expect(first?.headers).toMatchObject({ "content-type": "application/json", accept: "application/json", "x-team": "security" });
    expect(first?.headers.authorization).toBeUndefined();
  });

  it("sends the token as a bearer, read from the environment at each call", async () => {
    const env: NodeJS.ProcessEnv = { AUDIT_TOKEN: TOKEN };
    const remote = executor({ tokenEnv: "AUDIT_TOKEN" }, env);
    await remote.invoke(SPAWN, spawnContext());
    env["AUDIT_TOKEN"] = "rotated-token";
    await remote.invoke(SPAWN, spawnContext());
    expect(server.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${TOKEN}`, "Bearer rotated-token"]);
  });

  it.each([
    ["unset", {}],
    ["empty", { AUDIT_TOKEN: "" }],
  ])("with tokenEnv %s, sends nothing and fails", async (_title, env) => {
    const { chain, sink } = chainOf({ tokenEnv: "AUDIT_TOKEN", required: true }, env);
    const outcome = await chain.run("work_item_start", startContext());
    expect(server.requests).toHaveLength(0);
    const error = "tokenEnv AUDIT_TOKEN is unset or empty; no request was sent";
    expect(hookEvents(sink)).toEqual([["hooks.failed", { point: "work_item_start", hook: "remote", error, required: true }]]);
    expect(outcome.refusal).toEqual({ hook: "remote", reason: `required hook "remote" failed: ${error}` });
  });

  it("runs at every point without on, at its on with one", () => {
    expect([...executor().points]).toEqual(LIFECYCLE_POINT_NAMES);
    expect([...executor({ on: ["phase_changed"] }).points]).toEqual(["phase_changed"]);
    expect(executor().kind).toBe("url");
  });

  it("is not contacted at load", async () => {
    const chain = await loadHooks({ raw: [{ name: "remote", url: server.url }], configDir: "/etc/the-loop", events: new MemoryEventSink() });
    expect(chain.names).toEqual(["remote"]);
    expect(server.requests).toHaveLength(0);
  });
});

describe("remote executors: the reply", () => {
  it("a null result passes the context through", async () => {
    const { chain, sink } = chainOf();
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome).toEqual({ context: spawnContext(), changed: [] });
    expect(hookEvents(sink)).toEqual([]);
    expect(await executor().invoke(SPAWN, spawnContext())).toBeUndefined();
  });

  it("an object result sets decisions", async () => {
    server.result({ prompt: "[policy] Work on #15.", proceed: true });
    const { chain, sink } = chainOf();
    const outcome = await chain.run("session_spawn", spawnContext(), { workItem: WORK_ITEM.ref });
    expect(outcome.context).toEqual(spawnContext({ prompt: "[policy] Work on #15." }));
    expect(hookEvents(sink)).toEqual([["hooks.decided", { point: "session_spawn", hook: "remote", changed: ["prompt"], work_item: WORK_ITEM.ref }]]);
  });

  it("a fact and an unknown key in the result are ignored and recorded; the context carries neither (abuse case 2)", async () => {
    server.respond = (request, response) =>
      reply(response, {
        jsonrpc: "2.0",
        id: request.json?.id,
        result: { ...request.json?.params, workItem: { ...WORK_ITEM, repository: "evil/repo" }, harness: "other", graph: "bypass", proceed: false },
      });
    const { chain, sink } = chainOf();
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.context).toEqual(startContext({ proceed: false }));
    expect(outcome.context).not.toHaveProperty("graph");
    expect(hookEvents(sink)).toEqual([
      ["hooks.ignored", { point: "work_item_start", hook: "remote", fields: ["workItem", "harness", "graph"] }],
      ["hooks.decided", { point: "work_item_start", hook: "remote", changed: ["proceed"] }],
    ]);
  });

  it("a wrong-typed decision is the hook's failure and nothing of its answer is applied (abuse case 2)", async () => {
    server.result({ proceed: "false", reason: "typed wrong" });
    const { chain, sink } = chainOf();
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome).toEqual({ context: startContext(), changed: [] });
    expect(hookEvents(sink)).toEqual([
      ["hooks.failed", { point: "work_item_start", hook: "remote", error: 'decision "proceed" must be a boolean, not a string', required: false }],
    ]);
  });

  it("an error member is the hook's failure, its message bounded", async () => {
    server.respond = (request, response) =>
      reply(response, { jsonrpc: "2.0", id: request.json?.id, error: { code: -32000, message: `policy store down ${"x".repeat(1000)}` } });
    const message = await failureOf(executor().invoke(SPAWN, spawnContext()));
    expect(message).toMatch(/^the hook answered error -32000: policy store down x+…$/);
    expect(message.length).toBe("the hook answered error -32000: ".length + 300);
  });

  it("an error member answering an unparsable request with id null is still the hook's error", async () => {
    server.respond = (_request, response) => reply(response, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
    expect(await failureOf(executor().invoke(SPAWN, spawnContext()))).toBe("the hook answered error -32700: Parse error");
  });

  it.each([
    ["a body that is not JSON", "<html>oops</html>", "malformed reply: not JSON"],
    ["an array", "[]", "malformed reply: an array, not a JSON-RPC response object"],
    ["no jsonrpc member", { id: 1, result: null }, 'malformed reply: not a JSON-RPC 2.0 response ("jsonrpc" is not "2.0")'],
    ["another id", { jsonrpc: "2.0", id: 99, result: null }, "malformed reply: id 99 does not match the request's 1"],
    ["a string id", { jsonrpc: "2.0", id: "1", result: null }, 'malformed reply: id "1" does not match the request\'s 1'],
    ["no id", { jsonrpc: "2.0", result: null }, "malformed reply: id absent does not match the request's 1"],
    [
      "both result and error",
      { jsonrpc: "2.0", id: 1, result: null, error: { code: 1, message: "m" } },
      "malformed reply: a JSON-RPC response carries exactly one of result and error",
    ],
    ["neither result nor error", { jsonrpc: "2.0", id: 1 }, "malformed reply: a JSON-RPC response carries exactly one of result and error"],
    ["a malformed error", { jsonrpc: "2.0", id: 1, error: "bad" }, "malformed reply: error must be an object with a numeric code and a message"],
    ["a string result", { jsonrpc: "2.0", id: 1, result: "ok" }, "malformed reply: result is a string, not an object or null"],
    ["a list result", { jsonrpc: "2.0", id: 1, result: [] }, "malformed reply: result is an array, not an object or null"],
  ])("%s is a malformed reply", async (_title, body, message) => {
    server.respond = (_request, response) => reply(response, body);
    expect(await failureOf(executor().invoke(SPAWN, spawnContext()))).toBe(message);
  });

  it.each([
    [500, "HTTP 500"],
    [404, "HTTP 404"],
    [401, "HTTP 401"],
    [204, undefined],
  ])("status %i is a failure naming it", async (status, named) => {
    server.respond = (_request, response) => reply(response, status === 204 ? "" : { error: "x" }, status);
    const message = await failureOf(executor().invoke(SPAWN, spawnContext()));
    expect(message).toBe(named === undefined ? "malformed reply: not JSON" : `${new URL(server.url).origin} answered ${named}`);
  });

  it("a redirect is a failure and is not followed: the token never reaches where it points", async () => {
    const elsewhere = await ScriptedServer.start();
    servers.push(elsewhere);
    server.respond = (_request, response) => reply(response, "", 307, { location: elsewhere.url });
    const message = await failureOf(executor({ tokenEnv: "T" }, { T: TOKEN }).invoke(SPAWN, spawnContext()));
    expect(message).toBe(`${new URL(server.url).origin} answered HTTP 307 (a redirect, which is not followed)`);
    server.respond = (_request, response) => reply(response, "", 302, { location: elsewhere.url });
    expect(await failureOf(executor().invoke(SPAWN, spawnContext()))).toMatch(/answered HTTP 302 \(a redirect/);
    expect(elsewhere.requests).toHaveLength(0);
  });

  it("a reply over 1 MiB is a failure", async () => {
    server.respond = (request, response) => reply(response, { jsonrpc: "2.0", id: request.json?.id, result: { prompt: "x".repeat(MAX_REPLY_BYTES) } });
    expect(await failureOf(executor().invoke(SPAWN, spawnContext()))).toBe(`the reply is larger than ${MAX_REPLY_BYTES} bytes`);
  });

  it("a streamed reply over 1 MiB, with no length declared, is a failure", async () => {
    server.respond = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      const chunk = "x".repeat(64 * 1024);
      for (let sent = 0; sent <= MAX_REPLY_BYTES; sent += chunk.length) response.write(chunk);
      response.end();
    };
    expect(await failureOf(executor().invoke(SPAWN, spawnContext()))).toBe(`the reply is larger than ${MAX_REPLY_BYTES} bytes`);
  });
});

describe("remote executors: an endpoint that does not answer (abuse case 3)", () => {
  it("slow past timeoutSeconds is a failure, and the chain returns", async () => {
    server.respond = () => undefined;
    const { chain, sink } = chainOf({ timeoutSeconds: 0.2 });
    const outcome = await chain.run("session_spawn", spawnContext());
    expect(outcome).toEqual({ context: spawnContext(), changed: [] });
    expect(hookEvents(sink)).toEqual([
      ["hooks.failed", { point: "session_spawn", hook: "remote", error: `${new URL(server.url).origin} timed out after 0.2s`, required: false }],
    ]);
  });

  it("a body that stalls after the headers times out too", async () => {
    server.respond = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.write('{"jsonrpc": "2.0",');
    };
    expect(await failureOf(executor({ timeoutSeconds: 0.2 }).invoke(SPAWN, spawnContext()))).toMatch(/timed out after 0\.2s$/);
  });

  it("slow and required at a proceed point refuses", async () => {
    server.respond = () => undefined;
    const { chain } = chainOf({ timeoutSeconds: 0.2, required: true });
    const outcome = await chain.run("work_item_start", startContext());
    expect(outcome.refusal?.hook).toBe("remote");
    expect(outcome.context.proceed).toBe(false);
  });

  it("unreachable is a failure naming the origin", async () => {
    const port = await closedPort();
    const [entry] = parseHookDeclaration([{ name: "remote", url: `http://127.0.0.1:${port}/rpc?key=not-in-messages` }], {
      configDir: "/",
      points: LIFECYCLE_POINT_NAMES,
    });
    const remote = createRemoteExecutor(entry as RemoteHookEntry, { points: LIFECYCLE_POINTS });
    expect(await failureOf(remote.invoke(SPAWN, spawnContext()))).toBe(`cannot reach http://127.0.0.1:${port}: ECONNREFUSED`);
  });
});

describe("remote executors: the token stays secret", () => {
  it("appears in no event and no error, whatever the endpoint answers", async () => {
    const env = { AUDIT_TOKEN: TOKEN };
    const scripts: ((request: Parameters<ScriptedServer["respond"]>[0], response: Parameters<ScriptedServer["respond"]>[1]) => void)[] = [
      (request, response) => reply(response, { jsonrpc: "2.0", id: request.json?.id, result: { prompt: "new" } }),
      (request, response) =>
        reply(response, { jsonrpc: "2.0", id: request.json?.id, result: { prompt: `echo ${String(request.headers.authorization)}`, [TOKEN]: true } }),
      (request, response) => reply(response, { jsonrpc: "2.0", id: request.json?.id, result: { proceed: "no", [String(request.headers.authorization)]: 1 } }),
      (request, response) =>
        reply(response, { jsonrpc: "2.0", id: request.json?.id, error: { code: 1, message: `you sent ${String(request.headers.authorization)}` } }),
      (request, response) => reply(response, "", 302, { location: `https://elsewhere.example/?t=${String(request.headers.authorization)}` }),
      (request, response) => reply(response, `not json ${String(request.headers.authorization)}`),
      (request, response) => reply(response, { jsonrpc: "2.0", id: String(request.headers.authorization), result: null }),
      (_request, response) => reply(response, "", 500),
      () => undefined,
    ];
    const sink = new MemoryEventSink();
    const remote = executor({ tokenEnv: "AUDIT_TOKEN", timeoutSeconds: 0.2, required: true }, env);
    const chain = new HookChain([remote], sink);
    const errors: string[] = [];
    const contexts: unknown[] = [];
    for (const script of scripts) {
      server.respond = script;
      const outcome = await chain.run("session_spawn", spawnContext(), { workItem: WORK_ITEM.ref });
      contexts.push(outcome.context);
      if (outcome.refusal) errors.push(outcome.refusal.reason);
      errors.push(await failureOf(remote.invoke(SPAWN, spawnContext())).catch((error: unknown) => String(error)));
    }
    expect(server.requests.every((request) => request.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(server.requests.length).toBe(scripts.length * 2);
    expect(sink.events.length).toBeGreaterThan(0);
    expect(errors.some((error) => error.includes("[redacted]"))).toBe(true);
    expect(JSON.stringify(sink.events)).not.toContain(TOKEN);
    expect(JSON.stringify(errors)).not.toContain(TOKEN);
    expect(contexts).toContainEqual(spawnContext({ prompt: "echo Bearer [redacted]" }));
    expect(JSON.stringify(contexts)).not.toContain(TOKEN);
  });
});
