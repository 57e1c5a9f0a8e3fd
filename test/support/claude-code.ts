import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensureClaudeCode } from "../../scripts/install-claude-code.js";
import { tempDir } from "./temp.js";

export { CLAUDE_CODE_VERSION, ensureClaudeCode } from "../../scripts/install-claude-code.js";

/** A made-up key: the model stub never checks it, and Claude Code only needs one it was told to use. */
export const FAKE_API_KEY = "sk-ant-api03-the-loop-test-key-0123456789abcdefghij";

/**
 * A scratch home as an operator's would be after their first Claude Code run: onboarding done, a
 * theme picked, the API key approved (by its last 20 characters, as Claude Code records it) —
 * and no folder ever trusted. `extra` is merged in to stand for the operator's own settings.
 */
export async function claudeHome(extra: Record<string, unknown> = {}): Promise<string> {
  const home = await tempDir("the-loop-claude-home-");
  const config = {
    hasCompletedOnboarding: true,
    theme: "dark",
    customApiKeyResponses: { approved: [FAKE_API_KEY.slice(-20)], rejected: [] },
    ...extra,
  };
  await writeFile(join(home, ".claude.json"), `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return home;
}

export async function readClaudeConfig(home: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(home, ".claude.json"), "utf8")) as Record<string, unknown>;
}

/** What a session needs to run the real CLI offline against the model stub at `modelUrl`. */
export function claudeEnv(home: string, modelUrl: string): Record<string, string> {
  return {
    HOME: home,
    ANTHROPIC_API_KEY: FAKE_API_KEY,
    ANTHROPIC_BASE_URL: modelUrl,
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    TERM: "xterm-256color",
  };
}

/** Runs the real CLI once, non-interactively, with `argv` after the binary and nothing on stdin. */
export function runClaude(
  binary: string,
  argv: readonly string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, [...argv], { cwd, env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The binary, installed into the cache first when missing (the install takes seconds). */
export function claudeBinary(): Promise<string> {
  return ensureClaudeCode();
}
