export { HarnessConfigError, harnessAdapter, isResumableSessionId, newHarnessSessionId, type HarnessAdapter, type HarnessLaunchInput } from "./adapters.js";
export {
  ProgramNotFoundError,
  RunnerError,
  SessionMissingError,
  TargetLiveError,
  type PaneExit,
  type PaneView,
  type PasteOptions,
  type PaneState,
  type SessionRunner,
  type SpawnRequest,
  type TerminateOptions,
  type TerminateResult,
  type SubmitState,
  submitState,
} from "./runner.js";
export { TmuxRunner, type TmuxRunnerOptions } from "./tmux.js";
export { findExecutable } from "./preflight.js";
export { pasteText } from "./paste-text.js";
export { MCP_SERVER_NAME, MCP_TOOL_NAMES, claudeMcpArgs, claudeMcpToolNames, theLoopMcpServer, type McpServerSpec, type McpToolName } from "./mcp.js";

// Named here so the layering rule lets other folders import these modules directly (lazily, on their own).
export { claudeConfigFile, ensureClaudeTrust, trustScope } from "./claude-trust.js";
export { codexConfigFile, codexTrustDirs, ensureCodexTrust } from "./codex-config.js";
export { ensureGeminiConfig, geminiSettingsFile, geminiTrustedFoldersFile } from "./gemini-config.js";
export type { GeminiFileOutcome } from "./gemini-config.js";
export { SCREEN_TAIL_LINES, screenTail } from "./screen.js";
export { harnessPreparer } from "./preparer.js";
export type { HarnessPreparation, HarnessPreparer, HarnessPreparerOptions } from "./preparer.js";
