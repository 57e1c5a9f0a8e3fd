import { createServer } from "node:http";
import type { IncomingHttpHeaders, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the server received. */
export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The body parsed as JSON (undefined when it is not). */
  readonly json: { jsonrpc?: unknown; method?: unknown; params?: Record<string, unknown>; id?: unknown } | undefined;
}

export type Responder = (request: ReceivedRequest, response: ServerResponse) => void;

/**
 * A real HTTP server on 127.0.0.1 that records every request and answers as the test scripts it
 * (`respond`): by default a JSON-RPC pass-through (`result: null`).
 */
export class ScriptedServer {
  readonly requests: ReceivedRequest[] = [];
  respond: Responder = (request, response) => reply(response, { jsonrpc: "2.0", id: request.json?.id ?? null, result: null });

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<ScriptedServer> {
    const holder: { scripted?: ScriptedServer } = {};
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        let json: ReceivedRequest["json"];
        try {
          json = JSON.parse(body) as ReceivedRequest["json"];
        } catch {
          json = undefined;
        }
        const received = { method: request.method ?? "", path: request.url ?? "", headers: request.headers, body, json };
        holder.scripted?.requests.push(received);
        holder.scripted?.respond(received, response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    holder.scripted = new ScriptedServer(server, `http://127.0.0.1:${port}/rpc`);
    return holder.scripted;
  }

  /** Answers every request with `result` (a JSON-RPC response to its id). */
  result(result: unknown): void {
    this.respond = (request, response) => reply(response, { jsonrpc: "2.0", id: request.json?.id ?? null, result });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export function reply(response: ServerResponse, body: unknown, status = 200, headers: Record<string, string> = {}): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(text);
}

/** A port nothing listens on: one the system just gave and took back. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
