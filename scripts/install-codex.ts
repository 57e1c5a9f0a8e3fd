/**
 * Installs the pinned Codex CLI (~404 MB with its native binary) into the agent CLIs' cache
 * (scripts/pinned-cli.ts), for the tests that drive the real agent.
 *
 *   npx tsx scripts/install-codex.ts     # prints the path of the `codex` binary
 */
import { ensurePinnedCli, installWhenRun } from "./pinned-cli.js";

/** The version the harness contract is checked against; bump it deliberately, then run the real-agent test. */
export const CODEX_VERSION = "0.169.0";

export function ensureCodex(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return ensurePinnedCli({ package: "@openai/codex", version: CODEX_VERSION, bin: "codex", folder: "codex", timeoutMs: 600_000 }, env);
}

installWhenRun(import.meta.url, ensureCodex);
