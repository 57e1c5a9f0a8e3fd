import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * A scripted Gemini API on loopback, for driving the real Gemini CLI offline
 * (`GOOGLE_GEMINI_BASE_URL`, with any `GEMINI_API_KEY`). The CLI's chat turn is
 * `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`, answered by the script as SSE; its
 * side calls (`:generateContent`, the router's complexity check, the next-speaker check) get one
 * JSON text that satisfies each of their schemas.
 *
 * The same server is the CLI's HTTP(S) proxy (`proxyEnv`): a request for any other host, plain or
 * CONNECT, is refused and recorded in `refused`, so a test can show nothing left loopback.
 */

export type GeminiReply = { readonly text: string } | { readonly functionCall: { readonly name: string; readonly args: Record<string, unknown> } };

export interface GeminiRequest {
  readonly path: string;
  readonly model: string;
  readonly body: GenerateContentBody;
  /** `streamGenerateContent` with tools offered: the agent's own turn, not a side call. */
  readonly agentic: boolean;
  /** Text of the newest `user` content (its text parts and function responses). */
  readonly lastUserText: string;
  /** Every text part and function response of the request, in order. */
  readonly allText: string;
}

export interface GenerateContentBody {
  readonly contents?: readonly { readonly role?: string; readonly parts?: readonly Record<string, unknown>[] }[];
  readonly tools?: readonly unknown[];
}

export interface GeminiStub {
  readonly url: string;
  readonly requests: GeminiRequest[];
  /** `host:port` or URL of every request that was meant for anywhere but this stub. */
  readonly refused: string[];
  /** The variables that send every other request the CLI makes to this stub, to be refused. */
  readonly proxyEnv: Record<string, string>;
  close(): Promise<void>;
}

/** Satisfies both side-call schemas: the model router's and the next-speaker check's. */
const SIDE_ANSWER = JSON.stringify({ complexity_reasoning: "scripted", complexity_score: 1, reasoning: "scripted", next_speaker: "user" });

const CHAT_PATH = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/;

/** The usage every reply reports, as the Gemini API's `usageMetadata` does (default: 10 in, 5 out). */
export interface GeminiUsage {
  readonly promptTokenCount: number;
  readonly candidatesTokenCount: number;
  /** Of promptTokenCount, those read from the context cache. */
  readonly cachedContentTokenCount?: number;
  readonly thoughtsTokenCount?: number;
}

/** `script` answers each agentic request, given it and every agentic request before it; `usage` is what every reply reports. */
export async function startGeminiStub(
  script: (request: GeminiRequest, agenticSoFar: readonly GeminiRequest[]) => GeminiReply,
  options: { readonly usage?: GeminiUsage } = {},
): Promise<GeminiStub> {
  const usage = usageMetadata(options.usage ?? { promptTokenCount: 10, candidatesTokenCount: 5 });
  const requests: GeminiRequest[] = [];
  const refused: string[] = [];
  const sockets = new Set<Socket>();
  let host = "";
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: 500, message: String(error), status: "INTERNAL" } }));
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  // An HTTPS request through the proxy: never tunnelled anywhere.
  server.on("connect", (req: IncomingMessage, socket: Socket) => {
    refused.push(req.url ?? "");
    socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n");
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = req.url ?? "/";
    // A proxied plain-http request names its host in the request line.
    if (/^[a-z]+:\/\//i.test(raw) && new URL(raw).host !== host) {
      refused.push(raw);
      res.writeHead(403).end();
      return;
    }
    const url = new URL(raw, `http://${host}`);
    const match = CHAT_PATH.exec(url.pathname);
    if (req.method !== "POST" || match === null) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: 404, message: `the stub has no ${req.method} ${url.pathname}`, status: "NOT_FOUND" } }));
      return;
    }
    const [, model = "", method = ""] = match;
    if (method === "countTokens") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ totalTokens: 10 }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as GenerateContentBody;
    const agentic = method === "streamGenerateContent" && (body.tools?.length ?? 0) > 0;
    const request: GeminiRequest = { path: url.pathname, model, body, agentic, lastUserText: lastUserText(body), allText: allText(body) };
    requests.push(request);
    const reply: GeminiReply = agentic
      ? script(
          request,
          requests.filter((r) => r.agentic),
        )
      : { text: SIDE_ANSWER };
    const response = responseOf(reply, usage);
    if (method === "generateContent") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(response));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.end(`data: ${JSON.stringify(response)}\r\n\r\n`);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  host = `127.0.0.1:${port}`;
  const url = `http://${host}`;
  return {
    url,
    requests,
    refused,
    proxyEnv: { HTTPS_PROXY: url, HTTP_PROXY: url, https_proxy: url, http_proxy: url, NO_PROXY: host, no_proxy: host },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function usageMetadata(usage: GeminiUsage): Record<string, unknown> {
  const total = usage.promptTokenCount + usage.candidatesTokenCount + (usage.thoughtsTokenCount ?? 0);
  return { ...usage, totalTokenCount: total };
}

function responseOf(reply: GeminiReply, usage: Record<string, unknown>): Record<string, unknown> {
  const parts = "text" in reply ? [{ text: reply.text }] : [{ functionCall: { name: reply.functionCall.name, args: reply.functionCall.args } }];
  return {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata: usage,
    modelVersion: "gemini-stub",
  };
}

function textOfParts(parts: readonly Record<string, unknown>[] | undefined): string {
  return (parts ?? [])
    .map((part) => {
      if (typeof part.text === "string") return part.text;
      if (part.functionResponse !== undefined) return JSON.stringify(part.functionResponse);
      return "";
    })
    .filter(Boolean)
    .join("\n");
}

function lastUserText(body: GenerateContentBody): string {
  const users = (body.contents ?? []).filter((content) => content.role === "user");
  return textOfParts(users[users.length - 1]?.parts);
}

function allText(body: GenerateContentBody): string {
  return (body.contents ?? []).map((content) => textOfParts(content.parts)).join("\n");
}
