import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A scripted Anthropic Messages API on loopback, for driving the real Claude Code CLI offline
 * (`ANTHROPIC_BASE_URL`). Every `POST /v1/messages` is recorded; an agentic request (one that
 * offers tools) is answered by the script, a tool-less one (a session title, a summary) with
 * plain text. Replies stream as the API does: `message_start` … `message_stop`.
 */

export type ModelReply = { readonly text: string } | { readonly toolUse: { readonly name: string; readonly input: Record<string, unknown> } };

export interface ModelRequest {
  readonly url: string;
  readonly body: MessagesBody;
  /** The request offered tools: the agent's own turn, not a side request. */
  readonly agentic: boolean;
  /** Text of the newest `user` message (its text blocks and tool results), what the person or a tool said last. */
  readonly lastUserText: string;
  readonly receivedAt: number;
}

export interface MessagesBody {
  readonly model?: string;
  readonly stream?: boolean;
  readonly tools?: readonly unknown[];
  readonly messages?: readonly { readonly role: string; readonly content: unknown }[];
}

export interface ModelStub {
  readonly url: string;
  readonly requests: ModelRequest[];
  close(): Promise<void>;
}

/** The usage each reply reports, as the Messages API does (input on message_start, output on message_delta). */
export interface StubUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_creation_input_tokens?: number;
  readonly cache_read_input_tokens?: number;
}

/**
 * `script` answers each agentic request, given it and every agentic request before it. `usage`
 * is what every reply reports (default: 10 in, 5 out).
 */
export async function startModelStub(
  script: (request: ModelRequest, agenticSoFar: readonly ModelRequest[]) => ModelReply,
  options: { readonly usage?: StubUsage } = {},
): Promise<ModelStub> {
  const usage = { ...USAGE, ...options.usage };
  const requests: ModelRequest[] = [];
  let toolIds = 0;
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ type: "error", error: { type: "api_error", message: String(error) } }));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method !== "POST" || path !== "/v1/messages") {
      // The CLI's reachability check (HEAD /) and anything else it may ask: a plain empty answer.
      res.writeHead(200, { "content-type": "application/json" });
      res.end(req.method === "HEAD" ? undefined : "{}");
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as MessagesBody;
    const agentic = (body.tools?.length ?? 0) > 0;
    const request: ModelRequest = { url: req.url ?? "", body, agentic, lastUserText: lastUserText(body), receivedAt: Date.now() };
    requests.push(request);
    const reply: ModelReply = agentic
      ? script(
          request,
          requests.filter((r) => r.agentic),
        )
      : { text: "Work item session" };
    const model = body.model ?? "claude-stub";
    if (body.stream === false) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(wholeMessage(model, reply, () => `toolu_stub_${++toolIds}`, usage)));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    for (const [event, data] of streamEvents(model, reply, () => `toolu_stub_${++toolIds}`, usage)) {
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    }
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function lastUserText(body: MessagesBody): string {
  const users = (body.messages ?? []).filter((message) => message.role === "user");
  const last = users[users.length - 1];
  if (last === undefined) return "";
  return textOf(last.content);
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: unknown) => {
      if (typeof block !== "object" || block === null) return "";
      const { type, text, content: inner } = block as { type?: string; text?: unknown; content?: unknown };
      if (type === "text" && typeof text === "string") return text;
      if (type === "tool_result") return textOf(inner);
      return "";
    })
    .filter(Boolean)
    .join("\n");
}

/** Message ids are unique within a run: Claude Code counts a message's usage once per id. */
let nextMessage = 0;

const USAGE = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

function wholeMessage(model: string, reply: ModelReply, nextToolId: () => string, usage: typeof USAGE): Record<string, unknown> {
  const content =
    "text" in reply ? [{ type: "text", text: reply.text }] : [{ type: "tool_use", id: nextToolId(), name: reply.toolUse.name, input: reply.toolUse.input }];
  return {
    id: `msg_stub_${Date.now()}`,
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: "text" in reply ? "end_turn" : "tool_use",
    stop_sequence: null,
    usage,
  };
}

function streamEvents(model: string, reply: ModelReply, nextToolId: () => string, usage: typeof USAGE): [string, unknown][] {
  const start: [string, unknown] = [
    "message_start",
    {
      type: "message_start",
      message: {
        id: `msg_stub_${Date.now()}_${nextMessage++}`,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage,
      },
    },
  ];
  const block: [string, unknown][] =
    "text" in reply
      ? [
          ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
          ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: reply.text } }],
        ]
      : [
          [
            "content_block_start",
            { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: nextToolId(), name: reply.toolUse.name, input: {} } },
          ],
          [
            "content_block_delta",
            { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(reply.toolUse.input) } },
          ],
        ];
  return [
    start,
    ...block,
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    [
      "message_delta",
      {
        type: "message_delta",
        delta: { stop_reason: "text" in reply ? "end_turn" : "tool_use", stop_sequence: null },
        usage: { output_tokens: usage.output_tokens },
      },
    ],
    ["message_stop", { type: "message_stop" }],
  ];
}
