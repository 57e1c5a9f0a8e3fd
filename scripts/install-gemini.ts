/**
 * Installs the pinned Gemini CLI (~96 MB) into the agent CLIs' cache (scripts/pinned-cli.ts), for
 * the tests that drive the real agent.
 *
 *   npx tsx scripts/install-gemini.ts     # prints the path of the `gemini` binary
 */
import { ensurePinnedCli, installWhenRun } from "./pinned-cli.js";

/** The version the harness contract is checked against; bump it deliberately, then run the real-agent test. */
export const GEMINI_CLI_VERSION = "0.61.0";

export function ensureGeminiCli(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return ensurePinnedCli({ package: "@google/gemini-cli", version: GEMINI_CLI_VERSION, bin: "gemini", folder: "gemini-cli" }, env);
}

installWhenRun(import.meta.url, ensureGeminiCli);
