/**
 * Installs the pinned Claude Code CLI (~235 MB with its native binary) into the agent CLIs' cache
 * (scripts/pinned-cli.ts), for the tests and benchmarks that drive the real agent.
 *
 *   npx tsx scripts/install-claude-code.ts     # prints the path of the `claude` binary
 */
import { agentCliCacheDir, ensurePinnedCli, installWhenRun } from "./pinned-cli.js";

/** The version the harness contract is checked against; bump it deliberately, then run the real-agent test. */
export const CLAUDE_CODE_VERSION = "2.1.197";

/** The cache folder of every pinned agent CLI (THE_LOOP_CLAUDE_CODE_CACHE, or `${XDG_CACHE_HOME:-~/.cache}/the-loop`). */
export const claudeCodeCacheDir = agentCliCacheDir;

export function ensureClaudeCode(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return ensurePinnedCli({ package: "@anthropic-ai/claude-code", version: CLAUDE_CODE_VERSION, bin: "claude", folder: "claude-code" }, env);
}

installWhenRun(import.meta.url, ensureClaudeCode);
