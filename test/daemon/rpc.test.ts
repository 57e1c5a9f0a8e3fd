import { statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NoDaemonError, callDaemon, daemonSocketPath, serveRpc } from "../../src/daemon/socket/rpc.js";
import { rawRequest, rpcSockets } from "../support/rpc-socket.js";

const { stateRoot, servers } = rpcSockets("the-loop-rpc-");

describe("the daemon's request channel", () => {
  it("answers a request with its handler's result", async () => {
    const root = stateRoot();
    servers.push(await serveRpc(root, { echo: async (params) => ({ got: params }) }));
    await expect(callDaemon(root, "echo", { a: 1 }, 5_000)).resolves.toEqual({ got: { a: 1 } });
  });

  it("keeps the socket in the state root, readable by its owner only", async () => {
    const root = stateRoot();
    const server = await serveRpc(root, {});
    servers.push(server);
    expect(server.path).toBe(join(root, "daemon.sock"));
    expect(statSync(server.path).mode & 0o077).toBe(0);
  });

  it("never moves the socket to the temporary folder when the state root's path is too long for one (socket-path.test.ts)", async () => {
    const root = join(stateRoot(), "x".repeat(120));
    expect(() => daemonSocketPath(root, { runtimeDir: undefined })).toThrow("XDG_RUNTIME_DIR is unset");
  });

  it("passes a handler's failure back as the daemon's refusal", async () => {
    const root = stateRoot();
    servers.push(await serveRpc(root, { fail: () => Promise.reject(new Error("not today")) }));
    await expect(callDaemon(root, "fail", {}, 5_000)).rejects.toThrow("the daemon refused: not today");
  });

  it("refuses a method it does not know, and a line that is not JSON", async () => {
    const root = stateRoot();
    const server = await serveRpc(root, {});
    servers.push(server);
    await expect(callDaemon(root, "toString", {}, 5_000)).rejects.toThrow('does not answer "toString"');
    expect(JSON.parse(await rawRequest(server.path, "{ not json\n"))).toEqual({ ok: false, error: "a request is one line of JSON" });
  });

  it("refuses an oversized request without waiting for its end", async () => {
    const root = stateRoot();
    const server = await serveRpc(root, {});
    servers.push(server);
    const answer = JSON.parse(await rawRequest(server.path, "x".repeat(100 * 1024)));
    expect(answer.ok).toBe(false);
    expect(answer.error).toMatch(/at most/);
  });

  it("says no daemon runs when nothing listens, and after a killed daemon left its socket file", async () => {
    const root = stateRoot();
    await expect(callDaemon(root, "echo", {}, 5_000)).rejects.toBeInstanceOf(NoDaemonError);
    const server = await serveRpc(root, {});
    await server.close();
    await expect(callDaemon(root, "echo", {}, 5_000)).rejects.toThrow(/no daemon is running.*the-loop start/);
  });

  it("takes over a socket file a killed daemon left behind", async () => {
    const root = stateRoot();
    const first = await serveRpc(root, { who: async () => "first" });
    // A kill -9 leaves the file; the next daemon holds the service lock, so the file is stale.
    servers.push(await serveRpc(root, { who: async () => "second" }));
    await expect(callDaemon(root, "who", {}, 5_000)).resolves.toBe("second");
    await first.close().catch(() => undefined);
  });
});
