import { routingSchema } from "../schema.js";

/**
 * `upgrade-config` and the-loop's MCP server: each agent is now started with `the-loop mcp`
 * registered and its four tools pre-approved (`routing.mcp.enabled`, docs/agents.md), so the key
 * is made visible with its default — and reported as a decision, as requireStartCommand is: it is
 * a permission the-loop gives the agent.
 */

export function mcpDefaults(): { readonly enabled: boolean } {
  return { enabled: routingSchema.parse({}).mcp.enabled };
}

export const MCP_COMMENT =
  " the-loop's MCP server (added by `the-loop upgrade-config`): each agent is started with it\n" +
  " registered and its tools (ask, graph_complete, graph_status, why) alone pre-approved.";

export const MCP_WHY =
  "its default gives each agent one permission of the-loop's own: the-loop's MCP server is registered when a session starts and its four tools (ask, graph_complete, graph_status, why) are pre-approved, and no other tool (docs/agents.md). " +
  "Set it to false to keep agents on their shell alone.";
