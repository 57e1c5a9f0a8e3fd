import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import type { RpcServer } from "../../src/daemon/socket/rpc.js";

/**
 * What a test of the daemon's request channel sets up: fresh state roots (`prefix` names their
 * folders) and the servers a test pushes onto `servers`, closed and removed after each test.
 * Call it at the top level of the file.
 */
export function rpcSockets(prefix: string): { stateRoot(): string; readonly servers: RpcServer[] } {
  const roots: string[] = [];
  const servers: RpcServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  return {
    stateRoot: () => {
      const root = mkdtempSync(join(tmpdir(), prefix));
      roots.push(root);
      return root;
    },
    servers,
  };
}

/** Sends `line` on the socket at `path` and collects everything until the connection closes. */
export function rawRequest(path: string, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    let received = "";
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(line));
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("close", () => resolve(received));
    socket.on("error", reject);
  });
}
