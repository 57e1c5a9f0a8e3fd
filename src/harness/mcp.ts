/**
 * the-loop's own MCP server as an agent CLI registers it (`the-loop mcp`, src/mcp/): its name, its
 * tools, and the command that starts it. One description for every harness: Claude Code gets it
 * as `--mcp-config` (claudeMcpArgs), Codex as `-c mcp_servers.…` overrides (codexMcpArgs), and
 * another CLI's adapter writes the same server into the file that CLI reads its servers from.
 *
 * The command is the session's own `the-loop` — the link on the session's PATH to the very
 * installation that started it (sessions/session-env.ts) — and the server inherits the session's
 * environment from the CLI that starts it: its credential (THE_LOOP_SESSION_TOKEN) travels in the
 * environment only, never in an argv or a config file another process could read.
 */

/** The name the server is registered under: each CLI prefixes its tools with it (`mcp__the-loop__ask`). */
export const MCP_SERVER_NAME = "the-loop";

/** The tools `the-loop mcp` serves, and nothing else: what a harness pre-approves. */
export const MCP_TOOL_NAMES = ["ask", "graph_complete", "graph_status", "why"] as const;
export type McpToolName = (typeof MCP_TOOL_NAMES)[number];

/** How a CLI starts the server: a stdio server, no arguments from any ticket. */
export interface McpServerSpec {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
}

/** the-loop's MCP server as every harness registers it. */
export function theLoopMcpServer(command = "the-loop"): McpServerSpec {
  return { name: MCP_SERVER_NAME, command, args: ["mcp"] };
}

/** Claude Code's names for the server's tools: `mcp__<server>__<tool>`. */
export function claudeMcpToolNames(server: McpServerSpec = theLoopMcpServer()): string[] {
  return MCP_TOOL_NAMES.map((tool) => `mcp__${server.name}__${tool}`);
}

/**
 * Claude Code's options that register the server for one run and pre-approve its tools, and only
 * those: `--mcp-config` takes the JSON inline (no file to leave behind or to be rewritten), and
 * `--allowedTools` names each of the server's tools — never a wildcard, never another tool. Both
 * options are variadic, so the caller puts them before the `--` that ends the options.
 */
export function claudeMcpArgs(server: McpServerSpec = theLoopMcpServer()): string[] {
  const config = { mcpServers: { [server.name]: { type: "stdio", command: server.command, args: [...server.args] } } };
  return ["--mcp-config", JSON.stringify(config), "--allowedTools", claudeMcpToolNames(server).join(",")];
}
