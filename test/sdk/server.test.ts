import { request as httpRequest } from "node:http";
import { inspect } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { HOOK_RPC_ERRORS, HookServer, LifecycleHooks } from "../../src/sdk/hooks/index.js";
import type { HookServerOptions, PhaseChangedContext, SessionSpawnContext, WorkItemStartContext } from "../../src/sdk/hooks/index.js";

const TOKEN = "s3cret-token-for-tests";

/** One class answering several points, as an operator's hook would. */
class Policy extends LifecycleHooks {
  calls: string[] = [];

  override workItemStart(context: WorkItemStartContext): WorkItemStartContext {
    this.calls.push("work_item_start");
    return context.actor === "mallory" ? { ...context, proceed: false, reason: "not on the allow list" } : context;
  }

  override async sessionSpawn(context: SessionSpawnContext): Promise<SessionSpawnContext> {
    this.calls.push("session_spawn");
    await Promise.resolve();
    return { ...context, prompt: `[policy] ${context.prompt}` };
  }

  override phaseChanged(_context: PhaseChangedContext): undefined {
    this.calls.push("phase_changed");
    return undefined;
  }
}

const servers: HookServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function started(executor: LifecycleHooks, options?: HookServerOptions): Promise<HookServer> {
  const server = new HookServer(executor, options);
  servers.push(server);
  await server.listen();
  return server;
}

function rpc(method: string, params: Record<string, unknown>, id: number | string = 1): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method, params });
}

/** A request without an id: JSON-RPC's notification. */
function notify(method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: "2.0", method, params });
}

/** `json` is undefined when the body is empty, as a 204 has it. */
async function post(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: text === "" ? undefined : (JSON.parse(text) as unknown) };
}

