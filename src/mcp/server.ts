import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { messageOf } from "../errors.js";
import { MCP_SERVER_NAME } from "../harness/mcp.js";
import { TOOLS, callTool } from "./tools.js";
import type { TheLoopCalls } from "./tools.js";

/**
 * `the-loop mcp`: the-loop as a stdio MCP server for the agent in a session. It lists its four
 * tools and answers each call through `calls`; a call that fails — a refusal by the daemon, no
 * daemon, a bad argument — is answered as a tool error (`isError`) whose text says what to do,
 * never as a protocol error, so the agent reads it as it reads any tool's output.
 */

export function createMcpServer(calls: TheLoopCalls, version: string): Server {
  const server = new Server(
    { name: MCP_SERVER_NAME, title: "the-loop", version },
    {
      capabilities: { tools: {} },
      instructions:
        "the-loop started this session for one work item. Ask its people a question with `ask` (then stop and wait for the answer), claim your graph node done with `graph_complete`, and read where the item stands with `graph_status` and `why`. Every tool acts for this session's own work item.",
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((tool) => ({ name: tool.name, title: tool.title, description: tool.description, inputSchema: structuredClone(tool.inputSchema) })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    try {
      const answer = await callTool(calls, request.params.name, request.params.arguments);
      return { content: [{ type: "text", text: answer.text }], ...(answer.isError === true ? { isError: true } : {}) };
    } catch (error) {
      return { content: [{ type: "text", text: messageOf(error) }], isError: true };
    }
  });
  return server;
}

/** Serves `calls` on this process's stdin and stdout until the client closes stdin. */
export async function serveMcpStdio(calls: TheLoopCalls, version: string): Promise<void> {
  const server = createMcpServer(calls, version);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    // The transport does not watch for the end of its input: the client going away ends the server.
    process.stdin.once("end", () => void server.close());
    process.stdin.once("close", () => void server.close());
  });
  await server.connect(transport);
  await closed;
}
