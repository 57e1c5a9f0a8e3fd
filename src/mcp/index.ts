export { createMcpServer, serveMcpStdio } from "./server.js";
export { COMPLETE_TIMEOUT_DEFAULT_S, COMPLETE_TIMEOUT_MAX_S, TOOLS, ToolInputError, callTool } from "./tools.js";
export type { TheLoopCalls, ToolAnswer, ToolDefinition, ToolInputSchema } from "./tools.js";