/** A chunked request with no Content-Length, so the limit can only be found while streaming. */
function postChunked(url: string, chunks: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers: { "transfer-encoding": "chunked" } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on("error", reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe("HookServer", () => {
  it("listens on loopback on a free port by default and reports its URL", async () => {
    const server = new HookServer(new Policy());
    servers.push(server);
    expect(() => server.url).toThrow(/not listening/);
    const url = await server.listen();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(server.url).toBe(url);
    await server.close();
    expect(() => server.url).toThrow(/not listening/);
  });

  it("answers a JSON-RPC request with 200 and the decisions", async () => {
    const executor = new Policy();
    const server = await started(executor, { token: TOKEN, path: "/hooks" });
    const answer = await post(server.url, rpc("work_item_start", { actor: "mallory", workItem: { ref: "local:demo#1" }, proceed: true, reason: "" }, 7), {
      authorization: `Bearer ${TOKEN}`,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("application/json");
    expect(answer.json).toEqual({ jsonrpc: "2.0", id: 7, result: { proceed: false, reason: "not on the allow list" } });
    expect(executor.calls).toEqual(["work_item_start"]);
  });

  it("serves every point of one executor class, passing through the ones it leaves alone", async () => {
    const executor = new Policy();
    const server = await started(executor);
    expect((await post(server.url, rpc("session_spawn", { prompt: "go", proceed: true, reason: "" }, 1))).json).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { proceed: true, reason: "", prompt: "[policy] go" },
    });
    expect((await post(server.url, rpc("phase_changed", { toPhase: "design", notify: true }, 2))).json).toEqual({ jsonrpc: "2.0", id: 2, result: null });
    expect((await post(server.url, rpc("work_item_complete", { announce: true }, 3))).json).toEqual({ jsonrpc: "2.0", id: 3, result: null });
    expect(executor.calls).toEqual(["session_spawn", "phase_changed"]);
  });

  it("answers a JSON-RPC error with 200, as the protocol carries it", async () => {
    const server = await started(new Policy());
    const answer = await post(server.url, "{not json");
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ id: null, error: { code: HOOK_RPC_ERRORS.parseError } });
  });

  it("answers a notification with 204 and no body, after running its hook", async () => {
    const executor = new Policy();
    const server = await started(executor, { token: TOKEN });
    const answer = await post(server.url, notify("work_item_start", { actor: "mallory", proceed: true, reason: "" }), { authorization: `Bearer ${TOKEN}` });
    expect(answer.status).toBe(204);
    expect(answer.text).toBe("");
    expect(answer.headers.get("content-length")).toBeNull();
    expect(executor.calls).toEqual(["work_item_start"]);
  });

  it("answers a batch with 200 and one response per request, notifications left out", async () => {
    const executor = new Policy();
    const server = await started(executor);
    const batch = `[${rpc("work_item_start", { actor: "mallory", proceed: true, reason: "" }, "a")},${notify("phase_changed", {})},${rpc("no_such_point", {}, "b")}]`;
    const answer = await post(server.url, batch);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual([
      { jsonrpc: "2.0", id: "a", result: { proceed: false, reason: "not on the allow list" } },
      { jsonrpc: "2.0", id: "b", error: { code: HOOK_RPC_ERRORS.methodNotFound, message: expect.stringMatching(/^Method not found/) as unknown } },
    ]);
    expect(executor.calls).toEqual(["work_item_start", "phase_changed"]);
  });

  it("answers a batch made only of notifications with 204 and no body", async () => {
    const executor = new Policy();
    const server = await started(executor);
    const answer = await post(server.url, `[${notify("phase_changed", {})},${notify("session_spawn", { prompt: "go" })}]`);
    expect(answer.status).toBe(204);
    expect(answer.text).toBe("");
    expect(executor.calls).toEqual(["phase_changed", "session_spawn"]);
  });

  it("refuses a notification without the bearer token with 401, running no hook", async () => {
    const executor = new Policy();
    const server = await started(executor, { token: TOKEN });
    expect((await post(server.url, notify("phase_changed", {}))).status).toBe(401);
    expect(executor.calls).toEqual([]);
  });

  it.each<{ name: string; headers: Record<string, string> }>([
    { name: "no Authorization header", headers: {} },
    { name: "a wrong token", headers: { authorization: "Bearer not-the-token" } },
    { name: "a token that is a prefix of the right one", headers: { authorization: `Bearer ${TOKEN.slice(0, -1)}` } },
    { name: "another scheme", headers: { authorization: `Basic ${TOKEN}` } },
    { name: "the token without a scheme", headers: { authorization: TOKEN } },
  ])("refuses $name with 401 and never calls the executor", async ({ headers }) => {
    const executor = new Policy();
    const server = await started(executor, { token: TOKEN });
    const answer = await post(server.url, rpc("work_item_start", { actor: "a" }), headers);
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toBe("Bearer");
    expect(answer.json).toMatchObject({ jsonrpc: "2.0", id: null, error: { message: expect.stringMatching(/Unauthorized/) } });
    expect(JSON.stringify(answer.json)).not.toContain(TOKEN);
    expect(executor.calls).toEqual([]);
  });

  it("accepts the bearer scheme in any case", async () => {
    const server = await started(new Policy(), { token: TOKEN });
    expect((await post(server.url, rpc("phase_changed", {}), { authorization: `bearer ${TOKEN}` })).status).toBe(200);
  });

  it("keeps the token out of an inspection of the server and out of its errors", async () => {
    const server = await started(new Policy(), { token: TOKEN });
    expect(inspect(server, { depth: 5, showHidden: true })).not.toContain(TOKEN);
    expect(() => new HookServer(new Policy(), { token: "" })).toThrow(/token must not be empty/);
  });

  it("answers 404 off its path, whatever the query string", async () => {
    const executor = new Policy();
    const server = await started(executor, { path: "/hooks" });
    const origin = new URL(server.url).origin;
    expect((await post(`${origin}/`, rpc("phase_changed", {}))).status).toBe(404);
    expect((await post(`${origin}/hooks/extra`, rpc("phase_changed", {}))).status).toBe(404);
    expect((await post(`${origin}/hooks?x=1`, rpc("phase_changed", {}))).status).toBe(200);
    expect(executor.calls).toEqual(["phase_changed"]);
  });

  it("answers 405 with Allow: POST to any other method", async () => {
    const server = await started(new Policy());
    for (const method of ["GET", "PUT", "DELETE"]) {
      const response = await fetch(server.url, { method });
      await response.text();
      expect(response.status, method).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
    }
  });

  it("answers 413 to a body over the limit, by Content-Length and while streaming", async () => {
    const executor = new Policy();
    const server = await started(executor, { maxBodyBytes: 256 });
    const big = rpc("phase_changed", { padding: "x".repeat(400) });
    expect((await post(server.url, big)).status).toBe(413);
    expect(await postChunked(server.url, [big.slice(0, 200), big.slice(200)])).toBe(413);
    expect(await postChunked(server.url, [rpc("phase_changed", {})])).toBe(200);
    expect(executor.calls).toEqual(["phase_changed"]);
  });

  it("reuses one keep-alive connection for sequential requests", async () => {
    const server = await started(new Policy(), { token: TOKEN });
    let connections = 0;
    server.httpServer.on("connection", () => {
      connections += 1;
    });
    for (const id of [1, 2, 3]) {
      const answer = await post(server.url, rpc("phase_changed", {}, id), { authorization: `Bearer ${TOKEN}` });
      expect(answer.json).toEqual({ jsonrpc: "2.0", id, result: null });
      // fetch hands the socket back to its pool a tick after the body ends; a request sent in the
      // same tick opens a second connection whatever the server does.
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(connections).toBe(1);
  });

  it("keeps the connection alive across a 204", async () => {
    const server = await started(new Policy());
    let connections = 0;
    server.httpServer.on("connection", () => {
      connections += 1;
    });
    expect((await post(server.url, notify("phase_changed", {}))).status).toBe(204);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await post(server.url, rpc("phase_changed", {}, 2))).json).toEqual({ jsonrpc: "2.0", id: 2, result: null });
    expect(connections).toBe(1);
  });

  it("closes promptly with an idle keep-alive connection open", async () => {
    const server = await started(new Policy());
    await post(server.url, rpc("phase_changed", {}));
    const began = Date.now();
    await server.close();
    expect(Date.now() - began).toBeLessThan(2_000);
  });

  it("answers a request in flight at close, then lets go of its connection", async () => {
    let entered: () => void = () => undefined;
    const hookEntered = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    class Slow extends LifecycleHooks {
      override async phaseChanged(context: PhaseChangedContext): Promise<PhaseChangedContext> {
        entered();
        await released;
        return { ...context, notify: false };
      }
    }
    const server = await started(new Slow());
    const pending = post(server.url, rpc("phase_changed", { notify: true }));
    await hookEntered;
    const began = Date.now();
    const closing = server.close();
    release();
    const answer = await pending;
    expect(answer.json).toEqual({ jsonrpc: "2.0", id: 1, result: { notify: false } });
    expect(answer.headers.get("connection")).toBe("close");
    await closing;
    expect(Date.now() - began).toBeLessThan(2_000);
  });

  it("answers 503 when the hook does not answer within requestTimeoutMs", async () => {
    class Hangs extends LifecycleHooks {
      override workItemStart(): Promise<never> {
        return new Promise<never>(() => undefined);
      }
    }
    const server = await started(new Hangs(), { requestTimeoutMs: 200 });
    const answer = await post(server.url, rpc("work_item_start", {}));
    expect(answer.status).toBe(503);
    expect(answer.json).toMatchObject({ error: { message: "the hook did not answer within 200 ms" } });
  });

  it("rejects options it cannot honour", () => {
    expect(() => new HookServer(new Policy(), { path: "hooks" })).toThrow(/path must start with/);
    expect(() => new HookServer(new Policy(), { port: 70_000 })).toThrow(RangeError);
    expect(() => new HookServer(new Policy(), { maxBodyBytes: 0 })).toThrow(RangeError);
    expect(() => new HookServer(new Policy(), { requestTimeoutMs: -1 })).toThrow(RangeError);
  });

  it("rejects listen() when the port is taken", async () => {
    const first = await started(new Policy());
    const second = new HookServer(new Policy(), { port: Number(new URL(first.url).port) });
    await expect(second.listen()).rejects.toThrow(/EADDRINUSE/);
  });
});
