import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Socket } from "node:net";

/**
 * An HTTP proxy on loopback that forwards nothing: every request a program sends through it
 * (`CONNECT host:443` for HTTPS, a plain request for HTTP) is recorded and refused with 403.
 * Pointed at by the proxy variables of a real agent CLI under test, it turns any attempt to
 * reach the internet into a counted refusal instead of a request made.
 */
export interface RefusingProxy {
  readonly url: string;
  /** `CONNECT host:port` or `METHOD url`, one per attempt. */
  readonly refused: string[];
  close(): Promise<void>;
}

export async function startRefusingProxy(): Promise<RefusingProxy> {
  const refused: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    refused.push(`${req.method ?? "?"} ${req.url ?? ""}`);
    res.writeHead(403, { "content-type": "text/plain" });
    res.end("refused: this test reaches nothing beyond loopback\n");
  });
  server.on("connect", (req, socket: Socket) => {
    refused.push(`CONNECT ${req.url ?? ""}`);
    socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n");
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
