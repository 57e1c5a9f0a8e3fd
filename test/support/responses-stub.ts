import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A scripted OpenAI Responses API on loopback, for driving the real Codex CLI offline through a
 * custom model provider (`base_url = "<url>/v1"`, `wire_api = "responses"`). Every
 * `POST /v1/responses` is recorded; an agentic request (one that offers tools) is answered by
 * the script, a tool-less one (Codex asks for a task title beside each turn) with a title.
 * Replies stream as SSE and always end in `response.completed` with usage: without it Codex
 * takes the stream for broken and retries. Any other path is refused with 404 and counted.
 */

/** The usage every reply reports, as the Responses API does on `response.completed` (default: 10 in, 5 out). */
export interface ResponsesUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  /** Of input_tokens, those read from the prompt cache. */
  readonly cached_tokens?: number;
  /** Of output_tokens, the reasoning. */
  readonly reasoning_tokens?: number;
}

export type ResponsesReply = (
  { readonly text: string } | { readonly call: { readonly name: string; readonly args: Record<string, unknown>; readonly namespace?: string } }
) & {
  /** Holds the reply back this long after its first event, as a model still thinking would (the agent shows itself busy meanwhile). */
  readonly delayMs?: number;
};

export interface ResponsesRequest {
  readonly url: string;
  readonly body: ResponsesBody;
  /** The request offered tools: the agent's own turn, not a side request. */
  readonly agentic: boolean;
  /** Text of the newest user message or tool output, what the person or a tool said last. */
  readonly lastUserText: string;
  /** Every input item's text, oldest first: the whole conversation the model is shown. */
  readonly allText: string;
  readonly receivedAt: number;
}

export interface ResponsesBody {
  readonly model?: string;
  readonly stream?: boolean;
  readonly tools?: readonly unknown[];
  readonly input?: readonly InputItem[];
}

interface InputItem {
  readonly type?: string;
  readonly role?: string;
  readonly content?: unknown;
  readonly output?: unknown;
}

export interface ResponsesStub {
  readonly url: string;
  readonly requests: ResponsesRequest[];
  /** Requests to anything but `POST /v1/responses`, refused. */
  readonly refused: string[];
  close(): Promise<void>;
}

/** `script` answers each agentic request, given it and every agentic request before it; `usage` is what every reply reports. */
export async function startResponsesStub(
  script: (request: ResponsesRequest, agenticSoFar: readonly ResponsesRequest[]) => ResponsesReply,
  options: { readonly usage?: ResponsesUsage } = {},
): Promise<ResponsesStub> {
  const usage = wireUsage(options.usage ?? { input_tokens: 10, output_tokens: 5 });
  const requests: ResponsesRequest[] = [];
  const refused: string[] = [];
  let ids = 0;
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { type: "server_error", message: String(error) } }));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method !== "POST" || path !== "/v1/responses") {
      refused.push(`${req.method ?? "?"} ${req.url ?? ""}`);
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { type: "not_found", message: "the stub answers POST /v1/responses only" } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as ResponsesBody;
    const agentic = (body.tools?.length ?? 0) > 0;
    const items = body.input ?? [];
    const request: ResponsesRequest = {
      url: req.url ?? "",
      body,
      agentic,
      lastUserText: lastUserText(items),
      allText: items.map(itemText).filter(Boolean).join("\n"),
      receivedAt: Date.now(),
    };
    requests.push(request);
    const reply: ResponsesReply = agentic
      ? script(
          request,
          requests.filter((r) => r.agentic),
        )
      : { text: JSON.stringify({ title: "Work item session" }) };
    const n = ++ids;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    const [created, ...rest] = streamEvents(n, body.model ?? "stub-model", reply, usage);
    for (const data of [created, ...rest]) {
      res.write(`event: ${String(data?.type)}\ndata: ${JSON.stringify(data)}\n\n`);
      if (data === created && reply.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    }
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function lastUserText(items: readonly InputItem[]): string {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item === undefined) continue;
    if (item.type === "function_call_output" || (item.role === "user" && (item.type === undefined || item.type === "message"))) return itemText(item);
  }
  return "";
}

function itemText(item: InputItem): string {
  if (item.type === "function_call_output") return textOf(item.output);
  if (item.role === "user" || item.role === "assistant") return textOf(item.content);
  return "";
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (typeof content === "object" && content !== null && !Array.isArray(content)) {
    const { content: inner, text } = content as { content?: unknown; text?: unknown };
    if (typeof text === "string") return text;
    return textOf(inner);
  }
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => {
      if (typeof part !== "object" || part === null) return "";
      const { text } = part as { text?: unknown };
      return typeof text === "string" ? text : "";
    })
    .filter(Boolean)
    .join("\n");
}

/** The Responses API's usage object: details beside each count, and their total. */
function wireUsage(usage: ResponsesUsage): Record<string, unknown> {
  return {
    input_tokens: usage.input_tokens,
    input_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
    output_tokens: usage.output_tokens,
    output_tokens_details: { reasoning_tokens: usage.reasoning_tokens ?? 0 },
    total_tokens: usage.input_tokens + usage.output_tokens,
  };
}

function streamEvents(n: number, model: string, reply: ResponsesReply, usage: Record<string, unknown>): Record<string, unknown>[] {
  const id = `resp_stub_${n}`;
  const item =
    "text" in reply
      ? { type: "message", id: `msg_stub_${n}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: reply.text, annotations: [] }] }
      : {
          type: "function_call",
          id: `fc_stub_${n}`,
          call_id: `call_stub_${n}`,
          name: reply.call.name,
          // A tool offered inside a namespace (Codex offers an MCP server's tools so) is called by both.
          ...(reply.call.namespace === undefined ? {} : { namespace: reply.call.namespace }),
          arguments: JSON.stringify(reply.call.args),
          status: "completed",
        };
  return [
    { type: "response.created", response: { id, object: "response", model, status: "in_progress", output: [] } },
    { type: "response.output_item.added", output_index: 0, item },
    ...("text" in reply ? [{ type: "response.output_text.delta", item_id: item.id, output_index: 0, content_index: 0, delta: reply.text }] : []),
    { type: "response.output_item.done", output_index: 0, item },
    { type: "response.completed", response: { id, object: "response", model, status: "completed", output: [item], usage } },
  ];
}
