import { readdirSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import type { Server, Socket } from "node:net";
import { z } from "zod";
import { afterEach, describe, expect, it } from "vitest";
import { callDaemon, daemonSocketPath, serveRpc } from "../../src/daemon/socket/rpc.js";
import type { RpcCaller } from "../../src/daemon/socket/rpc.js";
import { rawRequest, rpcSockets } from "../support/rpc-socket.js";
import { waitFor } from "../support/wait.js";

/**
 * The socket's protocol: every line is parsed with a schema and anything else is answered with
 * an error line (never an exception that stops the daemon), idle connections are closed, and
 * the connections served at once are capped.
 */

const { stateRoot, servers } = rpcSockets("the-loop-rpcp-");
const others: Server[] = [];

afterEach(async () => {
  await Promise.all(others.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

function connect(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** A connection, tried again while the listen backlog is full (EAGAIN): the server accepts in this same process. */
function connectPatiently(path: string): Promise<Socket> {
  return waitFor(
    "room in the listen backlog",
    () =>
      connect(path).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
        return undefined;
      }),
    { intervalMs: 5 },
  );
}

const openFiles = (): number => readdirSync("/proc/self/fd").length;

describe("the daemon socket's protocol", () => {
  it.each([
    ["null", /a request is one JSON object/],
    ["[]", /a request is one JSON object/],
    ['"x"', /a request is one JSON object/],
    ['{"method":1}', /method/],
    ["42", /a request is one JSON object/],
    ['{"method":"echo","session":{"workItem":"#1"}}', /session/],
    ['{"method":"echo","extra":true}', /extra/],
  ])("answers the line %s with an error and goes on serving", async (line, error) => {
    const root = stateRoot();
    const server = await serveRpc(root, { echo: async (params) => ({ got: params ?? null }) });
    servers.push(server);
    const answer = JSON.parse(await rawRequest(server.path, `${line}\n`)) as { ok: boolean; error: string };
    expect(answer.ok).toBe(false);
    expect(answer.error).toMatch(error);
    await expect(callDaemon(root, "echo", { a: 1 }, 5_000)).resolves.toEqual({ got: { a: 1 } });
  });

  it("answers a handler that throws at once with its error", async () => {
    const root = stateRoot();
    const server = await serveRpc(root, {
      sync: () => {
        throw new TypeError("boom");
      },
    });
    servers.push(server);
    await expect(callDaemon(root, "sync", {}, 5_000)).rejects.toThrow("the daemon refused: boom");
  });

  it("hands a handler the session credential a request carries, and nothing when it carries none", async () => {
    const root = stateRoot();
    const seen: RpcCaller[] = [];
    servers.push(
      await serveRpc(root, {
        who: async (_params, caller) => {
          seen.push(caller);
          return null;
        },
      }),
    );
    const session = { workItem: "local:demo#1", token: "t".repeat(43) };
    await callDaemon(root, "who", {}, 5_000, { session });
    await callDaemon(root, "who", {}, 5_000);
    expect(seen).toEqual([{ session }, {}]);
  });

  it("closes a connection that sends no whole line within the idle bound", async () => {
    const root = stateRoot();
    const server = await serveRpc(root, {}, { idleMs: 200 });
    servers.push(server);
    const started = Date.now();
    const answer = JSON.parse(await rawRequest(server.path, '{"method":')) as { ok: boolean; error: string };
    expect(answer).toMatchObject({ ok: false, error: expect.stringMatching(/no request within/) });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("refuses connections past its cap with an error line, and serves again once they close", async () => {
    const root = stateRoot();
    const server = await serveRpc(root, { echo: async () => "here" }, { maxConnections: 3, idleMs: 60_000 });
    servers.push(server);
    const held = await Promise.all([1, 2, 3].map(() => connect(server.path)));
    try {
      const refused = JSON.parse(await rawRequest(server.path, '{"method":"echo"}\n')) as { ok: boolean; error: string };
      expect(refused).toEqual({ ok: false, error: expect.stringMatching(/at most 3 connections/) });
    } finally {
      for (const socket of held) socket.destroy();
    }
    await waitFor("a free connection", async () => (await callDaemon(root, "echo", {}, 2_000).catch(() => undefined)) === "here");
  });

  it("holds 1,000 idle connections to a bounded number of files and still answers a request", async () => {
    const root = stateRoot();
    const server = await serveRpc(root, { echo: async () => "still here" }, { idleMs: 60_000 });
    servers.push(server);
    const before = openFiles();
    const sockets: Socket[] = [];
    let ended = 0;
    try {
      // In batches, so the listen backlog is never what refuses them.
      for (let batch = 0; batch < 10; batch++) {
        const opened = await Promise.all(
          Array.from({ length: 100 }, () =>
            connectPatiently(server.path).then((socket) => {
              socket.on("error", () => undefined);
              socket.on("end", () => (ended += 1));
              socket.resume();
              return socket;
            }),
          ),
        );
        sockets.push(...opened);
      }
      // The daemon side holds at most its cap (64) of them; the rest were answered and closed.
      expect(sockets.length).toBe(1_000);
      await waitFor("the refused connections closed", () => ended >= 1_000 - 64);
      expect(ended).toBe(1_000 - 64);
      for (const socket of sockets) socket.destroy();
      await waitFor("the connections let go", async () => (await callDaemon(root, "echo", {}, 2_000).catch(() => undefined)) === "still here");
      expect(openFiles()).toBeLessThan(before + 100);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it("refuses an answer that is not {ok, result} or {ok, error}, and one that does not match the method's schema", async () => {
    const root = stateRoot();
    const path = daemonSocketPath(root);
    const replies = ['{"ok":"yes"}', '{"ok":true,"result":{"moved":"no"}}'];
    const fake = createServer((socket) => {
      socket.on("error", () => undefined);
      socket.once("data", () => socket.end(`${replies.shift() ?? "null"}\n`));
    });
    others.push(fake);
    await new Promise<void>((resolve) => fake.listen(path, () => resolve()));
    await expect(callDaemon(root, "graph.complete", {}, 5_000)).rejects.toThrow(/not \{ok, result\} or \{ok, error\}/);
    await expect(callDaemon(root, "graph.complete", {}, 5_000, { result: z.object({ moved: z.boolean() }) })).rejects.toThrow(
      /not what this version of the-loop expects \(moved:/,
    );
  });
});
