import { createServer as createNetServer } from "node:net";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { RemoteHookEntry } from "../../src/hooks/declaration.js";
import { createRemoteExecutor } from "../../src/hooks/remote.js";
import type { HookExecutor } from "../../src/hooks/types.js";
import { LIFECYCLE_POINTS, LIFECYCLE_POINT_NAMES, lifecyclePoint } from "../../src/sdk/hooks/catalog.js";
import type { HookPoint } from "../../src/sdk/hooks/catalog.js";
import { failureOf, spawnContext } from "./support/fixtures.js";
import { ScriptedServer, reply } from "./support/rpc-server.js";

/** Review findings on the remote executor: each test failed before its fix. */

const SPAWN = lifecyclePoint("session_spawn") as HookPoint;
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

function executorFor(url: string, raw: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}): HookExecutor {
  const [entry] = parseHookDeclaration([{ name: "remote", url, ...raw }], { configDir: "/", points: LIFECYCLE_POINT_NAMES });
  const executor = createRemoteExecutor(entry as RemoteHookEntry, { points: LIFECYCLE_POINTS, env });
  cleanups.push(async () => executor.close?.());
  return executor;
}

async function scripted(): Promise<ScriptedServer> {
  const server = await ScriptedServer.start();
  cleanups.push(() => server.close());
  return server;
}

/**
 * A bare HTTP/1.1 endpoint that answers JSON-RPC pass-through on kept-alive connections and
 * resets a connection at the request number `resetAt` names (counted per connection, from 1).
 */
async function resettingServer(resetAt: (requestOnConnection: number) => boolean): Promise<{ url: string; connections: () => number; requests: () => number }> {
  const sockets: Socket[] = [];
  let requests = 0;
  const server = createNetServer((socket) => {
    sockets.push(socket);
    let served = 0;
    let buffer = "";
    socket.on("error", () => undefined);
    socket.on("data", (data: Buffer) => {
      buffer += data.toString("utf8");
      const headEnd = buffer.indexOf("\r\n\r\n");
      if (headEnd === -1) return;
      const length = Number(/content-length: *(\d+)/i.exec(buffer.slice(0, headEnd))?.[1] ?? 0);
      if (Buffer.byteLength(buffer.slice(headEnd + 4)) < length) return;
      const request = JSON.parse(buffer.slice(headEnd + 4)) as { id: number };
      buffer = "";
      served += 1;
      requests += 1;
      if (resetAt(served)) {
        socket.resetAndDestroy();
        return;
      }
      const text = JSON.stringify({ jsonrpc: "2.0", id: request.id, result: null });
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`, connections: () => sockets.length, requests: () => requests };
}

describe("remote executor: the connection pool", () => {
  it("an error status whose body never ends holds no connection, so a recovered endpoint is answered", async () => {
    const server = await scripted();
    let broken = true;
    server.respond = (request, response) => {
      if (!broken) return reply(response, { jsonrpc: "2.0", id: request.json?.id, result: { prompt: "recovered" } });
      response.writeHead(502, { "content-type": "text/html" });
      response.write("<html>bad gateway");
    };
    const remote = executorFor(server.url, { timeoutSeconds: 1 });
    const origin = new URL(server.url).origin;
    // More than the agent's eight connections: each failure must give its connection back.
    for (let call = 0; call < 10; call++) expect(await failureOf(remote.invoke(SPAWN, spawnContext()))).toBe(`${origin} answered HTTP 502`);
    broken = false;
    expect(await remote.invoke(SPAWN, spawnContext())).toEqual({ prompt: "recovered" });
  });

  it("a kept-alive connection the server dropped while idle is retried on a fresh one", async () => {
    const endpoint = await resettingServer((requestOnConnection) => requestOnConnection > 1);
    const remote = executorFor(endpoint.url, { timeoutSeconds: 2 });
    expect(await remote.invoke(SPAWN, spawnContext())).toBeUndefined();
    expect(await remote.invoke(SPAWN, spawnContext())).toBeUndefined();
    expect(await remote.invoke(SPAWN, spawnContext())).toBeUndefined();
    expect(endpoint.connections()).toBe(3);
  });

  it("a fresh connection reset is the hook's failure, tried once", async () => {
    const endpoint = await resettingServer(() => true);
    const remote = executorFor(endpoint.url, { timeoutSeconds: 2 });
    expect(await failureOf(remote.invoke(SPAWN, spawnContext()))).toBe(`cannot reach ${new URL(endpoint.url).origin}: ECONNRESET`);
    expect(endpoint.requests()).toBe(1);
  });
});

describe("remote executor: the token in a reply", () => {
  const TOKEN = "tK9/Zq+Vw=";

  it.each([
    ["with its solidus escaped", (text: string) => text.replaceAll("/", "\\/")],
    ["as \\u escapes", (text: string) => text.replaceAll("tK9", "\\u0074\\u004B\\u0039")],
  ])("is redacted when a server echoes it %s", async (_title, escape) => {
    const server = await scripted();
    server.respond = (request, response) => {
      const echoed = String(request.headers.authorization);
      reply(response, escape(JSON.stringify({ jsonrpc: "2.0", id: request.json?.id, result: { prompt: `echo ${echoed}`, [echoed]: 1 } })));
    };
    const answer = await executorFor(server.url, { tokenEnv: "T" }, { T: TOKEN }).invoke(SPAWN, spawnContext());
    expect(answer).toEqual({ prompt: "echo Bearer [redacted]", "Bearer [redacted]": 1 });
    expect(JSON.stringify(answer)).not.toContain(TOKEN);
  });
});

describe("remote executor: a token node:http cannot carry", () => {
  it("fails at once, sends nothing and names no token", async () => {
    const server = await scripted();
    const token = "line-one\nline-two";
    const began = Date.now();
    const message = await failureOf(executorFor(server.url, { tokenEnv: "T", timeoutSeconds: 5 }, { T: token }).invoke(SPAWN, spawnContext()));
    expect(Date.now() - began).toBeLessThan(1_000);
    expect(message).not.toContain("line-one");
    expect(server.requests).toHaveLength(0);
  });
});

describe("remote executor: the reply's encoding", () => {
  it("a reply that is not UTF-8 is malformed, not repaired into a decision", async () => {
    const server = await scripted();
    server.respond = (request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.write(`{"jsonrpc":"2.0","id":${String(request.json?.id)},"result":{"prompt":"`);
      response.write(Buffer.from([0xc3, 0x28]));
      response.end('"}}');
    };
    expect(await failureOf(executorFor(server.url).invoke(SPAWN, spawnContext()))).toBe("malformed reply: not UTF-8");
  });

  it("a reply opening with a byte order mark is read, as the SDK's server reads a request", async () => {
    const server = await scripted();
    server.respond = (request, response) => reply(response, `\uFEFF${JSON.stringify({ jsonrpc: "2.0", id: request.json?.id, result: { prompt: "ünï" } })}`);
    expect(await executorFor(server.url).invoke(SPAWN, spawnContext())).toEqual({ prompt: "ünï" });
  });
});
