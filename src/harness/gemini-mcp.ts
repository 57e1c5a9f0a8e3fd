import { isDeepStrictEqual } from "node:util";
import { MCP_TOOL_NAMES, theLoopMcpServer, type McpServerSpec } from "./mcp.js";

/**
 * the-loop's MCP server in Gemini CLI's `settings.json` (routing.mcp.enabled), as Gemini 0.61.0
 * reads it:
 *
 * - `mcpServers["the-loop"] = {command, args, trust: true, includeTools: [its four tools]}`.
 *   `trust` skips Gemini's confirmation for this server's tools (only in a trusted folder, which
 *   the pre-seed makes the session's); `includeTools` is Gemini's allowlist of the server's
 *   tools, so the trust covers those four and no tool the server might add. Gemini calls them
 *   `mcp_the-loop_<tool>`.
 * - `security.environmentVariableRedaction.allowed` gains THE_LOOP_SESSION_TOKEN: Gemini starts
 *   every stdio MCP server with an environment stripped of names like `*TOKEN*`, and expands a
 *   server's own `env` from that stripped copy too, so without it the server never sees the
 *   session's credential. The value stays in the environment; the file names the variable only.
 *
 * What is the-loop's: an entry equal to the one written here. An entry under the same name
 * that differs is the operator's, and stays as it is (refused: the caller reports it); with
 * routing.mcp.enabled false the-loop's own entry, and its variable in the allowlist, are removed.
 */

/** The session's credential variable (sessions/credential.ts, a layer above, names it the same). */
export const SESSION_TOKEN_ENV = "THE_LOOP_SESSION_TOKEN";

export type GeminiMcpMerge =
  | { readonly changed: false }
  | { readonly changed: true; readonly config: Record<string, unknown>; readonly set: readonly string[] }
  | { readonly refused: string };

/** The entry the-loop writes for its server. */
export function geminiMcpEntry(server: McpServerSpec = theLoopMcpServer()): Record<string, unknown> {
  return { command: server.command, args: [...server.args], trust: true, includeTools: [...MCP_TOOL_NAMES] };
}

/** Gemini's names for the server's tools: `mcp_<server>_<tool>`. */
export function geminiMcpToolNames(server: McpServerSpec = theLoopMcpServer()): string[] {
  return MCP_TOOL_NAMES.map((tool) => `mcp_${server.name}_${tool}`);
}

/** What to set by hand when the file cannot be rewritten. */
export function geminiMcpWanted(server: McpServerSpec = theLoopMcpServer()): string[] {
  return [
    `mcpServers.${server.name}: ${JSON.stringify(geminiMcpEntry(server))}`,
    `security.environmentVariableRedaction.allowed: [${JSON.stringify(SESSION_TOKEN_ENV)}, …]`,
  ];
}

/** Registers (enabled) or unregisters the-loop's server in a parsed settings file. Pure. */
export function mergeGeminiMcp(config: Record<string, unknown>, enabled: boolean, server: McpServerSpec = theLoopMcpServer()): GeminiMcpMerge {
  const result: Record<string, unknown> = structuredClone(config);
  const entry = geminiMcpEntry(server);
  const servers = result.mcpServers;
  if (servers !== undefined && !isPlainObject(servers)) return { refused: `mcpServers holds ${JSON.stringify(servers)}, not an object` };
  const current = servers?.[server.name];
  const ours = current !== undefined && isDeepStrictEqual(current, entry);
  const set: string[] = [];

  if (!enabled) {
    if (ours && servers !== undefined) {
      delete servers[server.name];
      set.push(`removed mcpServers.${server.name}`);
    }
    const allowed = allowList(result);
    if (Array.isArray(allowed) && allowed.includes(SESSION_TOKEN_ENV)) {
      redaction(result).allowed = allowed.filter((name) => name !== SESSION_TOKEN_ENV);
      set.push(`removed ${SESSION_TOKEN_ENV} from security.environmentVariableRedaction.allowed`);
    }
    return set.length === 0 ? { changed: false } : { changed: true, config: result, set };
  }

  if (current !== undefined && !ours) {
    return {
      refused: `its mcpServers.${server.name} is ${JSON.stringify(current)}, not the-loop's own ${JSON.stringify(entry)}; an entry under that name is the operator's, which the-loop does not override (rename or remove it to let the-loop register its server, or set routing.mcp.enabled: false)`,
    };
  }
  const security = result.security;
  if (security !== undefined && !isPlainObject(security)) return { refused: `security holds ${JSON.stringify(security)}, not an object` };
  const holder = security?.environmentVariableRedaction;
  if (holder !== undefined && !isPlainObject(holder))
    return { refused: `security.environmentVariableRedaction holds ${JSON.stringify(holder)}, not an object` };
  const allowed = allowList(result);
  if (allowed !== undefined && !(Array.isArray(allowed) && allowed.every((name) => typeof name === "string"))) {
    return { refused: `security.environmentVariableRedaction.allowed holds ${JSON.stringify(allowed)}, not a list of names` };
  }
  if (current === undefined) {
    result.mcpServers = { ...(servers ?? {}), [server.name]: entry };
    set.push(`mcpServers.${server.name}`);
  }
  if (!(allowed ?? []).includes(SESSION_TOKEN_ENV)) {
    redaction(result).allowed = [...(allowed ?? []), SESSION_TOKEN_ENV];
    set.push(`security.environmentVariableRedaction.allowed += ${SESSION_TOKEN_ENV}`);
  }
  return set.length === 0 ? { changed: false } : { changed: true, config: result, set };
}

function allowList(config: Record<string, unknown>): unknown {
  const security = config.security;
  if (!isPlainObject(security)) return undefined;
  const holder = security.environmentVariableRedaction;
  return isPlainObject(holder) ? holder.allowed : undefined;
}

/** `security.environmentVariableRedaction`, made where missing (the caller checked the shapes). */
function redaction(config: Record<string, unknown>): Record<string, unknown> {
  const security = (config.security ??= {}) as Record<string, unknown>;
  return (security.environmentVariableRedaction ??= {}) as Record<string, unknown>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
